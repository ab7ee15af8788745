#!/usr/bin/env python3
"""Replay one corpus dump as a stdio MCP server.

Usage: replay.py DUMP.json [--page-size N]

Serves the tools, prompts and resource templates of DUMP.json (a file written by dump.py)
over stdio: newline-delimited JSON-RPC on stdin/stdout, one message a line, until EOF.

  initialize                protocolVersion: the client's if it is one this knows, else the
                            newest; capabilities and serverInfo from the dump (when it has
                            them) or derived from it; instructions from the dump when set
  ping                      {}
  tools/list, prompts/list, resources/templates/list
                            the dump's lists, N items a page (default 100), with an opaque
                            nextCursor while more remain
  resources/list            an empty list
  tools/call                a text result "replayed NAME"; an unknown tool gives isError
  prompts/get               one user message; an unknown prompt gives -32602
  anything else             -32601; notifications and responses are ignored

Standard library only, so a test can run it with any Python 3.
"""
import base64
import json
import sys

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST = "2025-11-25"


def load(path):
    with open(path, encoding="utf-8") as f:
        dump = json.load(f)
    for key in ("tools", "prompts", "resourceTemplates"):
        dump[key] = dump.get(key) or []
    return dump


def capabilities(dump):
    caps = dump.get("capabilities")
    if isinstance(caps, dict):
        return caps
    caps = {}
    if dump["tools"]:
        caps["tools"] = {}
    if dump["prompts"]:
        caps["prompts"] = {}
    if dump["resourceTemplates"]:
        caps["resources"] = {}
    return caps


def server_info(dump):
    info = dump.get("serverInfo")
    if isinstance(info, dict):
        return info
    package = dump.get("package") or ""
    version = package.rpartition("@")[2] if "@" in package.lstrip("@") else "0"
    return {"name": dump.get("server") or "replay", "version": version}


def encode_cursor(offset):
    return base64.urlsafe_b64encode(f"replay:{offset}".encode()).decode()


def decode_cursor(cursor):
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        prefix, _, offset = text.partition(":")
        if prefix != "replay":
            raise ValueError
        offset = int(offset)
        if offset < 0:
            raise ValueError
        return offset
    except (ValueError, UnicodeError, AttributeError, TypeError):
        return None


class InvalidParams(Exception):
    pass


def page(items, key, params, page_size):
    cursor = params.get("cursor")
    start = 0
    if cursor is not None:
        start = decode_cursor(cursor)
        if start is None:
            raise InvalidParams("invalid cursor")
    end = start + page_size
    result = {key: items[start:end]}
    if end < len(items):
        result["nextCursor"] = encode_cursor(end)
    return result


def handle(dump, method, params, page_size):
    if method == "initialize":
        requested = params.get("protocolVersion")
        result = {
            "protocolVersion": requested if requested in PROTOCOL_VERSIONS else LATEST,
            "capabilities": capabilities(dump),
            "serverInfo": server_info(dump),
        }
        if dump.get("instructions") is not None:
            result["instructions"] = dump["instructions"]
        return result
    if method == "ping":
        return {}
    if method == "tools/list":
        return page(dump["tools"], "tools", params, page_size)
    if method == "prompts/list":
        return page(dump["prompts"], "prompts", params, page_size)
    if method == "resources/templates/list":
        return page(dump["resourceTemplates"], "resourceTemplates", params, page_size)
    if method == "resources/list":
        return {"resources": []}
    if method == "tools/call":
        name = params.get("name")
        if any(t.get("name") == name for t in dump["tools"]):
            return {"content": [{"type": "text", "text": f"replayed {name}"}], "isError": False}
        return {"content": [{"type": "text", "text": f"unknown tool: {name}"}], "isError": True}
    if method == "prompts/get":
        name = params.get("name")
        for prompt in dump["prompts"]:
            if prompt.get("name") == name:
                result = {"messages": [{"role": "user", "content": {"type": "text", "text": f"replayed {name}"}}]}
                if prompt.get("description") is not None:
                    result["description"] = prompt["description"]
                return result
        raise InvalidParams(f"unknown prompt: {name}")
    return None


def serve(dump, page_size, stdin, stdout):
    for line in stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            reply = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}
        else:
            if not isinstance(msg, dict) or "method" not in msg:
                continue  # a response, or a batch: nothing to answer
            if "id" not in msg:
                continue  # a notification
            method, rid = msg["method"], msg["id"]
            params = msg.get("params")
            if not isinstance(params, dict):
                params = {}
            try:
                result = handle(dump, method, params, page_size)
            except InvalidParams as e:
                reply = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": str(e)}}
            else:
                if result is None:
                    reply = {"jsonrpc": "2.0", "id": rid,
                             "error": {"code": -32601, "message": f"method not found: {method}"}}
                else:
                    reply = {"jsonrpc": "2.0", "id": rid, "result": result}
        stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
        stdout.flush()


def main(argv):
    args = list(argv)
    page_size = 100
    if "--page-size" in args:
        i = args.index("--page-size")
        try:
            page_size = int(args[i + 1])
        except (IndexError, ValueError):
            page_size = 0
        del args[i:i + 2]
        if page_size < 1:
            print("--page-size needs a positive number", file=sys.stderr)
            return 2
    if len(args) != 1 or args[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    dump = load(args[0])
    stdin = open(sys.stdin.fileno(), encoding="utf-8", errors="replace", closefd=False)
    stdout = open(sys.stdout.fileno(), "w", encoding="utf-8", closefd=False)
    serve(dump, page_size, stdin, stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
