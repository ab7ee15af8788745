#!/usr/bin/env python3
"""Dump the listings of real MCP servers into this folder, for the scanner's false-positive corpus.

Usage: dump.py NODE_PROJECT_DIR
  NODE_PROJECT_DIR is a folder where the servers named in SERVERS were installed with
  `npm install PACKAGE...`. Each server is started over stdio, initialized, and every page
  of tools/list, prompts/list and resources/templates/list is written to NAME.json with the
  package's version and the server's instructions. The files are committed so the tests
  run offline; rerun this to refresh them.
"""
import json
import os
import select
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> (npm package, bin, extra args, extra env). Only servers that start and list
# without credentials or a live backend; dummy values stand in where a server reads one
# at start but contacts nothing to list.
SERVERS = {
    "filesystem": ("@modelcontextprotocol/server-filesystem", "mcp-server-filesystem", ["{tmp}"], {}),
    "memory": ("@modelcontextprotocol/server-memory", "mcp-server-memory", [], {"MEMORY_FILE_PATH": "{tmp}/memory.json"}),
    "everything": ("@modelcontextprotocol/server-everything", "mcp-server-everything", [], {}),
    "sequential-thinking": ("@modelcontextprotocol/server-sequential-thinking", "mcp-server-sequential-thinking", [], {}),
    "github": ("@modelcontextprotocol/server-github", "mcp-server-github", [], {}),
    "gitlab": ("@modelcontextprotocol/server-gitlab", "mcp-server-gitlab", [], {"GITLAB_PERSONAL_ACCESS_TOKEN": "dummy"}),
    "postgres": ("@modelcontextprotocol/server-postgres", "mcp-server-postgres", ["postgresql://localhost:1/none"], {}),
    "puppeteer": ("@modelcontextprotocol/server-puppeteer", "mcp-server-puppeteer", [], {}),
    "pdf": ("@modelcontextprotocol/server-pdf", "mcp-pdf-server", ["--stdio"], {}),
    "slack": ("@modelcontextprotocol/server-slack", "mcp-server-slack", [], {"SLACK_BOT_TOKEN": "dummy", "SLACK_TEAM_ID": "dummy"}),
    "brave-search": ("@modelcontextprotocol/server-brave-search", "mcp-server-brave-search", [], {"BRAVE_API_KEY": "dummy"}),
    "playwright": ("@playwright/mcp", "playwright-mcp", [], {}),
    "context7": ("@upstash/context7-mcp", "context7-mcp", [], {}),
    "notion": ("@notionhq/notion-mcp-server", "notion-mcp-server", [], {}),
    "chrome-devtools": ("chrome-devtools-mcp", "chrome-devtools-mcp", [], {}),
    "desktop-commander": ("@wonderwhy-er/desktop-commander", "desktop-commander", [], {}),
    "kubernetes": ("mcp-server-kubernetes", "mcp-server-kubernetes", [], {}),
}


class Peer:
    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.buf = b""
        self.next_id = 1

    def send(self, msg):
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method, params, timeout=60):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            while b"\n" not in self.buf:
                ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
                if not ready:
                    raise TimeoutError(method)
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise EOFError(method)
                self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # a server that logs to stdout
            if msg.get("id") == rid and "method" not in msg:
                return msg
            if "method" in msg and "id" in msg:  # a request of the server's: refuse it
                self.send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "not supported"}})

    def list_all(self, method, key):
        items, cursor = [], None
        for _ in range(1000):
            reply = self.request(method, {"cursor": cursor} if cursor else {})
            if "error" in reply:
                return items
            items += reply["result"].get(key, [])
            cursor = reply["result"].get("nextCursor")
            if not cursor:
                return items
        return items

    def close(self):
        self.proc.kill()
        self.proc.wait()


def package_version(root, package):
    with open(os.path.join(root, "node_modules", package, "package.json")) as f:
        return json.load(f)["version"]


def dump(root, name, package, bin_name, args, extra_env):
    tmp = tempfile.mkdtemp(prefix="scan-corpus-")
    env = dict(os.environ, HOME=tmp, **{k: v.format(tmp=tmp) for k, v in extra_env.items()})
    argv = [os.path.join(root, "node_modules", ".bin", bin_name)] + [a.format(tmp=tmp) for a in args]
    peer = Peer(argv, env)
    try:
        init = peer.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                           "clientInfo": {"name": "clawai-scan-corpus", "version": "0"}})
        peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        out = {
            "server": name,
            "package": f"{package}@{package_version(root, package)}",
            "instructions": init["result"].get("instructions"),
            "tools": peer.list_all("tools/list", "tools"),
            "prompts": peer.list_all("prompts/list", "prompts"),
            "resourceTemplates": peer.list_all("resources/templates/list", "resourceTemplates"),
        }
    finally:
        peer.close()
    with open(os.path.join(HERE, f"{name}.json"), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return len(out["tools"])


def main():
    root = os.path.abspath(sys.argv[1])
    for name, (package, bin_name, args, env) in SERVERS.items():
        try:
            print(f"{name}: {dump(root, name, package, bin_name, args, env)} tools")
        except Exception as e:  # noqa: BLE001 - report and go on with the others
            print(f"{name}: failed: {e!r}", file=sys.stderr)


if __name__ == "__main__":
    main()
