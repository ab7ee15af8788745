"""`clawai gateway` in front of servers that speak only 2026-07-28 (no `initialize`:
tests/e2e/servers/modern_server.py), over stdio and over HTTP, beside an older one: each is
discovered with `server/discover`, listed and called, every request to it carries the
revision in `_meta`, and its `input_required` results reach the calling client, whose retry
with the answer completes the call."""

import contextlib
import json
import pathlib
import subprocess
import sys
import time

import anyio
import pytest
from mcp import types

from conftest import ALLOW_ALL
from gateway_support import client, gateway_missing, has_all, listed, poll, scripted, text_of, write_config

SERVER = pathlib.Path(__file__).parent / "servers" / "modern_server.py"
_MISSING = gateway_missing()
pytestmark = [pytest.mark.anyio, pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")]


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def modern_http(tmp_path):
    """The modern server over HTTP: (url, its log)."""
    with serve_modern_http(tmp_path) as served:
        yield served


@contextlib.contextmanager
def serve_modern_http(tmp_path, *flags):
    port_file, log = tmp_path / "http-port", tmp_path / "http.jsonl"
    proc = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port_file), "--name", "h", "--log", str(log),
                             *flags])
    try:
        deadline = time.monotonic() + 10
        while not (port_file.exists() and port_file.read_text()):
            assert time.monotonic() < deadline, "the HTTP server did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text()}/mcp", log
    finally:
        proc.kill()
        proc.wait()


