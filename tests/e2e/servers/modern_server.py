#!/usr/bin/env python3
"""An MCP server that speaks only the stateless revision, 2026-07-28 (stdlib only).

    modern_server.py [--name NAME] [--log F]                  # stdio
    modern_server.py --http PORT_FILE [--name NAME] [--log F]  # Streamable HTTP, no sessions

It has no `initialize`: over stdio it answers it -32022 (UnsupportedProtocolVersion), over
HTTP 404 with -32601 (an unknown method). `server/discover` says what it is. Every other
request must carry `_meta` `io.modelcontextprotocol/protocolVersion` = 2026-07-28 (else
-32022), and over HTTP the `MCP-Protocol-Version` and `Mcp-Method` headers agree with the
body (else 400, -32020). Results carry `resultType`.

Tools: echo {text} ("NAME: text"); confirm (asks for input: an `input_required` result with
an elicitation request and a request state; the retry with `inputResponses` and that state
completes with the answer). Each request is logged to F as {"method", "meta"}.
"""

import argparse
import json
import pathlib
import sys
from http import server as http_server

MODERN = "2026-07-28"
VERSION_META = "io.modelcontextprotocol/protocolVersion"
STATE = "modern-state-1"


class Server:
    def __init__(self, name: str, log: str | None):
        self.name, self.log = name, log

    def record(self, method: str, meta: dict) -> None:
        if self.log:
            with open(self.log, "a") as f:
                f.write(json.dumps({"method": method, "meta": meta}) + "\n")

    def answer(self, message: dict) -> dict:
        """The response to one request."""
        method, rid, params = message.get("method"), message.get("id"), message.get("params") or {}
        meta = params.get("_meta") or {}
        self.record(method, meta)

        def error(code: int, text: str) -> dict:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": text}}

        def result(value: dict) -> dict:
            return {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", **value,
                                                             "_meta": {"io.modelcontextprotocol/serverInfo":
                                                                       {"name": self.name, "version": "1"}}}}

        if method == "initialize":
            return error(-32022, f"Unsupported protocol version: {self.name} speaks {MODERN} only")
        if method == "server/discover":
            return result({"supportedVersions": [MODERN], "capabilities": {"tools": {}},
                           "serverInfo": {"name": self.name, "version": "1"}, "instructions": f"{self.name} is modern"})
        if meta.get(VERSION_META) != MODERN:
            return error(-32022, f"{method} carries no {VERSION_META} {MODERN}")
        if method == "tools/list":
            return result({"ttlMs": 0, "cacheScope": "public", "tools": [
                {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
                {"name": "confirm", "inputSchema": {"type": "object"}},
            ]})
        if method == "tools/call" and params.get("name") == "echo":
            text = (params.get("arguments") or {}).get("text", "")
            return result({"content": [{"type": "text", "text": f"{self.name}: {text}"}]})
        if method == "tools/call" and params.get("name") == "confirm":
            if params.get("requestState") == STATE:
                answer = (params.get("inputResponses") or {}).get("sure")
                return result({"content": [{"type": "text", "text": f"confirmed with {json.dumps(answer, sort_keys=True)}"}]})
            return {"jsonrpc": "2.0", "id": rid, "result": {
                "resultType": "input_required", "requestState": STATE,
                "inputRequests": {"sure": {"method": "elicitation/create", "params": {
                    "message": "sure?", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}}}}
        if method == "ping":
            return result({})
        return error(-32601, f"Method not found: {method}")


def serve_stdio(server: Server) -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and "method" in message and "id" in message:
            sys.stdout.write(json.dumps(server.answer(message)) + "\n")
            sys.stdout.flush()


def serve_http(server: Server, port_file: str) -> None:
    class Handler(http_server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, status: int, body: dict | None) -> None:
            data = json.dumps(body).encode() if body is not None else b""
            self.send_response(status)
            if body is not None:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self.reply(405, None)

        def do_POST(self):
            message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            if "id" not in message:
                return self.reply(202, None)
            method = message.get("method")
            if method == "initialize":
                server.record(method, {})
                return self.reply(404, {"jsonrpc": "2.0", "id": message.get("id"),
                                        "error": {"code": -32601, "message": "Method not found: initialize"}})
            version = ((message.get("params") or {}).get("_meta") or {}).get(VERSION_META)
            if self.headers.get("MCP-Protocol-Version") != version or self.headers.get("Mcp-Method") != method:
                return self.reply(400, {"jsonrpc": "2.0", "id": message.get("id"),
                                        "error": {"code": -32020, "message": "headers disagree with the body"}})
            self.reply(200, server.answer(message))

    httpd = http_server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    pathlib.Path(port_file).write_text(str(httpd.server_address[1]))
    httpd.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="modern")
    parser.add_argument("--log")
    parser.add_argument("--http", metavar="PORT_FILE")
    options = parser.parse_args()
    server = Server(options.name, options.log)
    if options.http:
        serve_http(server, options.http)
    else:
        serve_stdio(server)


if __name__ == "__main__":
    main()
