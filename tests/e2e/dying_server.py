"""A stdio MCP server that exits when its `exit` tool is called (for restart tests)."""
import json
import sys

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "dying", "version": "1"}}
    elif message["method"] == "tools/call" and message["params"]["name"] == "exit":
        sys.exit(3)
    else:
        result = {"content": [{"type": "text", "text": "alive"}]}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