def logged(path: pathlib.Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_modern_only_servers_over_stdio_and_http_are_listed_and_called_beside_an_old_one(tmp_path, modern_http,
                                                                                                mode):
    url, http_log = modern_http
    stdio_log = tmp_path / "stdio.jsonl"
    config = write_config(tmp_path / "gateway.json", {
        "m": {"command": sys.executable, "args": [str(SERVER), "--name", "m", "--log", str(stdio_log)],
              "internalOnly": False},
        "h": {"url": url, "internalOnly": False},
        "old": scripted("old"),
    })
    with anyio.fail_after(30):
        async with client(tmp_path, config, mode=mode) as c:
            await listed(c, has_all("m__echo", "m__confirm", "h__echo", "h__confirm", "old__echo"), timeout=15)
            assert text_of(await c.call_tool("m__echo", {"text": "over stdio"})) == "m: over stdio"
            assert text_of(await c.call_tool("h__echo", {"text": "over http"})) == "h: over http"
            assert text_of(await c.call_tool("old__echo", {"text": "as before"})) == "old: as before"
    for log in (stdio_log, http_log):
        requests = logged(log)
        methods = [r["method"] for r in requests]
        assert methods[:2] == ["initialize", "server/discover"], methods
        assert "notifications/initialized" not in methods
        after = [r for r in requests if r["method"] not in ("initialize", "server/discover")]
        assert after and all(r["meta"].get("io.modelcontextprotocol/protocolVersion") == "2026-07-28" for r in after)


async def test_an_input_required_result_of_a_modern_server_reaches_the_client_and_its_retry_completes(tmp_path):
    config = write_config(tmp_path / "gateway.json", {
        "m": {"command": sys.executable, "args": [str(SERVER), "--name", "m"], "internalOnly": False}})
    asked = []

    async def person(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    with anyio.fail_after(30):
        async with client(tmp_path, config, mode="auto", elicitation_callback=person) as c:
            await listed(c, has_all("m__confirm"), timeout=15)
            result = await c.call_tool("m__confirm", {})
            assert asked == ["sure?"]
            assert "confirmed with" in text_of(result) and '"ok": true' in text_of(result), result


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_modern_servers_list_changes_are_followed_and_the_sessions_told(tmp_path, modern_http, transport):
    """A 2026-07-28 server tells of list changes only on a `subscriptions/listen` stream: the
    gateway opens one, lists again when told, and tells its sessions `list_changed`."""
    url, http_log = modern_http
    stdio_log = tmp_path / "stdio.jsonl"
    server = {"stdio": {"command": sys.executable, "args": [str(SERVER), "--name", "m", "--log", str(stdio_log)],
                        "internalOnly": False},
              "http": {"url": url, "internalOnly": False}}[transport]
    log = {"stdio": stdio_log, "http": http_log}[transport]
    config = write_config(tmp_path / "gateway.json", {"m": server})
    told = []

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            told.append(message)

    # A tool added after the first listing would be held by pinning until approved.
    unpinned = ALLOW_ALL + "\n[guards]\npinning = false\n"
    with anyio.fail_after(30):
        async with client(tmp_path, config, policy=unpinned, message_handler=on_message) as c:
            await listed(c, has_all("m__add_tool"), timeout=15)
            # The gateway's subscription is open before the change is made.
            await poll(lambda: [r for r in logged(log) if r["method"] == "subscriptions/listen"], 10,
                       "the gateway to subscribe")
            told.clear()
            assert text_of(await c.call_tool("m__add_tool", {"name": "fresh"})) == "added fresh"
            await poll(lambda: told, 10, "notifications/tools/list_changed")
            await listed(c, has_all("m__fresh"), timeout=5)
            itself = {"stdio": "m", "http": "h"}[transport]  # the name the server gives itself
            assert text_of(await c.call_tool("m__fresh", {})) == f"{itself}: fresh called"
    listens = [r for r in logged(log) if r["method"] == "subscriptions/listen"]
    # The lists the server says change (its tools and resources), and nothing else was asked.
    assert listens[0]["params"]["notifications"] == {"toolsListChanged": True, "resourcesListChanged": True}, listens
    assert listens[0]["meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28", listens


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_modern_servers_resource_is_followed_for_the_subscription_that_asked(tmp_path, modern_http, transport):
    """A 2026-07-28 client's resource subscription, to a resource of a 2026-07-28 server: the
    gateway adds the resource to its own subscription to that server, and each update reaches
    the client's subscription under the gateway's URI."""
    url, http_log = modern_http
    stdio_log = tmp_path / "stdio.jsonl"
    server = {"stdio": {"command": sys.executable, "args": [str(SERVER), "--name", "m", "--log", str(stdio_log)],
                        "internalOnly": False},
              "http": {"url": url, "internalOnly": False}}[transport]
    log = {"stdio": stdio_log, "http": http_log}[transport]
    config = write_config(tmp_path / "gateway.json", {"m": server, "old": scripted("old")})
    with anyio.fail_after(30):
        async with client(tmp_path, config, mode="auto") as c:
            await listed(c, has_all("m__touch", "old__touch"), timeout=15)
            uris = ["clawai://m/mem://doc", "clawai://old/mem://shared"]
            async with c.listen(resource_subscriptions=uris) as sub:
                assert sub.honored.resource_subscriptions == uris, sub.honored
                for server_name, uri in [("m", "mem://doc"), ("old", "mem://shared")]:
                    await c.call_tool(f"{server_name}__touch", {"uri": uri})
                    event = await sub.__anext__()
                    assert type(event).__name__ == "ResourceUpdated", event
                    assert event.uri == f"clawai://{server_name}/{uri}", event
    listens = [r["params"]["notifications"] for r in logged(log) if r["method"] == "subscriptions/listen"]
    assert {"toolsListChanged": True, "resourcesListChanged": True, "resourceSubscriptions": ["mem://doc"]} in listens


async def test_an_older_clients_resource_subscription_to_a_modern_server_is_followed(tmp_path):
    """A 2025-11-25 client's `resources/subscribe` to a resource of a 2026-07-28 server (which
    has no such method): the gateway follows the resource on its subscription to the server,
    and the update reaches the client as `notifications/resources/updated`."""
    log = tmp_path / "m.jsonl"
    config = write_config(tmp_path / "gateway.json", {
        "m": {"command": sys.executable, "args": [str(SERVER), "--name", "m", "--log", str(log)],
              "internalOnly": False}})
    updated = []

    async def on_message(message):
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))

    with anyio.fail_after(30):
        async with client(tmp_path, config, message_handler=on_message) as c:
            await listed(c, has_all("m__touch"), timeout=15)
            await c.subscribe_resource("clawai://m/mem://doc")
            await c.call_tool("m__touch", {"uri": "mem://doc"})
            await poll(lambda: updated, 10, "notifications/resources/updated")
            await c.unsubscribe_resource("clawai://m/mem://doc")
    assert updated == ["clawai://m/mem://doc"]
    methods = [r["method"] for r in logged(log)]
    assert "resources/subscribe" not in methods, methods
    listens = [r["params"]["notifications"] for r in logged(log) if r["method"] == "subscriptions/listen"]
    assert any(listen.get("resourceSubscriptions") == ["mem://doc"] for listen in listens), listens


async def test_a_replaced_subscription_to_a_modern_http_server_is_closed(tmp_path):
    """Over HTTP a 2026-07-28 request is cancelled by closing its stream: when the gateway
    replaces its subscription to a server (a client now follows one of its resources), the old
    one's stream is closed, even by a server that ignores a cancellation POSTed beside it."""
    with serve_modern_http(tmp_path, "--cancel-by-close") as (url, log):
        config = write_config(tmp_path / "gateway.json", {"h": {"url": url, "internalOnly": False}})

        def listens() -> list:
            return [r for r in logged(log) if r["method"] == "subscriptions/listen"]

        with anyio.fail_after(30):
            async with client(tmp_path, config, mode="auto") as c:
                await listed(c, has_all("h__touch"), timeout=15)
                await poll(listens, 10, "the gateway to subscribe")
                async with c.listen(resource_subscriptions=["clawai://h/mem://doc"]) as sub:
                    assert sub.honored.resource_subscriptions == ["clawai://h/mem://doc"], sub.honored
                    first = listens()[0]["params"]
                    assert "resourceSubscriptions" not in first["notifications"], first

                    def ended() -> list:
                        return [r["params"]["id"] for r in logged(log) if r["method"] == "subscription ended"]

                    # The first subscription's stream is closed by the gateway.
                    await poll(lambda: ended(), 10, "the replaced subscription's stream to close")
                    await c.call_tool("h__touch", {"uri": "mem://doc"})
                    event = await sub.__anext__()
                    assert type(event).__name__ == "ResourceUpdated" and event.uri == "clawai://h/mem://doc", event
                # The client's subscription ended: the gateway's follows the lists only again.
                await poll(lambda: len(listens()) == 3, 10, "the gateway to subscribe without the resource")
        # Lists only; with the resource while the client followed it; lists only, once it stopped.
        followed = [r["params"]["notifications"].get("resourceSubscriptions") for r in listens()]
        assert followed == [None, ["mem://doc"], None], listens()
