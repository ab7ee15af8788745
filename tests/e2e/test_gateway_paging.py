"""`clawai gateway` end to end, paging through lists that change under the client: every
page of one listing comes from the list its first page was cut from, the change is told by
`list_changed`, and a client listing while many servers start gets a whole, consistent list
on its first try (no -32602, no item twice, no server half listed)."""

import time

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from gateway_support import (BASE_TOOLS, RawGateway, client, gateway_args, gateway_missing, has_all, listed, scripted,
                             write_config)

_MISSING = gateway_missing()
pytestmark = [pytest.mark.anyio, pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")]

SERVERS = 50
EXTRA_TOOLS = 100
PER_SERVER = len(BASE_TOOLS) + EXTRA_TOOLS


@pytest.fixture
def anyio_backend():
    return "asyncio"


def page_once(gw: RawGateway, page_pause: float) -> tuple[list[str], list[dict]]:
    """One listing of every tool, following nextCursor, starting again never: the names, and
    any error answer (which a client that pages at start-up must never get)."""
    names, errors, cursor, n = [], [], None, 0
    while True:
        n += 1
        page = gw.request(f"page-{n}", "tools/list", {"cursor": cursor} if cursor else {})
        if "error" in page:
            errors.append(page["error"])
            return names, errors
        names += [tool["name"] for tool in page["result"]["tools"]]
        cursor = page["result"].get("nextCursor")
        if not cursor:
            return names, errors
        time.sleep(page_pause)  # as a client that does something with each page: servers come up meanwhile


def test_a_client_listing_while_50_servers_start_gets_a_consistent_list_first_try(tmp_path):
    # 50 servers of 110 tools, listed 100 per page: 40 coming up one after another over
    # about 4 s, while the client pages, and the last 10 well after that listing.
    def start_delay(n: int) -> float:
        return round(n * 0.1 if n < 40 else 12 + (n - 40) * 0.1, 2)
    servers = {f"s{n:02}": scripted(f"s{n:02}", "--tools", EXTRA_TOOLS, "--slow-start", start_delay(n))
               for n in range(SERVERS)}
    config = write_config(tmp_path / "gateway.json", servers)
    gw = RawGateway(tmp_path, [*gateway_args(tmp_path, config), "--page-size", "100"])
    try:
        gw.initialize()
        # The listing starts once the first server is up (the list has pages), while the
        # others are still starting.
        deadline = time.monotonic() + 30
        while "nextCursor" not in gw.request(f"first-{time.monotonic_ns()}", "tools/list")["result"]:
            assert time.monotonic() < deadline, "no server came up in 30 s"
            time.sleep(0.05)
        names, errors = page_once(gw, page_pause=0.05)
        assert not errors, f"the first listing was refused: {errors}"
        assert len(names) == len(set(names)), "no tool twice in one listing"
        by_server: dict[str, int] = {}
        for name in names:
            server = name.split("__")[0]
            if server in servers:
                by_server[server] = by_server.get(server, 0) + 1
        half_listed = {server: count for server, count in by_server.items() if count != PER_SERVER}
        assert not half_listed, f"each server is listed whole or not at all: {half_listed}"
        assert {"search_tools"} <= set(names)
        assert 0 < len(by_server) < SERVERS
        # Servers came up after that list was cut: the client was told, and listing again
        # (as list_changed asks) gets them all, still without a refusal.
        if len(by_server) < SERVERS:
            deadline = time.monotonic() + 30
            while not any(m.get("method") == "notifications/tools/list_changed" for m in gw.others):
                assert time.monotonic() < deadline, "no list_changed after servers came up"
                gw.request(f"ping-{time.monotonic_ns()}", "ping")
        deadline = time.monotonic() + 30
        while True:
            names, errors = page_once(gw, page_pause=0)
            assert not errors, errors
            if len([n for n in names if n.split("__")[0] in servers]) == SERVERS * PER_SERVER:
                break
            assert time.monotonic() < deadline, f"only {len(names)} tools listed after 30 s"
            time.sleep(0.2)
        assert len(names) == len(set(names))
    finally:
        gw.kill()


async def test_a_cursor_from_before_the_list_changed_pages_the_list_as_it_was(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a", "--tools", 20)})
    with anyio.fail_after(20):
        async with client(tmp_path, config, "--page-size", "5") as c:
            await listed(c, has_all("a__tool_19"))
            first = await c.list_tools()
            assert first.next_cursor
            write_config(config, {"a": scripted("a", "--tools", 20), "c": scripted("c")})
            await listed(c, has_all("c__echo"), timeout=5)
            # The old listing goes on where it was, from the list as it was: no `c__` tool.
            names, cursor = [t.name for t in first.tools], first.next_cursor
            while cursor:
                page = await c.list_tools(cursor=cursor)
                names += [t.name for t in page.tools]
                cursor = page.next_cursor
            assert len(names) == len(set(names))
            assert {f"a__tool_{n}" for n in range(20)} <= set(names)
            assert not [n for n in names if n.startswith("c__")], names
            # A forged cursor is still refused.
            with pytest.raises(MCPError) as raised:
                await c.list_tools(cursor=first.next_cursor[:-2] + "AA")
            assert raised.value.code == -32602
