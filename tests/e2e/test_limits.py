"""Limits and taint (`rate`, `taint`, `tainted`) with the official Python `mcp` client:
through `clawai proxy` in front of the official server-filesystem, reading a private file
taints the session and a later write (the way data leaves) is denied, the file never written;
a `rate` rule lets its limit by and denies the call beyond it; through `clawai gateway`, a read
on one server taints the client session's calls to another server, and another client session
stays clean."""

import os
import subprocess

import anyio
import pytest
from mcp import Client, StdioServerParameters

from conftest import FILESYSTEM, clawai_bin, read_audit, write_policy
from gateway_support import (calls_received, gateway_args, gateway_missing, has_all, listed, own_state, scripted,
                             write_config)
from test_conformance import free_port, stop
from test_http import wait_until_listening

pytestmark = pytest.mark.anyio

SECRET = "PRIVATE-9c1e77"


@pytest.fixture
def anyio_backend():
    return "asyncio"


def filesystem_policy(root) -> str:
    return f"""
[defaults]
action = "allow"

[[rule]]
id = "reads-private"
action = "allow"
tools = ["read_text_file", "read_file", "read_multiple_files"]
any_arg = "{root}/private/**"
taint = "private"

[[rule]]
id = "no-writes-after-private"
action = "deny"
tools = ["write_file", "edit_file", "move_file"]
tainted = "private"
description = "a session that read private files writes nothing"

[[rule]]
id = "listing-flood"
action = "deny"
tool = "list_directory"
rate = "3/min"
"""


def proxied(tmp_path, root) -> Client:
    policy = write_policy(tmp_path, filesystem_policy(root))
    args = ["proxy", "--policy", str(policy), "--audit", str(tmp_path / "audit.jsonl"), "--server", "filesystem",
            "--", "node", str(FILESYSTEM), str(root)]
    return Client(StdioServerParameters(command=clawai_bin(), args=args), mode="legacy")


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "root"
    (root / "private").mkdir(parents=True)
    (root / "private" / "salary.txt").write_text(SECRET)
    (root / "public.txt").write_text("public")
    return root


def text(result) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def decisions(tmp_path, tool: str) -> list[tuple[str, str | None]]:
    return [(e["decision"], e.get("rule")) for e in read_audit(tmp_path / "audit.jsonl")
            if e.get("method") == "tools/call" and e.get("tool") == tool and "decision" in e]


async def test_after_a_private_read_the_session_writes_nothing(tmp_path, root):
    with anyio.fail_after(60):
        async with proxied(tmp_path, root) as c:
            # A clean session writes.
            ok = await c.call_tool("write_file", {"path": str(root / "before.txt"), "content": "fine"})
            assert not ok.is_error, ok
            # A public read leaves the session clean.
            assert not (await c.call_tool("read_text_file", {"path": str(root / "public.txt")})).is_error
            ok = await c.call_tool("write_file", {"path": str(root / "still.txt"), "content": "fine"})
            assert not ok.is_error, ok
            # The private read is allowed, and taints the session.
            read = await c.call_tool("read_text_file", {"path": str(root / "private" / "salary.txt")})
            assert SECRET in read.content[0].text
            denied = await c.call_tool("write_file", {"path": str(root / "leak.txt"), "content": SECRET})
            assert denied.is_error
            assert "no-writes-after-private" in denied.content[0].text, denied
    assert (root / "before.txt").exists() and (root / "still.txt").exists()
    assert not (root / "leak.txt").exists(), "the denied write reached the server"
    assert decisions(tmp_path, "write_file") == [("allow", None), ("allow", None), ("deny", "no-writes-after-private")]
    # The trail says which call tainted the session.
    reads = [e for e in read_audit(tmp_path / "audit.jsonl") if e.get("tool") == "read_text_file" and "decision" in e]
    assert [e.get("tainted") for e in reads] == [None, ["private"]], reads


async def test_a_private_read_taints_however_it_is_spelt(tmp_path, root):
    """The rule allows single reads in the private tree; a read of several files, one of them
    private, or a path spelt with `./`, is not what that allow decides, and still taints."""
    for tool, arguments in [
        ("read_multiple_files", {"paths": [str(root / "public.txt"), str(root / "private" / "salary.txt")]}),
        ("read_text_file", {"path": f"{root}/./private/salary.txt"}),
    ]:
        with anyio.fail_after(60):
            async with proxied(tmp_path, root) as c:
                read = await c.call_tool(tool, arguments)
                assert SECRET in text(read), read
                denied = await c.call_tool("write_file", {"path": str(root / "leak.txt"), "content": SECRET})
                assert denied.is_error and "no-writes-after-private" in text(denied), (tool, denied)
        assert not (root / "leak.txt").exists()


