#!/usr/bin/env python3
"""An MCP server that speaks only the stateless revision, 2026-07-28 (stdlib only).

    modern_server.py [--name NAME] [--log F]                  # stdio
    modern_server.py --http PORT_FILE [--name NAME] [--log F] [--cancel-by-close]  # Streamable HTTP, no sessions

It has no `initialize`: over stdio it answers it -32022 (UnsupportedProtocolVersion), over
HTTP 404 with -32601 (an unknown method). `server/discover` says what it is. Every other
request must carry `_meta` `io.modelcontextprotocol/protocolVersion` = 2026-07-28 (else
-32022), and over HTTP the `MCP-Protocol-Version` and `Mcp-Method` headers agree with the
body (else 400, -32020). Results carry `resultType`.

Tools: echo {text} ("NAME: text"); confirm (asks for input: an `input_required` result with
an elicitation request and a request state; the retry with `inputResponses` and that state
completes with the answer); add_tool {name} (adds a tool NAME that echoes, and tells every
subscription that asked for `toolsListChanged`); touch {uri} (tells the subscriptions to the
resource, `mem://doc`, the one resource it has); long (with the tasks extension declared in
the request's capabilities: a task `tN`, which `tasks/get` shows `input_required` with an
elicitation request until `tasks/update` answers it, then `completed` with the answer, told
as `notifications/tasks` to the subscriptions that follow it; `tasks/cancel` cancels it;
without the extension: an error result).

`subscriptions/listen` is served as the revision says: the acknowledgment (of the list
changes asked for), then the notifications, each with the subscription's id in `_meta`;
over stdio until `notifications/cancelled` names it, over HTTP on the POST's event stream
until the client closes it or cancels it (with --cancel-by-close: until it closes it; a
cancellation POSTed is ignored, as the revision allows). The end of a stream is logged as
{"method": "subscription ended", "params": {"id"}}. Each request is logged to F as {"method", "meta", "params"}.
"""

import argparse
import itertools
import json
import pathlib
import queue
import sys
import threading
from http import server as http_server

MODERN = "2026-07-28"
VERSION_META = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
SUBSCRIPTION_META = "io.modelcontextprotocol/subscriptionId"
TASKS = "io.modelcontextprotocol/tasks"
STATE = "modern-state-1"
LIST_CHANGES = ("toolsListChanged", "resourcesListChanged")
RESOURCES = ("mem://doc",)


