"""`subscriptions/listen` through `clawai gateway` (2026-07-28), over stdio (the official client
in auto mode) and over `--listen` (each subscription on the event stream of its POST): the
gateway acknowledges the list changes it tells and the resources it can follow, tells a
subscription when what its session sees changes (a skill it activates or ends), and takes
resource subscriptions to the servers that hold them (merged from every server), each update
to the subscription that asked for it only."""

import http.client
import json
import os
import subprocess
import time
import urllib.parse

import anyio
import pytest
from mcp import Client

from conftest import clawai_bin
from gateway_support import (client, gateway_args, gateway_missing, has_all, listed, own_state, poll, read_log,
                             scripted, write_config)
from test_conformance import free_port, stop
from test_gateway_views import listed_names, post_modern
from test_http import wait_until_listening

_MISSING = gateway_missing()
pytestmark = [pytest.mark.anyio, pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")]


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_a_subscription_is_told_when_the_sessions_tool_list_changes(tmp_path):
    skill = tmp_path / "skills" / "hidden-tools"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: hidden-tools\nallowed-tools:\n  - hidden__*\n---\nUse them.\n")
    config = write_config(tmp_path / "gateway.json", {"shown": scripted("shown"),
                                                      "hidden": scripted("hidden", internal_only=True)})
    with anyio.fail_after(30):
        async with client(tmp_path, config, "--skills", str(tmp_path / "skills"), mode="auto") as c:
            await listed(c, has_all("shown__echo", "skill__hidden-tools"))
            async with c.listen(tools_list_changed=True, prompts_list_changed=True,
                                resource_subscriptions=["clawai://shown/mem://shared"]) as sub:
                assert sub.honored.tools_list_changed and sub.honored.prompts_list_changed
                assert sub.honored.resource_subscriptions == ["clawai://shown/mem://shared"], sub.honored
                # The resource changes at its server: the update arrives under the gateway's URI.
                await c.call_tool("shown__touch", {"uri": "mem://shared"})
                event = await sub.__anext__()
                assert type(event).__name__ == "ResourceUpdated" and event.uri == "clawai://shown/mem://shared", event
                # The session's view changes: its skill shows the hidden server's tools.
                await c.call_tool("skill__hidden-tools", {})
                event = await sub.__anext__()
                assert type(event).__name__ == "ToolsListChanged", event
                assert "hidden__echo" in {t.name for t in (await c.list_tools()).tools}
                # And back, when the skill ends.
                await c.call_tool("skill__hidden-tools", {"deactivate": True})
                event = await sub.__anext__()
                assert type(event).__name__ == "ToolsListChanged", event
                assert "hidden__echo" not in {t.name for t in (await c.list_tools()).tools}


class Stream:
    """A `subscriptions/listen` POST of a 2026-07-28 client (no session) over HTTP, read as
    its events come."""

    def __init__(self, url: str, rid, notifications: dict, token: str):
        parsed = urllib.parse.urlparse(url)
        self.connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=15)
        params = {"notifications": notifications, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                                             "io.modelcontextprotocol/clientCapabilities": {}}}
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen", "params": params})
        self.connection.request("POST", parsed.path, body, {
            "content-type": "application/json", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28", "mcp-method": "subscriptions/listen",
            "authorization": f"Bearer {token}"})
        self.response = self.connection.getresponse()
        assert self.response.status == 200, self.response.read()
        assert self.response.getheader("content-type").startswith("text/event-stream")

    def next(self) -> dict:
        """The next message on the stream."""
        while True:
            line = self.response.readline()
            assert line, "the stream ended"
            if line.startswith(b"data:") and line[5:].strip():
                return json.loads(line[5:])

    def close(self) -> None:
        self.connection.close()