async def test_a_new_session_is_clean_again(tmp_path, root):
    with anyio.fail_after(60):
        async with proxied(tmp_path, root) as c:
            await c.call_tool("read_text_file", {"path": str(root / "private" / "salary.txt")})
            assert (await c.call_tool("write_file", {"path": str(root / "x.txt"), "content": "x"})).is_error
        async with proxied(tmp_path, root) as c:
            ok = await c.call_tool("write_file", {"path": str(root / "y.txt"), "content": "y"})
            assert not ok.is_error, "a new proxy session starts without labels"
    assert (root / "y.txt").exists() and not (root / "x.txt").exists()


async def test_a_rate_lets_its_limit_by_and_denies_beyond_it(tmp_path, root):
    with anyio.fail_after(60):
        async with proxied(tmp_path, root) as c:
            for _ in range(3):
                assert not (await c.call_tool("list_directory", {"path": str(root)})).is_error
            denied = await c.call_tool("list_directory", {"path": str(root)})
            assert denied.is_error and "listing-flood" in denied.content[0].text, denied
            # Other tools are not limited.
            assert not (await c.call_tool("read_text_file", {"path": str(root / "public.txt")})).is_error
    assert decisions(tmp_path, "list_directory") == [("allow", None)] * 3 + [("deny", "listing-flood")]


GATEWAY_POLICY = """
[defaults]
action = "allow"

[[rule]]
id = "reads-private"
action = "allow"
server = "vault"
tool = "echo"
taint = "private"

[[rule]]
id = "nothing-out-after-private"
action = "deny"
server = "outside"
tool = "touch"
tainted = "private"
"""


async def test_through_the_gateway_a_read_on_one_server_taints_that_sessions_calls_to_another(tmp_path):
    if why := gateway_missing():
        pytest.skip(why)
    log = tmp_path / "outside.log"
    config = write_config(tmp_path / "gateway.json", {
        "vault": scripted("vault"),
        "outside": scripted("outside", "--log", log),
    })
    port = free_port()
    with open(tmp_path / "gateway.err", "wb") as err:
        proc = subprocess.Popen([clawai_bin(), *gateway_args(tmp_path, config, GATEWAY_POLICY),
                                 "--listen", f"127.0.0.1:{port}"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True, env=own_state(tmp_path, dict(os.environ)), cwd=tmp_path)
    wanted = has_all("vault__echo", "outside__touch")
    try:
        wait_until_listening(port, proc)
        with anyio.fail_after(60):
            async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy", cache=None) as first, \
                    Client(f"http://127.0.0.1:{port}/mcp", mode="legacy", cache=None) as second:
                await listed(first, wanted)
                await listed(second, wanted)
                assert not (await first.call_tool("outside__touch", {"uri": "a"})).is_error, "clean session"
                assert not (await first.call_tool("vault__echo", {"text": "the secret"})).is_error
                denied = await first.call_tool("outside__touch", {"uri": "b"})
                assert denied.is_error and "nothing-out-after-private" in denied.content[0].text, denied
                ok = await second.call_tool("outside__touch", {"uri": "c"})
                assert not ok.is_error, "another client session of the same gateway is not tainted"
    finally:
        stop(proc)
    touched = [m["params"]["arguments"]["uri"] for m in calls_received(log, "touch")]
    assert sorted(touched) == ["a", "c"], touched


RETRIED_POLICY = """
[[rule]]
id = "arithmetic-flood"
action = "deny"
tool = "calculator"
rate = "2/min"

[[rule]]
id = "ask-arithmetic"
action = "prompt"
tool = "calculator"

[[rule]]
id = "rest"
action = "allow"
method = "**"
"""


async def test_a_call_a_person_approved_through_a_retry_counts_once(tmp_path):
    """A 2026-07-28 client gets clawai's question as an input_required result and retries
    the call with the answer: the retry is the same call, counted once by `rate`."""
    from mcp import types
    from test_approvals import home_env
    from test_sdk import example

    questions = []

    async def person(context, params):
        questions.append(params)
        return types.ElicitResult(action="accept", content={"decision": "allow_once"})

    policy = write_policy(tmp_path, RETRIED_POLICY)
    args = ["proxy", "--policy", str(policy), "--audit", str(tmp_path / "audit.jsonl"),
            "--approvals", str(tmp_path / "none.toml"), "--server", "math", "--", example("calculator")]
    params = StdioServerParameters(command=clawai_bin(), args=args, env=home_env(tmp_path))
    with anyio.fail_after(60):
        async with Client(params, mode="auto", elicitation_callback=person) as c:
            assert c.session.protocol_version == "2026-07-28"
            for a in (1, 2):
                result = await c.call_tool("calculator", {"operation": "add", "a": a, "b": 1})
                assert not result.is_error and text(result) == f"Result: {a + 1}", result
            third = await c.call_tool("calculator", {"operation": "add", "a": 3, "b": 1})
            assert third.is_error and "arithmetic-flood" in text(third), third
    assert len(questions) == 2, "the third call was denied without asking"
