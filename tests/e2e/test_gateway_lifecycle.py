"""`clawai gateway` end to end, the lives of its servers: one slow to start, one that
crashes or dies with calls in flight, progress and cancellation of long calls, no process
left when the gateway ends, and the configuration edited while it runs (servers removed
and drained, added, changed, an invalid edit)."""

import json
import pathlib
import signal
import sys
import time

import anyio
import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from gateway_support import (RawGateway, alive, calls_received, client, error_text, gateway_args, gateway_missing,
                             has_all, kill_leftovers, listed, pids_in, poll, prefixed, read_log, scripted, text_of,
                             tool_names, write_config)

ROOT_SERVERS = pathlib.Path(__file__).parent / "servers"
_MISSING = gateway_missing()
pytestmark = [pytest.mark.anyio, pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")]


@pytest.fixture
def anyio_backend():
    return "asyncio"


# --- servers that are slow, crash, or take long ----------------------------------------------

async def test_a_slow_starting_server_delays_nothing_and_is_not_listed_yet(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"fast": scripted("fast"),
                                                      "slow": scripted("slow", "--slow-start", 30)})
    with anyio.fail_after(15):
        started = time.monotonic()
        async with client(tmp_path, config) as c:
            names = await listed(c, has_all("fast__echo"), timeout=3)
            assert time.monotonic() - started < 3, "initialize and tools/list wait for no slow server"
            assert not prefixed(names, "slow")
            assert text_of(await c.call_tool("fast__echo", {"text": "quick"})) == "fast: quick"
            # A call to the slow one's tool says why it is not there, not "Unknown tool".
            why = await error_text(c, "slow__echo", {"text": "early"})
            assert "server `slow` is starting" in why and "Unknown tool" not in why, why
            # A hidden or absent server's name is unknown as before: nothing is told.
            assert "Unknown tool" in await error_text(c, "nosuch__echo", {})


def test_a_list_a_server_declares_and_does_not_serve_is_noted_once_at_info(tmp_path):
    server = ROOT_SERVERS / "unserved_lists.py"
    config = write_config(tmp_path / "gateway.json", {
        "u": {"command": sys.executable, "args": [str(server)], "internalOnly": False}})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.initialize()
        gw.wait_listed(has_all("u__ping_me"), timeout=5)
        # It exits after a call and is started again: the note is not repeated.
        assert gw.request(1, "tools/call", {"name": "u__ping_me", "arguments": {}})["result"]["content"][0]["text"] == "pong"
        time.sleep(1.5)
        gw.wait_listed(has_all("u__ping_me"), timeout=5)
        log = b"".join(gw.stderr).decode()
        notes = [line for line in log.splitlines() if "declares prompts but does not serve" in line]
        assert len(notes) == 1 and " INFO " in notes[0], log
        assert "listing prompts failed" not in log and "listing resources failed" not in log, log
    finally:
        gw.proc.terminate()
        gw.proc.wait(timeout=10)


def test_servers_that_cannot_start_block_nothing_and_are_retried(tmp_path):
    config = write_config(tmp_path / "gateway.json", {
        "ok": scripted("ok"),
        "exits": {"command": sys.executable, "args": ["-c", "import sys; sys.exit(1)"], "internalOnly": False},
        "missing": {"command": str(tmp_path / "no-such-command"), "internalOnly": False},
    })
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        started = time.monotonic()
        gw.initialize()
        names = gw.wait_listed(has_all("ok__echo"), timeout=3)
        assert time.monotonic() - started < 3.5 and not prefixed(names, "exits") and not prefixed(names, "missing")
        answer = gw.request(1, "tools/call", {"name": "ok__echo", "arguments": {"text": "up"}})
        assert answer["result"]["content"][0]["text"] == "ok: up"
        time.sleep(1.6)  # long enough for two retries of each
        assert gw.proc.poll() is None, "the gateway keeps running"
        log = b"".join(gw.stderr).decode()
        assert log.count("`missing`") >= 3 and "no-such-command" in log and log.count("`exits`") >= 3, log
    finally:
        gw.kill()


async def test_stdout_lines_that_are_not_json_rpc_are_dropped(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"noisy": scripted("noisy", "--stdout-noise")})
    with anyio.fail_after(15):
        async with client(tmp_path, config) as c:
            await listed(c, has_all("noisy__echo"))
            assert text_of(await c.call_tool("noisy__echo", {"text": "heard"})) == "noisy: heard"


