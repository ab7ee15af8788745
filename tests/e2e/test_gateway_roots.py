"""A client's `notifications/roots/list_changed` through `clawai gateway`: it reaches the
servers that asked that client for its roots, and no other."""

import time

import anyio
import pytest
from mcp import types

from gateway_support import client, gateway_missing, has_all, listed, read_log, scripted, text_of, write_config

_MISSING = gateway_missing()
pytestmark = [pytest.mark.anyio, pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")]


@pytest.fixture
def anyio_backend():
    return "asyncio"


def told(log) -> int:
    messages, _ = read_log(log)
    return len([m for m in messages if m.get("method") == "notifications/roots/list_changed"])


async def test_a_roots_change_reaches_the_servers_that_asked_that_client(tmp_path):
    asked_log, other_log = tmp_path / "asked.jsonl", tmp_path / "other.jsonl"
    config = write_config(tmp_path / "gateway.json", {"asked": scripted("asked", "--log", asked_log),
                                                      "other": scripted("other", "--log", other_log)})
    roots = [types.Root(uri="file:///tmp/first", name="first")]

    async def list_roots(context):
        return types.ListRootsResult(roots=roots)

    with anyio.fail_after(20):
        async with client(tmp_path, config, list_roots_callback=list_roots) as c:
            await listed(c, has_all("asked__roots", "other__echo"))
            assert "file:///tmp/first" in text_of(await c.call_tool("asked__roots", {}))
            assert text_of(await c.call_tool("other__echo", {"text": "x"})) == "other: x"
            roots[:] = [types.Root(uri="file:///tmp/second", name="second")]
            await c.send_roots_list_changed()
            deadline = time.monotonic() + 10
            while told(asked_log) == 0:
                assert time.monotonic() < deadline, "the server that asked for roots was not told they changed"
                await anyio.sleep(0.05)
            # The server asks again, during a call, and gets the new roots.
            assert "file:///tmp/second" in text_of(await c.call_tool("asked__roots", {}))
    assert told(asked_log) == 1
    assert told(other_log) == 0, "a server that never asked this client is not told"
