#!/usr/bin/env python3
"""A small stateful stdio MCP server (stdlib only), like Claude Code's `claude mcp serve`:
it remembers, per process, which files it has read, and answers a second read of the same
file with `{"type":"file_unchanged"}` and no content. It can also leave processes behind.

Newline-delimited JSON-RPC on stdin/stdout; exits at the end of its input.

Flags:
  --pid-file F   appends `server PID` when it starts, and `stray PID` for every process
                 spawn_strays starts

Tools:
  read {path}    the file's text the first time this process reads it, then
                 {"type":"file_unchanged"}
  whoami         this process's pid, as JSON text
  spawn_strays {daemon_seconds?}
                 starts `setsid sleep 300` and a double-forked daemon (its own session,
                 parent exited, so it is nobody's child here) that sleeps 301 s (or
                 daemon_seconds), and returns their pids {"setsid": PID, "daemon": PID}
"""

import argparse
import json
import os
import subprocess
import sys

TOOLS = [
    {"name": "read", "description": "Reads a file (unchanged files are not sent again)",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"name": "whoami", "description": "This server's pid", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "spawn_strays", "description": "Starts processes that leave this server's tree",
     "inputSchema": {"type": "object", "properties": {"daemon_seconds": {"type": "number"}}}},
]


def text(value: str) -> dict:
    return {"content": [{"type": "text", "text": value}]}


class Server:
    def __init__(self, pid_file: str | None):
        self.pid_file = pid_file
        self.read_files: set[str] = set()
        self.note(f"server {os.getpid()}")

    def note(self, line: str) -> None:
        if self.pid_file:
            with open(self.pid_file, "a") as f:
                f.write(line + "\n")

    def send(self, message: dict) -> None:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        sys.stdout.flush()

    def run(self) -> None:
        for line in sys.stdin:
            if not line.strip():
                continue
            message = json.loads(line)
            if "id" not in message or "method" not in message:
                continue  # notifications and answers: nothing to do
            try:
                result = self.request(message["method"], message.get("params") or {})
                self.send({"id": message["id"], "result": result})
            except LookupError as e:
                self.send({"id": message["id"], "error": {"code": -32601, "message": str(e)}})

    def request(self, method: str, params: dict) -> dict:
        if method == "initialize":
            return {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                    "capabilities": {"tools": {}}, "serverInfo": {"name": "stateful", "version": "1.0.0"}}
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": TOOLS}
        if method == "tools/call":
            return self.call(params.get("name"), params.get("arguments") or {})
        raise LookupError(f"Method not found: {method}")

    def call(self, name: str, arguments: dict) -> dict:
        if name == "read":
            path = os.path.realpath(arguments["path"])
            if path in self.read_files:
                return text(json.dumps({"type": "file_unchanged"}))
            self.read_files.add(path)
            with open(path) as f:
                return text(f.read())
        if name == "whoami":
            return text(json.dumps({"pid": os.getpid()}))
        if name == "spawn_strays":
            seconds = arguments.get("daemon_seconds", 301)
            return text(json.dumps({"setsid": self.setsid_sleep(), "daemon": self.daemon(seconds)}))
        raise LookupError(f"Unknown tool: {name}")

    def setsid_sleep(self) -> int:
        # What Claude Code's Bash tool does: the command in a session of its own.
        pid = subprocess.Popen(["setsid", "sleep", "300"], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid
        self.note(f"stray {pid}")
        return pid

    def daemon(self, seconds: float) -> int:
        """The classic double fork: the grandchild, in its own session, is orphaned at once."""
        read_end, write_end = os.pipe()
        child = os.fork()
        if child == 0:
            os.setsid()
            grandchild = os.fork()
            if grandchild == 0:
                os.close(read_end)
                os.write(write_end, str(os.getpid()).encode())
                os.close(write_end)
                devnull = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(devnull, fd)
                os.execvp("sleep", ["sleep", str(seconds)])
            os._exit(0)
        os.close(write_end)
        os.waitpid(child, 0)
        pid = int(os.read(read_end, 32).decode())
        os.close(read_end)
        self.note(f"stray {pid}")
        return pid


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pid-file")
    Server(parser.parse_args().pid_file).run()


if __name__ == "__main__":
    main()