async def test_a_crashed_server_is_restarted_and_callable_again(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"c": scripted("c", "--crash-after", 1)})
    with anyio.fail_after(15):
        async with client(tmp_path, config) as c:
            await listed(c, has_all("c__whoami"))
            first = json.loads(text_of(await c.call_tool("c__whoami", {})))["pid"]  # then it exits with 3
            deadline = time.monotonic() + 10
            while True:
                try:
                    result = await c.call_tool("c__whoami", {})
                    if not result.is_error:
                        break
                except MCPError:
                    pass
                assert time.monotonic() < deadline, "the server was not restarted within 10 s"
                await anyio.sleep(0.2)
            assert json.loads(result.content[0].text)["pid"] != first, "a new instance answers"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_progress_reaches_the_caller_under_its_own_token(tmp_path, mode):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a", "--log", tmp_path / "a.log")})
    progress = []

    async def on_progress(value, total, message):
        progress.append(value)

    with anyio.fail_after(15):
        async with client(tmp_path, config, mode=mode) as c:
            await listed(c, has_all("a__slow"))
            # The SDK uses the request id as the progress token and hands a notification to
            # this callback only when it carries that token.
            result = await c.call_tool("a__slow", {"seconds": 0.5}, progress_callback=on_progress)
    assert text_of(result) == "a: slept 0.5"
    assert progress == [1, 2, 3, 4, 5]
    upstream = calls_received(tmp_path / "a.log", "slow")
    assert upstream and "progressToken" in upstream[0]["params"].get("_meta", {}), upstream


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_cancellation_reaches_only_the_server_holding_the_call(tmp_path, mode):
    logs = {s: tmp_path / f"{s}.log" for s in ("a", "b")}
    config = write_config(tmp_path / "gateway.json", {s: scripted(s, "--log", logs[s]) for s in logs})
    with anyio.fail_after(15):
        async with client(tmp_path, config, mode=mode) as c:
            await listed(c, has_all("a__slow", "b__slow"))
            b_result = {}

            async def b_call():
                b_result["r"] = await c.call_tool("b__slow", {"seconds": 1.5})

            async with anyio.create_task_group() as tg:
                tg.start_soon(b_call)
                await poll(lambda: calls_received(logs["b"], "slow"), 5, "b's call to arrive")
                with anyio.move_on_after(0.5):
                    await c.call_tool("a__slow", {"seconds": 10})
                cancelled = await poll(lambda: read_log(logs["a"])[1], 5, "a to see the cancellation")
            assert text_of(b_result["r"]) == "b: slept 1.5"
    a_call = calls_received(logs["a"], "slow")[0]
    assert cancelled == [f"cancelled {json.dumps(a_call['id'])}"]
    a_cancels = [m for m in read_log(logs["a"])[0] if m.get("method") == "notifications/cancelled"]
    assert [m["params"]["requestId"] for m in a_cancels] == [a_call["id"]]
    b_messages, b_other = read_log(logs["b"])
    assert not [m for m in b_messages if m.get("method") == "notifications/cancelled"] and not b_other


# --- no process left behind ------------------------------------------------------------------

def wait_all_gone(pids: list[int], timeout: float = 5) -> list[int]:
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def test_two_hundred_calls_over_three_servers_then_eof_leave_no_process(tmp_path):
    pid_files = {s: tmp_path / f"{s}.pids" for s in ("a", "b", "c")}
    config = write_config(tmp_path / "gateway.json", {
        s: scripted(s, "--spawn-grandchild", "--pid-file", f) for s, f in pid_files.items()})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.initialize()
        gw.wait_listed(has_all("a__echo", "b__echo", "c__echo"))
        for i in range(200):  # pipelined: all sent before any answer is read
            gw.send({"id": i, "method": "tools/call", "params": {"name": f"{'abc'[i % 3]}__echo", "arguments": {"text": str(i)}}})
        for i in range(200):
            answer = json.loads(gw.read_response(i))
            assert answer["result"]["content"][0]["text"] == f"{'abc'[i % 3]}: {i}"
        pids = pids_in(pid_files.values())
        assert len(pids) == 6 and all(alive(p) for p in pids), "each server and its grandchild run"
        gw.close(timeout=10)
        assert wait_all_gone(pids) == [], "no server and no grandchild outlives the gateway"
    finally:
        gw.kill()
        kill_leftovers(pids_in(pid_files.values()))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_every_server_and_grandchild(tmp_path, signum):
    pid_files = {s: tmp_path / f"{s}.pids" for s in ("a", "b")}
    config = write_config(tmp_path / "gateway.json", {
        s: scripted(s, "--spawn-grandchild", "--pid-file", f) for s, f in pid_files.items()})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.initialize()
        gw.wait_listed(has_all("a__echo", "b__echo"))
        pids = pids_in(pid_files.values())
        assert len(pids) == 4 and all(alive(p) for p in pids)
        gw.proc.send_signal(signum)
        gw.proc.wait(timeout=10)
        assert wait_all_gone(pids) == []
    finally:
        gw.kill()
        kill_leftovers(pids_in(pid_files.values()))


