#!/usr/bin/env python3
"""A Streamable HTTP MCP server whose sessions expire on cue (stdlib only).

    expiring_http_server.py --port-file F --variant 404|400 --log L

Listens on 127.0.0.1 (a free port, written to F). `initialize` opens a session
(`Mcp-Session-Id`); any other request must carry a live one. An unknown or missing
session is answered as common SDKs do: `--variant 404` as the specification says (404,
"Session not found"), `--variant 400` as the TypeScript SDK's examples do (400, "Bad
Request: No valid session ID provided"). GET answers 405 (no stream), DELETE 200.

Tools: echo {text}; expire {forever?}: after answering, every session is forgotten (as a
server that restarted); with forever, every session it opens later is forgotten at once,
so the client can never use one. Each request is logged to L as one JSON line
{"method", "session", "accepted", "text"?}.
"""

import argparse
import json
import pathlib
import threading
import uuid
from http import server as http_server

TOOLS = [
    {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "expire", "inputSchema": {"type": "object", "properties": {"forever": {"type": "boolean"}}}},
]


class State:
    def __init__(self, variant: str, log: pathlib.Path):
        self.variant = variant
        self.log_path = log
        self.lock = threading.Lock()
        self.sessions: set[str] = set()
        self.forever = False

    def log(self, entry: dict) -> None:
        with self.lock, open(self.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")


def handler(state: State):
    class Handler(http_server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, status: int, body: dict | None, headers: dict | None = None) -> None:
            data = json.dumps(body).encode() if body is not None else b""
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if body is not None:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.reply(405, None)

        def do_DELETE(self):
            self.reply(200, None)

        def refuse_session(self) -> None:
            if state.variant == "404":
                self.reply(404, {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "Session not found"}})
            else:
                self.reply(400, {"jsonrpc": "2.0", "id": None,
                                 "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}})

        def do_POST(self):
            message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            method, rid, params = message.get("method"), message.get("id"), message.get("params") or {}
            session = self.headers.get("Mcp-Session-Id")
            if method == "initialize":
                session = uuid.uuid4().hex
                with state.lock:
                    if not state.forever:
                        state.sessions.add(session)
                state.log({"method": method, "session": session, "accepted": True})
                return self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": {
                    "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                    "capabilities": {"tools": {}}, "serverInfo": {"name": "expiring", "version": "1"}}},
                    {"Mcp-Session-Id": session})
            with state.lock:
                live = session in state.sessions
            entry = {"method": method, "session": session, "accepted": live}
            if method == "tools/call":
                entry["text"] = (params.get("arguments") or {}).get("text")
            state.log(entry)
            if not live:
                return self.refuse_session()
            if rid is None:
                return self.reply(202, None)
            if method == "tools/list":
                return self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
            if method == "tools/call" and params.get("name") == "echo":
                text = (params.get("arguments") or {}).get("text", "")
                return self.reply(200, {"jsonrpc": "2.0", "id": rid,
                                        "result": {"content": [{"type": "text", "text": f"echo: {text}"}]}})
            if method == "tools/call" and params.get("name") == "expire":
                self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "expired"}]}})
                with state.lock:
                    state.sessions.clear()
                    state.forever = bool((params.get("arguments") or {}).get("forever"))
                return None
            if method == "ping":
                return self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": {}})
            return self.reply(200, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--variant", choices=["404", "400"], default="404")
    parser.add_argument("--log", required=True)
    options = parser.parse_args()
    httpd = http_server.ThreadingHTTPServer(("127.0.0.1", 0), handler(State(options.variant, pathlib.Path(options.log))))
    pathlib.Path(options.port_file).write_text(str(httpd.server_address[1]))
    httpd.serve_forever()


if __name__ == "__main__":
    main()
