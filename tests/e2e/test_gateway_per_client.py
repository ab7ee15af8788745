"""`"session": "per-client"` servers behind `clawai gateway --listen`: each client session
gets an instance of its own (a process), so a server that keeps state per session (like
Claude Code's `claude mcp serve`, which answers a file it already sent with
`file_unchanged`) serves each client as if it were alone. One more instance lists the
tools for every session. The instance stops when its session is deleted, when it sits
idle, or when the server is removed, with everything it started. Shared stays the default.
The server is tests/e2e/servers/stateful_server.py (and scripted_server.py for sampling)."""

import json
import os
import subprocess
import sys

import anyio
import pytest
from mcp import Client, types

from conftest import clawai_bin
from gateway_support import (client, gateway_args, gateway_missing, has_all, kill_leftovers, listed, own_state, poll,
                             scripted, text_of, write_config)
from test_conformance import free_port, stop
from test_http import wait_until_listening
from test_process_tree import STATEFUL, exists, pids_of

_MISSING = gateway_missing()
pytestmark = [pytest.mark.anyio, pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")]


@pytest.fixture
def anyio_backend():
    return "asyncio"


def stateful(pid_file, **keys) -> dict:
    return {"command": sys.executable, "args": [str(STATEFUL), "--pid-file", str(pid_file)], "internalOnly": False,
            **keys}


class ListeningGateway:
    """`clawai gateway --listen` on a free port, stopped (SIGTERM) at the end."""

    def __init__(self, tmp_path, config, *extra):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        with open(tmp_path / "gateway.err", "wb") as err:
            self.proc = subprocess.Popen(
                [clawai_bin(), *gateway_args(tmp_path, config), "--listen", f"127.0.0.1:{self.port}", *extra],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                env=own_state(tmp_path, dict(os.environ)), cwd=tmp_path)
        wait_until_listening(self.port, self.proc)

    def client(self, **options) -> Client:
        return Client(self.url, mode="legacy", cache=None, **options)

    def stop(self):
        stop(self.proc)


async def call_text(c: Client, tool: str, arguments: dict | None = None) -> str:
    return text_of(await c.call_tool(tool, arguments or {}))


async def pid_of(c: Client, tool: str = "cc__whoami") -> int:
    return json.loads(await call_text(c, tool))["pid"]


def living(pids) -> list[int]:
    return [pid for pid in pids if exists(pid)]


@pytest.fixture
def note(tmp_path):
    path = tmp_path / "note.txt"
    path.write_text("the content of the note")
    return path


async def test_per_client_sessions_each_get_an_instance_and_the_content(tmp_path, note):
    pid_file = tmp_path / "pids"
    config = write_config(tmp_path / "gateway.json", {"cc": stateful(pid_file, session="per-client")})
    gateway = ListeningGateway(tmp_path, config)
    try:
        with anyio.fail_after(30):
            async with gateway.client() as a, gateway.client() as b:
                await listed(a, has_all("cc__read"))
                await listed(b, has_all("cc__read"))
                assert await call_text(a, "cc__read", {"path": str(note)}) == "the content of the note"
                assert json.loads(await call_text(a, "cc__read", {"path": str(note)})) == {"type": "file_unchanged"}
                # The bug this fixes: behind one shared instance, B got `file_unchanged` and no content.
                assert await call_text(b, "cc__read", {"path": str(note)}) == "the content of the note"
                pid_a, pid_b = await pid_of(a), await pid_of(b)
                assert pid_a != pid_b, "each session has its own process"
                assert await pid_of(a) == pid_a, "and keeps it"
                servers = pids_of(pid_file)["server"]
                # One instance lists the tools for every session (nobody calls it), plus one per session.
                assert len(servers) == 3 and {pid_a, pid_b} < set(servers), servers
                assert len(living(servers)) == 3
    finally:
        gateway.stop()
        kill_leftovers(pids_of(pid_file)["server"] + pids_of(pid_file)["stray"])
    assert living(pids_of(pid_file)["server"]) == [], "the gateway stops every instance"


@pytest.mark.parametrize("session", [None, "shared"])
async def test_shared_is_the_default_and_sessions_share_the_server(tmp_path, note, session):
    pid_file = tmp_path / "pids"
    keys = {} if session is None else {"session": session}
    config = write_config(tmp_path / "gateway.json", {"cc": stateful(pid_file, **keys)})
    gateway = ListeningGateway(tmp_path, config)
    try:
        with anyio.fail_after(30):
            async with gateway.client() as a, gateway.client() as b:
                await listed(a, has_all("cc__read"))
                await listed(b, has_all("cc__read"))
                assert await call_text(a, "cc__read", {"path": str(note)}) == "the content of the note"
                assert json.loads(await call_text(b, "cc__read", {"path": str(note)})) == {"type": "file_unchanged"}
                assert await pid_of(a) == await pid_of(b)
                assert len(pids_of(pid_file)["server"]) == 1
    finally:
        gateway.stop()
        kill_leftovers(pids_of(pid_file)["server"])


async def test_a_sessions_instance_stops_when_the_session_is_deleted_and_leaves_nothing(tmp_path, note):
    pid_file = tmp_path / "pids"
    config = write_config(tmp_path / "gateway.json", {"cc": stateful(pid_file, session="per-client")})
    gateway = ListeningGateway(tmp_path, config)
    try:
        with anyio.fail_after(30):
            async with gateway.client() as b:
                await listed(b, has_all("cc__whoami"))
                pid_b = await pid_of(b)
                async with gateway.client() as a:  # leaving it sends DELETE for its session
                    await listed(a, has_all("cc__spawn_strays"))
                    pid_a = await pid_of(a)
                    strays = json.loads(await call_text(a, "cc__spawn_strays"))
                    assert living([pid_a, *strays.values()]) == [pid_a, *strays.values()]
                await poll(lambda: not living([pid_a, *strays.values()]), 8, "A's instance and strays to end")
                assert await pid_of(b) == pid_b, "B's instance is untouched"
                lister = set(pids_of(pid_file)["server"]) - {pid_a, pid_b}
                assert len(lister) == 1 and living(lister) == list(lister), "the lister runs on"
    finally:
        gateway.stop()
        kill_leftovers(pids_of(pid_file)["server"] + pids_of(pid_file)["stray"])


async def test_an_idle_instance_stops_and_the_next_call_starts_a_new_one(tmp_path, note):
    pid_file = tmp_path / "pids"
    config = write_config(tmp_path / "gateway.json", {"cc": stateful(pid_file, session="per-client")})
    gateway = ListeningGateway(tmp_path, config, "--per-client-idle", "1")
    try:
        with anyio.fail_after(30):
            async with gateway.client() as a:
                await listed(a, has_all("cc__read"))
                assert await call_text(a, "cc__read", {"path": str(note)}) == "the content of the note"
                first = await pid_of(a)
                await poll(lambda: not exists(first), 5, "the idle instance to stop")
                second = await pid_of(a)
                assert second != first
                # A new instance knows nothing of what the old one sent.
                assert await call_text(a, "cc__read", {"path": str(note)}) == "the content of the note"
    finally:
        gateway.stop()
        kill_leftovers(pids_of(pid_file)["server"])


async def test_removing_a_per_client_server_drains_and_stops_every_instance(tmp_path):
    pid_file = tmp_path / "pids"
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a"),
                                                      "cc": stateful(pid_file, session="per-client")})
    gateway = ListeningGateway(tmp_path, config)
    try:
        with anyio.fail_after(30):
            async with gateway.client() as a, gateway.client() as b:
                await listed(a, has_all("cc__whoami", "a__echo"))
                await listed(b, has_all("cc__whoami"))
                instances = [await pid_of(a), await pid_of(b)]
                strays = json.loads(await call_text(a, "cc__spawn_strays"))
                write_config(config, {"a": scripted("a")})
                everything = pids_of(pid_file)["server"] + list(strays.values())
                assert len(pids_of(pid_file)["server"]) == 3 and set(instances) < set(everything)
                await poll(lambda: not living(everything), 8, "the lister, the instances and the strays to end")
                assert await call_text(b, "a__echo", {"text": "on"}) == "a: on"
    finally:
        gateway.stop()
        kill_leftovers(pids_of(pid_file)["server"] + pids_of(pid_file)["stray"])


