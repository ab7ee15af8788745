#!/usr/bin/env python3
"""A scripted MCP server for clawai's edge-case tests (stdlib only).

Every line it receives is appended, byte for byte, to $SCRIPTED_LOG, so tests can prove
what crossed the proxy and what did not. Methods under test/ make it misbehave on cue.
"""

import json
import os
import signal
import subprocess
import sys
import time

LOG = os.environ.get("SCRIPTED_LOG")
out = sys.stdout.buffer


def send(obj):
    out.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
    out.flush()


def result(rid, value):
    send({"jsonrpc": "2.0", "id": rid, "result": value})


def main():
    if os.environ.get("SCRIPTED_IGNORE_TERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    stdin = sys.stdin.buffer
    while True:
        raw = stdin.readline()
        if not raw:
            break
        if LOG:
            with open(LOG, "ab") as f:
                f.write(raw if raw.endswith(b"\n") else raw + b"\n")
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "method" not in msg:
            continue
        method, rid, params = msg["method"], msg.get("id"), msg.get("params") or {}
        if rid is None:
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            result(rid, {"protocolVersion": params.get("protocolVersion", "2025-11-25"), "capabilities": {"tools": {}}, "serverInfo": {"name": "scripted", "version": "1"}})
        elif method == "tools/list":
            tools = [
                {"name": "safe_read", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
                {"name": "wipe", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": True}},
                {"name": "gentle", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": False}},
            ]
            time.sleep(int(os.environ.get("SCRIPTED_LIST_DELAY_MS", "0")) / 1000)
            if os.environ.get("SCRIPTED_LIST_PAGED"):
                # One tool per page, the cursor being the next tool's index.
                start = int(params.get("cursor", "0"))
                page = {"tools": tools[start:start + 1]}
                if start + 1 < len(tools):
                    page["nextCursor"] = str(start + 1)
                result(rid, page)
            else:
                result(rid, {"tools": tools, "padding": "x" * int(os.environ.get("SCRIPTED_LIST_PAD", "0"))})
        elif method == "tools/call" and params.get("name") == "mrtr_tool":
            # 2026-07-28: a tool that asks the client for input of its own first (MRTR),
            # and completes once the retry carries its state back.
            if params.get("requestState") == "server-state-1":
                result(rid, {"resultType": "complete", "content": [{"type": "text", "text": "completed with " + json.dumps(params.get("inputResponses"), sort_keys=True)}]})
            else:
                result(rid, {"resultType": "input_required", "requestState": "server-state-1",
                             "inputRequests": {"confirm": {"method": "elicitation/create", "params": {"message": "sure?", "requestedSchema": {"type": "object", "properties": {}}}}}})
        elif method == "tools/call":
            result(rid, {"content": [{"type": "text", "text": "called " + str(params.get("name"))}], "received": raw.decode("utf-8", "replace")})
        elif method == "test/input-required":
            # 2026-07-28: ask the client for sampling through the result (MRTR).
            result(rid, {"resultType": "input_required", "requestState": "opaque",
                         "inputRequests": params.get("inputRequests", {"s1": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}})})
        elif method == "test/pipes":
            # The room in the pipes clawai gave this server (F_GETPIPE_SZ).
            import fcntl
            result(rid, {"stdin": fcntl.fcntl(0, 1032), "stdout": fcntl.fcntl(1, 1032)})
        elif method == "test/echo":
            result(rid, {"received": raw.decode("utf-8", "replace")})
        elif method == "test/slow":
            time.sleep(int(params.get("ms", 100)) / 1000)
            result(rid, {"slept_ms": params.get("ms", 100)})
        elif method == "test/big":
            result(rid, {"content": [{"type": "text", "text": "x" * int(params["bytes"])}]})
        elif method == "test/flood":
            # Many notifications, far more than any pipe holds, then the response.
            chunk = "z" * 65536
            for i in range(int(params.get("count", 1000))):
                send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": chunk}})
            result(rid, {"flooded": True})
        elif method == "test/exit":
            out.flush()
            os._exit(int(params.get("code", 3)))
        elif method == "test/hang":
            pass
        elif method == "test/grandchild":
            child = subprocess.Popen(["sleep", "1000"])
            result(rid, {"pid": child.pid})
        elif method == "test/ask":
            # A server-to-client request whose id collides with the client's.
            send({"jsonrpc": "2.0", "id": rid, "method": params.get("method", "sampling/createMessage"), "params": params.get("params", {"messages": [], "maxTokens": 1})})
            answer = json.loads(stdin.readline())
            if LOG:
                with open(LOG, "ab") as f:
                    f.write(json.dumps(answer).encode() + b"\n")
            result(rid, {"client_answered": answer})
        elif method == "test/raw-ask":
            # A server-to-client request written as given (malformed on purpose), then
            # whatever comes back is reported to the client.
            out.write(params["line"].encode() + b"\n")
            out.flush()
            answer = json.loads(stdin.readline())
            result(rid, {"client_answered": answer})
        elif method == "test/raw-answer":
            # The response to this request, written as given with {id} replaced.
            out.write(params["line"].replace("{id}", json.dumps(rid)).encode() + b"\n")
            out.flush()
        else:
            result(rid, {"method": method})
    if os.environ.get("SCRIPTED_IGNORE_EOF"):
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main()
