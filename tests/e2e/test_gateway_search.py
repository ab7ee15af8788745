"""`search_tools` through `clawai gateway`, sized for a model's context: on the real
claude-flow (353 tools) and Claude Code set, a 5-hit result is under 2 KB (each hit's name,
server, whether it is listed, the skills that show it, its description cut to a sentence
or two; `structuredContent` the same without the description); a search made while
servers start says which, and the session is told (`tools/list_changed`) when the last
is up; bad arguments get -32602."""

import json
import time

import pytest

from conftest import ROOT
from gateway_support import RawGateway, gateway_args, gateway_missing, has_all, scripted, write_config

PEERS = ROOT / "tests" / "peers" / "node_modules" / ".bin"
CLAUDE, CLAUDE_FLOW = PEERS / "claude", PEERS / "claude-flow"

_MISSING = gateway_missing()
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")

CODE_ASSIST = """---
name: code-assist
description: Code editing via Claude Code tools
allowed-tools:
  - claude-code__Read
  - claude-code__Edit
  - claude-code__Bash
---

Use Claude Code's tools for: {{task}}
"""

FLOW = """---
name: flow
description: Agents, swarms, memory and tasks via claude-flow
allowed-tools:
  - claude-flow__*
---

Use claude-flow's tools.
"""


def search(gw: RawGateway, rid: str, arguments: dict) -> tuple[bytes, dict]:
    """The raw line of the answer, and the answer."""
    gw.send({"id": rid, "method": "tools/call", "params": {"name": "search_tools", "arguments": arguments}})
    line = gw.read_response(rid, timeout=30)
    return line, json.loads(line)


def wait_until_searched_whole(gw: RawGateway, query: str, timeout: float = 90) -> tuple[bytes, dict]:
    deadline = time.monotonic() + timeout
    n = 0
    while True:
        n += 1
        line, answer = search(gw, f"wait-{n}", {"query": query})
        if "starting" not in answer["result"]["structuredContent"]:
            return line, answer
        assert time.monotonic() < deadline, f"servers still starting after {timeout} s: {answer}"
        time.sleep(0.5)


def assert_fits(line: bytes, answer: dict) -> None:
    """Five hits, each a line of its name, server and a sentence or two, under 2 KB in all."""
    result = answer["result"]
    hits = result["structuredContent"]["results"]
    assert len(hits) == 5, hits
    assert len(line) < 2048, f"{len(line)} bytes: {line.decode()}"
    lines = result["content"][0]["text"].splitlines()
    assert len(lines) == 5, lines
    for hit, text in zip(hits, lines):
        assert text.startswith(f"{hit['name']} ({hit['server']}"), (hit, text)
        assert len(text) < 300, text
    # The full description is the tool list's: the structured results do not repeat it.
    assert all("description" not in hit for hit in hits), hits


@pytest.mark.skipif(not (CLAUDE.exists() and CLAUDE_FLOW.exists()),
                    reason="Claude Code and claude-flow are not installed (scripts/setup-test-peers)")
def test_five_hits_on_claude_flow_and_claude_code_fit_in_2_kb(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    skill = tmp_path / "skills" / "code-assist"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(CODE_ASSIST)
    (tmp_path / "skills" / "flow").mkdir()
    (tmp_path / "skills" / "flow" / "SKILL.md").write_text(FLOW)
    env = {"HOME": str(home)}
    config = write_config(tmp_path / "gateway.json", {
        "claude-code": {"command": str(CLAUDE), "args": ["mcp", "serve"], "env": env},
        "claude-flow": {"command": str(CLAUDE_FLOW), "args": ["mcp", "start"], "env": env},
    })
    gw = RawGateway(tmp_path, [*gateway_args(tmp_path, config), "--skills", str(tmp_path / "skills")])
    try:
        gw.initialize()
        line, answer = wait_until_searched_whole(gw, "run a shell command")
        assert_fits(line, answer)
        # Claude Code's Bash, whose own description runs to 10,000 characters.
        line, answer = search(gw, "bash", {"query": "bash"})
        assert_fits(line, answer)
        hits = answer["result"]["structuredContent"]["results"]
        bash = next(h for h in hits if h["name"] == "claude-code__Bash")
        assert bash == {"name": "claude-code__Bash", "server": "claude-code", "visible": False,
                        "skills": ["skill__code-assist"], "score": bash["score"]}
        text = answer["result"]["content"][0]["text"]
        bash_line = next(line for line in text.splitlines() if line.startswith("claude-code__Bash "))
        assert bash_line.startswith("claude-code__Bash (claude-code; not listed now: activate skill__code-assist"
                                    " to use it): "), bash_line
    finally:
        gw.kill()


def test_a_search_while_servers_start_names_them_and_the_session_is_told_when_they_are_up(tmp_path):
    config = write_config(tmp_path / "gateway.json", {
        "fast": scripted("fast"),
        "slow": scripted("slow", "--slow-start", 4, internal_only=True),
    })
    skill = tmp_path / "skills" / "slow-tools"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: slow-tools\ndescription: The slow server\nallowed-tools:\n"
                                     "  - slow__*\n---\n\nUse the slow server.\n")
    gw = RawGateway(tmp_path, [*gateway_args(tmp_path, config), "--skills", str(tmp_path / "skills")])
    try:
        gw.initialize()
        gw.wait_listed(has_all("fast__echo"), timeout=10)
        _, answer = search(gw, "early", {"query": "echo the text"})
        result = answer["result"]
        assert result["structuredContent"]["starting"] == ["slow"], result
        assert "still starting: slow" in result["content"][0]["text"]
        assert not [h for h in result["structuredContent"]["results"] if h["server"] == "slow"]
        # `slow` is internal: its coming up changes nothing this session lists, yet the
        # session is told, so that it searches again.
        gw.others.clear()
        deadline = time.monotonic() + 30
        while not any(m.get("method") == "notifications/tools/list_changed" for m in gw.others):
            assert time.monotonic() < deadline, "no tools/list_changed once the last server was up"
            gw.request(f"ping-{time.monotonic_ns()}", "ping")
            time.sleep(0.1)
        _, answer = search(gw, "late", {"query": "echo the text"})
        result = answer["result"]
        assert "starting" not in result["structuredContent"], result
        assert "slow__echo" in [h["name"] for h in result["structuredContent"]["results"]]
    finally:
        gw.kill()


@pytest.mark.parametrize("arguments", [{}, {"query": ""}, {"query": 7}, {"query": "echo", "limit": 0},
                                       {"query": "echo", "limit": 21}, {"query": "echo", "limit": "5"}])
def test_bad_arguments_get_invalid_params(tmp_path, arguments):
    config = write_config(tmp_path / "gateway.json", {"fast": scripted("fast")})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.initialize()
        _, answer = search(gw, "bad", arguments)
        assert answer.get("error", {}).get("code") == -32602, answer
        assert "query" in answer["error"]["message"], answer
    finally:
        gw.kill()
