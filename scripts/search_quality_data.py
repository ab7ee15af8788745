"""Turns BFCL v4 tasks into a tool-retrieval set: tools.json (MCP tool objects, one
catalog) and queries.jsonl ({task, query, relevant: [tool names]}).

A query is the user's first turn; the relevant tools are the functions its ground truth
calls. A function name listed by several questions with different descriptions keeps
its first description (the count is printed)."""
import json
import pathlib
import sys

TASKS = ["simple_python", "multiple", "parallel_multiple", "live_simple", "live_multiple"]

data, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
tools, queries, conflicts = {}, [], set()
for task in TASKS:
    answers = {}
    for line in (data / "possible_answer" / f"BFCL_v4_{task}.json").read_text().splitlines():
        entry = json.loads(line)
        answers[entry["id"]] = sorted({name for call in entry["ground_truth"] for name in call})
    for line in (data / f"BFCL_v4_{task}.json").read_text().splitlines():
        entry = json.loads(line)
        for function in entry["function"]:
            schema = dict(function.get("parameters") or {})
            schema["type"] = "object"
            tool = {"name": function["name"], "description": function.get("description", ""), "inputSchema": schema}
            if function["name"] in tools and tools[function["name"]]["description"] != tool["description"]:
                conflicts.add(function["name"])
            tools.setdefault(function["name"], tool)
        turn = entry["question"][0]
        query = " ".join(m["content"] for m in turn if m["role"] == "user")
        queries.append({"task": task, "query": query, "relevant": answers[entry["id"]]})
(out / "tools.json").write_text(json.dumps(list(tools.values())))
with open(out / "queries.jsonl", "w") as f:
    for q in queries:
        f.write(json.dumps(q) + "\n")
print(f"BFCL v4: {len(tools)} tools, {len(queries)} queries, {len(conflicts)} names with a second description",
      file=sys.stderr)