def test_over_listen_each_subscription_is_told_on_its_own_stream_what_it_asked(tmp_path):
    skill = tmp_path / "skills" / "hidden-tools"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: hidden-tools\nallowed-tools:\n  - hidden__*\n---\nUse them.\n")
    shown_log = tmp_path / "shown.log"
    config = write_config(tmp_path / "gateway.json", {"shown": scripted("shown", "--log", shown_log),
                                                      "other": scripted("other"),
                                                      "hidden": scripted("hidden", internal_only=True)})
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with open(tmp_path / "gateway.err", "wb") as err:
        proc = subprocess.Popen([clawai_bin(), *gateway_args(tmp_path, config), "--skills", str(tmp_path / "skills"),
                                 "--listen", f"127.0.0.1:{port}"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err, start_new_session=True, env=own_state(tmp_path, dict(os.environ)),
                                cwd=tmp_path)
    streams = []
    try:
        wait_until_listening(port, proc)
        deadline = time.monotonic() + 15
        while not {"shown__touch", "other__touch"} <= listed_names(url, "alice"):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        # Alice follows her tools and two resources of two servers (and one that is nowhere).
        asked = ["clawai://shown/mem://shared", "clawai://other/mem://shared", "clawai://nowhere/mem://x"]
        alice = Stream(url, 7, {"toolsListChanged": True, "resourceSubscriptions": asked}, "alice")
        streams.append(alice)
        ack = alice.next()
        assert ack["method"] == "notifications/subscriptions/acknowledged", ack
        assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 7, ack
        assert ack["params"]["notifications"] == {"toolsListChanged": True, "resourceSubscriptions": asked[:2]}, ack
        # Bob, another principal, follows his tools under the same request id.
        bob = Stream(url, 7, {"toolsListChanged": True}, "bob")
        streams.append(bob)
        assert bob.next()["params"]["notifications"] == {"toolsListChanged": True}
        # Alice's skill changes her view: told on her stream, under her id.
        post_modern(url, 1, "tools/call", {"name": "skill__hidden-tools", "arguments": {}}, "alice")
        told = alice.next()
        assert told["method"] == "notifications/tools/list_changed", told
        assert told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 7, told
        # Bob changes both resources: each update reaches Alice, who asked, under the gateway's URI.
        for server in ("shown", "other"):
            post_modern(url, 2, "tools/call", {"name": f"{server}__touch", "arguments": {"uri": "mem://shared"}}, "bob")
            updated = alice.next()
            assert updated["method"] == "notifications/resources/updated", updated
            assert updated["params"]["uri"] == f"clawai://{server}/mem://shared", updated
            assert updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 7, updated
        # Bob's own change is the first thing on his stream: nothing of Alice's came before it.
        post_modern(url, 3, "tools/call", {"name": "skill__hidden-tools", "arguments": {}}, "bob")
        told = bob.next()
        assert told["method"] == "notifications/tools/list_changed", told
        assert told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 7, told
        # Alice closes her stream: her subscription ends, and the server, which nobody else
        # asked for the resource, is unsubscribed.
        alice.close()
        deadline = time.monotonic() + 10
        while not [m for m in read_log(shown_log)[0] if m.get("method") == "resources/unsubscribe"]:
            assert time.monotonic() < deadline, "the server was never unsubscribed"
            time.sleep(0.05)
        subscriptions = [(m["method"], m["params"]["uri"]) for m in read_log(shown_log)[0]
                         if m.get("method", "").startswith("resources/") and "subscribe" in m["method"]]
        assert subscriptions == [("resources/subscribe", "mem://shared"), ("resources/unsubscribe", "mem://shared")]
    finally:
        for stream in streams:
            stream.close()
        stop(proc)


async def test_the_official_client_over_listen_gets_its_subscriptions_events(tmp_path):
    skill = tmp_path / "skills" / "hidden-tools"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: hidden-tools\nallowed-tools:\n  - hidden__*\n---\nUse them.\n")
    config = write_config(tmp_path / "gateway.json", {"shown": scripted("shown"),
                                                      "hidden": scripted("hidden", internal_only=True)})
    port = free_port()
    with open(tmp_path / "gateway.err", "wb") as err:
        proc = subprocess.Popen([clawai_bin(), *gateway_args(tmp_path, config), "--skills", str(tmp_path / "skills"),
                                 "--listen", f"127.0.0.1:{port}"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err, start_new_session=True, env=own_state(tmp_path, dict(os.environ)),
                                cwd=tmp_path)
    try:
        wait_until_listening(port, proc)
        with anyio.fail_after(30):
            async with Client(f"http://127.0.0.1:{port}/mcp", mode="auto", cache=None) as c:
                assert c.session.protocol_version == "2026-07-28"
                await listed(c, has_all("shown__touch", "skill__hidden-tools"), timeout=15)
                async with c.listen(tools_list_changed=True,
                                    resource_subscriptions=["clawai://shown/mem://shared"]) as sub:
                    assert sub.honored.tools_list_changed, sub.honored
                    assert sub.honored.resource_subscriptions == ["clawai://shown/mem://shared"], sub.honored
                    await c.call_tool("shown__touch", {"uri": "mem://shared"})
                    event = await sub.__anext__()
                    assert type(event).__name__ == "ResourceUpdated", event
                    assert event.uri == "clawai://shown/mem://shared", event
                    # The skill shows the hidden server's tools (and only those) to this client.
                    await c.call_tool("skill__hidden-tools", {})
                    event = await sub.__anext__()
                    assert type(event).__name__ == "ToolsListChanged", event
    finally:
        stop(proc)


async def test_a_server_that_restarts_is_subscribed_again_for_the_subscriptions_that_follow_it(tmp_path):
    log = tmp_path / "a.log"
    # The server exits after answering its first call, and is started again.
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a", "--log", log, "--crash-after", 1)})

    def subscribes() -> list:
        return [m for m in read_log(log)[0] if m.get("method") == "resources/subscribe"]

    with anyio.fail_after(30):
        async with client(tmp_path, config, mode="auto") as c:
            await listed(c, has_all("a__touch"))
            async with c.listen(resource_subscriptions=["clawai://a/mem://shared"]) as sub:
                assert sub.honored.resource_subscriptions == ["clawai://a/mem://shared"], sub.honored
                await c.call_tool("a__echo", {"text": "and then exit"})
                # Started again, the server is subscribed again (it forgot its subscriptions).
                await poll(lambda: len(subscribes()) == 2, 15, "the restarted server to be subscribed again")
                await listed(c, has_all("a__touch"), timeout=15)
                await c.call_tool("a__touch", {"uri": "mem://shared"})
                event = await sub.__anext__()
                assert type(event).__name__ == "ResourceUpdated" and event.uri == "clawai://a/mem://shared", event
    assert [m["params"]["uri"] for m in subscribes()] == ["mem://shared", "mem://shared"]
