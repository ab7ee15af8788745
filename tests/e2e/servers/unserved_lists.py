#!/usr/bin/env python3
"""A stdio MCP server (stdlib only) that declares tools, prompts and resources but serves
only tools: prompts/list and resources/list get Method not found, as some real servers
answer. It exits after its first tools/call, so that a gateway starts it again."""
import json
import sys

for raw in sys.stdin:
    message = json.loads(raw)
    if "id" not in message:
        continue
    method = message.get("method")
    if method == "initialize":
        result = {"protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
                  "serverInfo": {"name": "unserved", "version": "1"}}
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    elif method == "tools/list":
        tool = {"name": "ping_me", "description": "Answers pong.", "inputSchema": {"type": "object"}}
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": [tool]}}
    elif method == "tools/call":
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"content": [{"type": "text", "text": "pong"}]}}
        print(json.dumps(reply), flush=True)
        sys.exit(0)
    else:
        reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}}
    print(json.dumps(reply), flush=True)