# --- reload ----------------------------------------------------------------------------------

async def test_removing_a_server_from_the_config_drains_it(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a"),
                                                      "b": scripted("b", "--log", tmp_path / "b.log")})
    changes = []

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changes.append(time.monotonic())

    with anyio.fail_after(15):
        async with client(tmp_path, config, message_handler=on_message) as c:
            await listed(c, has_all("a__echo", "b__echo"))
            in_flight = {}

            async def long_call():
                in_flight["r"] = await c.call_tool("b__slow", {"seconds": 4})

            async with anyio.create_task_group() as tg:
                tg.start_soon(long_call)
                await poll(lambda: calls_received(tmp_path / "b.log", "slow"), 5, "b's call to arrive")
                edited = time.monotonic()
                write_config(config, {"a": scripted("a")})
                names = await listed(c, lambda n: not prefixed(n, "b"), timeout=2)
                assert "a__echo" in names
                await poll(lambda: [t for t in changes if t >= edited], 1, "tools/list_changed")
                refused = await error_text(c, "b__echo", {"text": "x"})
                assert "removed" in refused.lower(), refused
            # A call in flight when the server was removed gets to finish (--drain, 30 s by default).
            assert text_of(in_flight["r"]) == "b: slept 4"
    assert calls_received(tmp_path / "b.log", "echo") == []


async def test_adding_a_server_to_the_config_lists_its_tools(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a")})
    changes = []

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changes.append(message)

    with anyio.fail_after(15):
        async with client(tmp_path, config, message_handler=on_message) as c:
            await listed(c, has_all("a__echo"))
            seen = len(changes)
            write_config(config, {"a": scripted("a"), "c": scripted("c")})
            await listed(c, has_all("a__echo", "c__echo"), timeout=3)
            assert text_of(await c.call_tool("c__echo", {"text": "new"})) == "c: new"
            assert len(changes) > seen, "the client was told the list changed"


# --- servers that die or are removed with calls in flight, and edits ---------------------------

async def test_a_server_that_dies_fails_its_calls_in_flight(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"d": scripted("d", "--crash-after", 1, "--log", tmp_path / "d.log")})
    with anyio.fail_after(15):
        async with client(tmp_path, config) as c:
            await listed(c, has_all("d__slow"))
            outcome = {}

            async def long_call():
                try:
                    outcome["result"] = await c.call_tool("d__slow", {"seconds": 30})
                except MCPError as e:
                    outcome["error"] = e

            async with anyio.create_task_group() as tg:
                tg.start_soon(long_call)
                await poll(lambda: calls_received(tmp_path / "d.log", "slow"), 5, "the long call to arrive")
                started = time.monotonic()
                assert text_of(await c.call_tool("d__echo", {"text": "last"})) == "d: last"  # then it exits
            assert time.monotonic() - started < 5, "the call in flight fails when its server dies"
    assert "error" in outcome or outcome["result"].is_error, outcome


