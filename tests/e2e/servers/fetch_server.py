"""A stdio MCP server with one tool, `fetch {url}`: the body of an HTTP GET, or, when
the system refuses the connection, the error the system gave (as an error result).
Standard library only, so that it runs in a sandbox whose network is what is tested."""

import json
import sys
import urllib.request

TOOL = {"name": "fetch", "description": "GET a URL and return its body",
        "inputSchema": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}}


def fetch(url: str) -> dict:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return {"content": [{"type": "text", "text": response.read().decode()}]}
    except OSError as error:
        return {"content": [{"type": "text", "text": f"{type(error).__name__}: {error}"}], "isError": True}


def answer(method: str, params: dict) -> dict:
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                "serverInfo": {"name": "fetch", "version": "1.0.0"}}
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        return fetch(params["arguments"]["url"])
    return {}


for line in sys.stdin:
    if not line.strip():
        continue
    message = json.loads(line)
    if "id" in message and "method" in message:
        result = answer(message["method"], message.get("params") or {})
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
        sys.stdout.flush()