class Server:
    def __init__(self, name: str, log: str | None):
        self.name, self.log = name, log
        self.lock = threading.Lock()
        self.added: list[str] = []  # tools add_tool added
        self.subscriptions: dict[str, tuple] = {}  # json id -> (id, filter, send(message))
        self.tasks: dict[str, dict] = {}
        self.task_numbers = itertools.count(1)
        self.cancel_by_close = False

    def record(self, method: str, meta: dict, params: dict | None = None) -> None:
        if self.log:
            with self.lock, open(self.log, "a") as f:
                f.write(json.dumps({"method": method, "meta": meta,
                                    "params": {k: v for k, v in (params or {}).items() if k != "_meta"}}) + "\n")

    def listen(self, rid, params: dict, send) -> None:
        """Opens a subscription: acknowledged with what this server tells of what was asked
        (list changes, its resources, its tasks)."""
        asked = params.get("notifications") or {}
        honored = {key: True for key in LIST_CHANGES if asked.get(key) is True}
        uris = [uri for uri in asked.get("resourceSubscriptions") or [] if uri in RESOURCES]
        tasks = [task for task in asked.get("taskIds") or [] if task in self.tasks]
        if uris:
            honored["resourceSubscriptions"] = uris
        if tasks:
            honored["taskIds"] = tasks
        with self.lock:
            self.subscriptions[json.dumps(rid)] = (rid, honored, send)
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"_meta": {SUBSCRIPTION_META: rid}, "notifications": honored}})

    def unlisten(self, rid) -> None:
        with self.lock:
            self.subscriptions.pop(json.dumps(rid), None)

    def listening(self, rid) -> bool:
        with self.lock:
            return json.dumps(rid) in self.subscriptions

    def tell(self, wants, method: str, params: dict | None = None) -> None:
        """Tells each subscription whose acknowledged filter `wants` it."""
        with self.lock:
            told = [(rid, send) for rid, honored, send in self.subscriptions.values() if wants(honored)]
        for rid, send in told:
            send({"jsonrpc": "2.0", "method": method, "params": {**(params or {}), "_meta": {SUBSCRIPTION_META: rid}}})

    def task_state(self, task_id: str) -> dict:
        task = self.tasks[task_id]
        state = {"taskId": task_id, "status": task["status"], "createdAt": "2026-11-28T00:00:00Z",
                 "lastUpdatedAt": "2026-11-28T00:00:00Z", "ttlMs": 60000, "pollIntervalMs": 50}
        if task["status"] == "input_required":
            state["inputRequests"] = {"go": {"method": "elicitation/create", "params": {
                "message": "go on?", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}}
        if task["status"] == "completed":
            state["result"] = {"content": [{"type": "text",
                                            "text": f"{self.name}: long done with {json.dumps(task['answer'], sort_keys=True)}"}]}
        return state

    def task_request(self, method: str, params: dict, result, error) -> dict:
        task_id = params.get("taskId")
        if task_id not in self.tasks:
            return error(-32602, f"no task {task_id}")
        task = self.tasks[task_id]
        if method == "tasks/get":
            return result(self.task_state(task_id))
        if method == "tasks/update":
            if task["status"] == "input_required" and "go" in (params.get("inputResponses") or {}):
                task["answer"], task["status"] = params["inputResponses"]["go"], "completed"
                self.tell(lambda honored: task_id in (honored.get("taskIds") or []), "notifications/tasks",
                          self.task_state(task_id))
            return result({})
        task["status"] = "cancelled"
        return result({})

    def answer(self, message: dict) -> dict:
        """The response to one request."""
        method, rid, params = message.get("method"), message.get("id"), message.get("params") or {}
        meta = params.get("_meta") or {}
        self.record(method, meta, params)

        def error(code: int, text: str) -> dict:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": text}}

        def result(value: dict) -> dict:
            return {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", **value,
                                                             "_meta": {"io.modelcontextprotocol/serverInfo":
                                                                       {"name": self.name, "version": "1"}}}}

        if method == "initialize":
            return error(-32022, f"Unsupported protocol version: {self.name} speaks {MODERN} only")
        if method == "server/discover":
            return result({"supportedVersions": [MODERN],
                           "capabilities": {"tools": {"listChanged": True},
                                            "resources": {"subscribe": True, "listChanged": True},
                                            "extensions": {TASKS: {}}},
                           "serverInfo": {"name": self.name, "version": "1"}, "instructions": f"{self.name} is modern"})
        if meta.get(VERSION_META) != MODERN:
            return error(-32022, f"{method} carries no {VERSION_META} {MODERN}")
        if method == "tools/list":
            return result({"ttlMs": 0, "cacheScope": "public", "tools": [
                {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
                {"name": "confirm", "inputSchema": {"type": "object"}},
                {"name": "add_tool", "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
                {"name": "long", "inputSchema": {"type": "object"}},
                {"name": "touch", "inputSchema": {"type": "object", "properties": {"uri": {"type": "string"}}}},
            ] + [{"name": name, "inputSchema": {"type": "object"}} for name in self.added]})
        if method == "tools/call" and params.get("name") == "add_tool":
            name = (params.get("arguments") or {}).get("name", "added")
            with self.lock:
                self.added.append(name)
            self.tell(lambda honored: honored.get("toolsListChanged"), "notifications/tools/list_changed")
            return result({"content": [{"type": "text", "text": f"added {name}"}]})
        if method == "resources/list":
            return result({"resources": [{"uri": uri, "name": uri} for uri in RESOURCES]})
        if method == "resources/templates/list":
            return result({"resourceTemplates": []})
        if method == "tools/call" and params.get("name") == "touch":
            uri = (params.get("arguments") or {}).get("uri", RESOURCES[0])
            self.tell(lambda honored: uri in (honored.get("resourceSubscriptions") or []),
                      "notifications/resources/updated", {"uri": uri})
            return result({"content": [{"type": "text", "text": f"touched {uri}"}]})
        if method == "tools/call" and params.get("name") in self.added:
            return result({"content": [{"type": "text", "text": f"{self.name}: {params['name']} called"}]})
        if method == "tools/call" and params.get("name") == "long":
            if TASKS not in ((meta.get(CAPABILITIES_META) or {}).get("extensions") or {}):
                return result({"isError": True, "content": [{"type": "text", "text": "long needs the tasks extension"}]})
            task_id = f"t{next(self.task_numbers)}"
            self.tasks[task_id] = {"status": "input_required"}
            return {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "task", **self.task_state(task_id)}}
        if method in ("tasks/get", "tasks/update", "tasks/cancel"):
            return self.task_request(method, params, result, error)
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
    writing = threading.Lock()

    def send(message: dict) -> None:
        with writing:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "method" not in message:
            continue
        params = message.get("params") or {}
        if message["method"] == "notifications/cancelled":
            server.unlisten(params.get("requestId"))
        elif "id" not in message:
            continue
        elif message["method"] == "subscriptions/listen" and (params.get("_meta") or {}).get(VERSION_META) == MODERN:
            server.record(message["method"], params.get("_meta") or {}, params)
            server.listen(message["id"], params, send)
        else:
            send(server.answer(message))


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
                if message.get("method") == "notifications/cancelled" and not server.cancel_by_close:
                    server.unlisten((message.get("params") or {}).get("requestId"))
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
            if method == "subscriptions/listen":
                return self.listen(message)
            self.reply(200, server.answer(message))

        def listen(self, message: dict) -> None:
            """The subscription's event stream, open until the client closes it."""
            params = message.get("params") or {}
            server.record("subscriptions/listen", params.get("_meta") or {}, params)
            self.close_connection = True
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            events: queue.Queue = queue.Queue()
            server.listen(message.get("id"), params, events.put)
            try:
                while server.listening(message.get("id")):  # until the client cancels it
                    try:
                        event = events.get(timeout=0.5)
                    except queue.Empty:
                        self.wfile.write(b": keep-alive\n\n")  # finds a closed connection
                    else:
                        self.wfile.write(b"event: message\ndata: " + json.dumps(event).encode() + b"\n\n")
                    self.wfile.flush()
            except OSError:
                pass
            finally:
                server.unlisten(message.get("id"))
                server.record("subscription ended", {}, {"id": message.get("id")})

    httpd = http_server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    pathlib.Path(port_file).write_text(str(httpd.server_address[1]))
    httpd.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="modern")
    parser.add_argument("--log")
    parser.add_argument("--http", metavar="PORT_FILE")
    parser.add_argument("--cancel-by-close", action="store_true")
    options = parser.parse_args()
    server = Server(options.name, options.log)
    server.cancel_by_close = options.cancel_by_close
    if options.http:
        serve_http(server, options.http)
    else:
        serve_stdio(server)


if __name__ == "__main__":
    main()