async def test_after_drain_seconds_a_call_in_flight_on_a_removed_server_is_cancelled(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a"), "b": scripted("b", "--log", tmp_path / "b.log")})
    with anyio.fail_after(15):
        async with client(tmp_path, config, "--drain", "1") as c:
            await listed(c, has_all("b__slow"))
            outcome = {}

            async def long_call():
                try:
                    outcome["result"] = await c.call_tool("b__slow", {"seconds": 30})
                except MCPError as e:
                    outcome["error"] = e

            async with anyio.create_task_group() as tg:
                tg.start_soon(long_call)
                await poll(lambda: calls_received(tmp_path / "b.log", "slow"), 5, "the long call to arrive")
                write_config(config, {"a": scripted("a")})
                removed = time.monotonic()
            assert time.monotonic() - removed < 5, "the call ends about --drain seconds after the removal"
    assert "error" in outcome or outcome["result"].is_error, outcome
    # The server is told before it is stopped (it may be stopped before it logs that it stopped the call).
    slow_id = calls_received(tmp_path / "b.log", "slow")[0]["id"]
    cancels = [m for m in read_log(tmp_path / "b.log")[0] if m.get("method") == "notifications/cancelled"]
    assert [m["params"]["requestId"] for m in cancels] == [slow_id]


async def test_an_invalid_edit_keeps_what_runs_and_a_changed_server_starts_anew(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a"), "b": scripted("b")})
    with anyio.fail_after(15):
        async with client(tmp_path, config) as c:
            await listed(c, has_all("a__whoami", "b__whoami"))
            first = json.loads(text_of(await c.call_tool("b__whoami", {})))["pid"]
            config.write_text('{"mcpServers": {"a": ')
            await anyio.sleep(1.5)  # the gateway reads edits within a second: nothing may change
            assert has_all("a__echo", "b__echo")(set(await tool_names(c)))
            assert json.loads(text_of(await c.call_tool("b__whoami", {})))["pid"] == first
            write_config(config, {"a": scripted("a"), "b": scripted("b", "--tools", 1)})
            await listed(c, has_all("b__tool_0"), timeout=3)
            assert json.loads(text_of(await c.call_tool("b__whoami", {})))["pid"] != first


async def test_a_call_held_for_a_person_is_not_sent_after_its_server_died(tmp_path):
    """A call a `prompt` rule holds, whose server dies (and restarts) while the person
    thinks, is answered with an error and never reaches the next run, even when the person
    then allows it."""
    policy = """
[[rule]]
id = "ask-echo"
action = "prompt"
server = "a"
tool = "echo"

[[rule]]
action = "allow"
method = "**"
"""
    log = tmp_path / "a.log"
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a", "--crash-after", 1, "--log", log)})
    holder = {}

    async def person(context, params):
        # While the call waits: a call that makes the server exit after answering it.
        await holder["client"].call_tool("a__whoami", {})
        await anyio.sleep(1.5)  # it exits and is started again
        return types.ElicitResult(action="accept", content={"decision": "allow_once"})

    with anyio.fail_after(30):
        async with client(tmp_path, config, policy=policy, elicitation_callback=person) as c:
            holder["client"] = c
            await listed(c, has_all("a__echo"))
            with pytest.raises(MCPError) as failed:
                await c.call_tool("a__echo", {"text": "held"})
            assert "stopped" in failed.value.message, failed.value
            await anyio.sleep(2.5)  # the person allows it meanwhile; the new run is up
    assert calls_received(log, "echo") == [], "the held call never reached any run of the server"


def test_a_policy_reload_that_always_denies_a_tool_takes_it_out_of_the_lists_and_says_so(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a")})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.initialize()
        gw.wait_listed(has_all("a__echo", "a__whoami"))
        gw.others.clear()
        policy = tmp_path / "policy.toml"  # written by gateway_args
        policy.write_text('[[rule]]\nid = "no-echo"\naction = "deny"\nserver = "a"\ntool = "echo"\n\n'
                          '[[rule]]\naction = "allow"\nmethod = "**"\n')
        deadline = time.monotonic() + 5
        while not any(m.get("method") == "notifications/tools/list_changed" for m in gw.others):
            assert time.monotonic() < deadline, "no list_changed after the policy changed"
            gw.request(f"ping-{time.monotonic_ns()}", "ping")
            time.sleep(0.05)
        names = gw.tool_names()
        assert "a__echo" not in names and "a__whoami" in names
        denied = json.loads(gw.read_response(gw.send({"id": 99, "method": "tools/call",
                                                      "params": {"name": "a__echo", "arguments": {"text": "x"}}}) or 99))
        assert denied["result"]["isError"] and "no-echo" in denied["result"]["content"][0]["text"], denied
    finally:
        gw.kill()
