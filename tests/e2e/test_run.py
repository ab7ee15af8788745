"""`./scripts/run`, the main job, as a client launches it and as a person runs it.

Launched by an MCP client (stdin a pipe), it speaks MCP at once; waiting on a terminal
(`--stdio`), it prints the lines to paste, and pasting them gets real answers."""

import json
import os
import pathlib
import pty
import select
import subprocess
import time

from conftest import ROOT, clawai_bin

RUN = ROOT / "scripts" / "run"


def start(tmp_path: pathlib.Path, args: list[str], stdin) -> subprocess.Popen:
    env = dict(os.environ, CLAWAI_BIN=clawai_bin(), HOME=str(tmp_path), CLAWAI_AUDIT=str(tmp_path / "audit.jsonl"))
    env.pop("CLAWAI_POLICY", None)
    return subprocess.Popen([str(RUN), *args], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def response(proc: subprocess.Popen, id_: int, timeout: float = 60) -> dict:
    """Reads stdout until the response with this id (notifications are skipped)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], deadline - time.monotonic())
        if not ready:
            break
        line = proc.stdout.readline()
        assert line, f"scripts/run ended: {proc.stderr.read().decode()}"
        message = json.loads(line)
        if message.get("id") == id_:
            return message
    raise AssertionError(f"no response {id_} within {timeout} s")


def project(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("hello from the guarded project\n")
    return root


def test_run_speaks_mcp_at_once_when_a_client_launches_it(tmp_path):
    root = project(tmp_path)
    proc = start(tmp_path, [str(root)], subprocess.PIPE)
    try:
        def send(message: dict) -> None:
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
        assert response(proc, 1)["result"]["serverInfo"]["name"] == "secure-filesystem-server"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert any(t["name"] == "read_text_file" for t in response(proc, 2)["result"]["tools"])
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "read_text_file", "arguments": {"path": str(root / "README.md")}}})
        read = response(proc, 3)["result"]
        assert not read.get("isError") and "hello from the guarded project" in read["content"][0]["text"], read
        send({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
              "params": {"name": "read_text_file", "arguments": {"path": str(root / ".." / ".ssh" / "id_rsa")}}})
        denied = response(proc, 4)["result"]
        assert denied["isError"] and "clawai denied" in denied["content"][0]["text"], denied
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
        assert b"speaking MCP on stdin/stdout" in proc.stderr.read()
    finally:
        proc.kill()


def test_run_on_a_terminal_prints_the_lines_to_paste_and_they_work(tmp_path):
    root = project(tmp_path)
    leader, follower = pty.openpty()
    proc = start(tmp_path, ["--stdio", str(root)], follower)
    os.close(follower)
    try:
        shown = b""
        deadline = time.monotonic() + 120
        while b"Ctrl-D stops" not in shown:
            assert time.monotonic() < deadline, shown.decode()
            ready, _, _ = select.select([proc.stderr], [], [], 5)
            if ready:
                chunk = os.read(proc.stderr.fileno(), 65536)
                assert chunk, f"scripts/run ended: {shown.decode()}"
                shown += chunk
        lines = [line for line in shown.decode().splitlines() if line.startswith('{"jsonrpc"')]
        methods = [json.loads(line).get("method") for line in lines]
        assert methods[:4] == ["initialize", "notifications/initialized", "tools/list", "tools/call"], lines
        # Paste them as a person would, one at a time, and read the answers.
        for line in lines:
            os.write(leader, line.encode() + b"\n")
            message = json.loads(line)
            if "id" in message:
                answer = response(proc, message["id"])
                if message["id"] == 3:
                    assert "hello from the guarded project" in answer["result"]["content"][0]["text"], answer
                if message["id"] == 4:
                    assert answer["result"]["isError"] and "clawai denied" in answer["result"]["content"][0]["text"]
        os.write(leader, b"\x04")  # Ctrl-D
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        os.close(leader)
