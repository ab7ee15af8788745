"""Nothing outlives a server: what a stdio server starts with `setsid` (as Claude Code's
Bash tool does) or through a double fork (a daemon) is ended when the server stops, by
`clawai proxy` at the client's EOF, by `clawai proxy --listen` when the session is
deleted, and by `clawai gateway` at the client's EOF and when a reload removes the
server. The server is tests/e2e/servers/stateful_server.py; its `spawn_strays` tool
returns the pids."""

import json
import os
import subprocess
import sys
import time

import anyio
import pytest
from mcp import Client

from conftest import ALLOW_ALL, ROOT, clawai_bin, write_policy
from gateway_support import (RawGateway, alive, gateway_args, gateway_missing, has_all, kill_leftovers, own_state,
                             poll, scripted, write_config)
from test_conformance import free_port, stop
from test_http import wait_until_listening

STATEFUL = ROOT / "tests" / "e2e" / "servers" / "stateful_server.py"

_MISSING = gateway_missing()
pytestmark = [pytest.mark.anyio, pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")]


@pytest.fixture
def anyio_backend():
    return "asyncio"


def stateful(pid_file) -> dict:
    return {"command": sys.executable, "args": [str(STATEFUL), "--pid-file", str(pid_file)], "internalOnly": False}


def pids_of(pid_file) -> dict[str, list[int]]:
    """`server PID` and `stray PID` lines of a --pid-file, by kind."""
    found: dict[str, list[int]] = {"server": [], "stray": []}
    if pid_file.exists():
        for line in pid_file.read_text().split("\n"):
            if line.strip():
                kind, pid = line.split()
                found[kind].append(int(pid))
    return found


def parent_of(pid: int) -> int | None:
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def exists(pid: int) -> bool:
    """Alive or a zombie: /proc/PID is there until the process is reaped."""
    return os.path.exists(f"/proc/{pid}")


def spawn_strays(gw: RawGateway, tool: str, request_id, **arguments) -> dict:
    answer = gw.request(request_id, "tools/call", {"name": tool, "arguments": arguments})
    return json.loads(answer["result"]["content"][0]["text"])


def assert_strays_adopted(strays: dict, clawai_pid: int) -> None:
    """The daemon's parent exited at once: it is clawai's now (a subreaper), not init's."""
    assert poll_sync(lambda: parent_of(strays["daemon"]) == clawai_pid, 3), \
        f"the daemon's parent is {parent_of(strays['daemon'])}, not clawai ({clawai_pid})"
    assert all(alive(pid) for pid in strays.values())


def poll_sync(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_proxy_at_the_clients_eof_ends_what_the_server_left_in_other_sessions(tmp_path):
    pid_file = tmp_path / "pids"
    policy = write_policy(tmp_path, ALLOW_ALL)
    gw = RawGateway(tmp_path, ["proxy", "--policy", str(policy), "--audit", str(tmp_path / "audit.jsonl"), "--",
                               sys.executable, str(STATEFUL), "--pid-file", str(pid_file)])
    try:
        gw.initialize()
        strays = spawn_strays(gw, "spawn_strays", 1)
        assert_strays_adopted(strays, gw.proc.pid)
        assert gw.close(timeout=10) == 0
        everything = pids_of(pid_file)["server"] + list(strays.values())
        assert poll_sync(lambda: not any(alive(pid) for pid in everything), 1), \
            f"alive 1 s after the proxy ended: {[p for p in everything if alive(p)]}"
    finally:
        gw.kill()
        kill_leftovers(pids_of(pid_file)["server"] + pids_of(pid_file)["stray"])


def test_gateway_at_the_clients_eof_ends_what_its_servers_left(tmp_path):
    pid_file = tmp_path / "pids"
    config = write_config(tmp_path / "gateway.json", {"s": stateful(pid_file)})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.initialize()
        gw.wait_listed(has_all("s__spawn_strays"))
        strays = spawn_strays(gw, "s__spawn_strays", 1)
        assert_strays_adopted(strays, gw.proc.pid)
        assert gw.close(timeout=10) == 0
        everything = pids_of(pid_file)["server"] + list(strays.values())
        assert poll_sync(lambda: not any(alive(pid) for pid in everything), 1), \
            f"alive 1 s after the gateway ended: {[p for p in everything if alive(p)]}"
    finally:
        gw.kill()
        kill_leftovers(pids_of(pid_file)["server"] + pids_of(pid_file)["stray"])


def test_gateway_reload_that_removes_a_server_ends_what_it_left(tmp_path):
    pid_file = tmp_path / "pids"
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a"), "s": stateful(pid_file)})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.initialize()
        gw.wait_listed(has_all("a__echo", "s__spawn_strays"))
        strays = spawn_strays(gw, "s__spawn_strays", 1)
        assert_strays_adopted(strays, gw.proc.pid)
        write_config(config, {"a": scripted("a")})
        everything = pids_of(pid_file)["server"] + list(strays.values())
        # No call in flight: it drains at once, then stops (up to --grace for its input's end).
        assert poll_sync(lambda: not any(exists(pid) for pid in everything), 5), \
            f"left after the server was removed: {[p for p in everything if exists(p)]}"
        assert gw.proc.poll() is None, "the gateway goes on"
        answer = gw.request(2, "tools/call", {"name": "a__echo", "arguments": {"text": "still here"}})
        assert answer["result"]["content"][0]["text"] == "a: still here"
    finally:
        gw.kill()
        kill_leftovers(pids_of(pid_file)["server"] + pids_of(pid_file)["stray"])


def test_gateway_reaps_an_adopted_daemon_that_exits_on_its_own(tmp_path):
    pid_file = tmp_path / "pids"
    config = write_config(tmp_path / "gateway.json", {"s": stateful(pid_file)})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.initialize()
        gw.wait_listed(has_all("s__spawn_strays"))
        strays = spawn_strays(gw, "s__spawn_strays", 1, daemon_seconds=0.3)
        # A zombie of the gateway's for at most a reaping period (5 s), then gone.
        assert poll_sync(lambda: not exists(strays["daemon"]), 8), "the adopted daemon was never reaped"
        assert alive(strays["setsid"]), "the server runs: what it started runs too"
    finally:
        gw.kill()
        kill_leftovers(pids_of(pid_file)["server"] + pids_of(pid_file)["stray"])


async def test_proxy_listen_ends_what_a_sessions_server_left_when_the_session_is_deleted(tmp_path):
    pid_file = tmp_path / "pids"
    policy = write_policy(tmp_path, ALLOW_ALL)
    port = free_port()
    with open(tmp_path / "proxy.err", "wb") as err:
        proc = subprocess.Popen([clawai_bin(), "proxy", "--policy", str(policy), "--audit", str(tmp_path / "audit.jsonl"),
                                 "--listen", f"127.0.0.1:{port}", "--", sys.executable, str(STATEFUL),
                                 "--pid-file", str(pid_file)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                                env=own_state(tmp_path, dict(os.environ)), cwd=tmp_path)
    try:
        wait_until_listening(port, proc)
        with anyio.fail_after(20):
            async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy", cache=None) as c:
                result = await c.call_tool("spawn_strays", {})
                strays = json.loads(result.content[0].text)
                assert all(alive(pid) for pid in strays.values())
            # Leaving the client deletes the session (HTTP DELETE): its server stops, and all it left.
            everything = pids_of(pid_file)["server"] + list(strays.values())
            await poll(lambda: not any(exists(pid) for pid in everything), 5, "the session's processes to end")
        assert proc.poll() is None
    finally:
        stop(proc)
        kill_leftovers(pids_of(pid_file)["server"] + pids_of(pid_file)["stray"])