async def test_a_per_client_servers_sampling_goes_to_the_session_that_called_even_at_once(tmp_path):
    """With a shared server, two sessions calling at once leave the server's request with no
    session to go to; each instance of a per-client server has one."""
    config = write_config(tmp_path / "gateway.json", {"s": scripted("s", session="per-client")})
    gateway = ListeningGateway(tmp_path, config)
    asked = []

    def sampler_of(session: str):
        async def sampler(context, params: types.CreateMessageRequestParams):
            asked.append(session)
            await anyio.sleep(0.5)  # both calls are in flight at once
            return types.CreateMessageResult(role="assistant", model="m",
                                             content=types.TextContent(type="text", text=f"answer of {session}"))
        return sampler

    results = {}
    try:
        with anyio.fail_after(30):
            async with gateway.client(sampling_callback=sampler_of("one")) as one, \
                    gateway.client(sampling_callback=sampler_of("two")) as two:
                await listed(one, has_all("s__sample"))
                await listed(two, has_all("s__sample"))

                async def sample(name, c):
                    results[name] = await call_text(c, "s__sample")

                async with anyio.create_task_group() as tg:
                    tg.start_soon(sample, "one", one)
                    tg.start_soon(sample, "two", two)
    finally:
        gateway.stop()
    assert results == {"one": "s sampled: answer of one", "two": "s sampled: answer of two"}
    assert sorted(asked) == ["one", "two"]


async def test_over_stdio_a_per_client_server_runs_once(tmp_path, note):
    pid_file = tmp_path / "pids"
    config = write_config(tmp_path / "gateway.json", {"cc": stateful(pid_file, session="per-client")})
    try:
        with anyio.fail_after(30):
            async with client(tmp_path, config) as c:
                await listed(c, has_all("cc__read"))
                assert await call_text(c, "cc__read", {"path": str(note)}) == "the content of the note"
                assert await pid_of(c) == pids_of(pid_file)["server"][0]
        assert len(pids_of(pid_file)["server"]) == 1, "one client session: one instance, as a shared server"
    finally:
        kill_leftovers(pids_of(pid_file)["server"])
