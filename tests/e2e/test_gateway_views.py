"""What one client of `clawai gateway` sees, and what changes it: a client's own
configuration file served as it is lists its servers' tools (as that client did), while
clawai's own gateway file keeps servers internal and the gateway says which and how to show
them; a skill a 2026-07-28 client (no session) activates over `--listen` changes the view of
its principal (its Authorization) only."""

import json
import os
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import clawai_bin
from gateway_support import RawGateway, gateway_args, gateway_missing, has_all, own_state, scripted
from test_conformance import free_port, stop
from test_http import wait_until_listening

_MISSING = gateway_missing()
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")

MODERN = "2026-07-28"


def stderr_at_exit(gw: RawGateway) -> str:
    gw.close()
    deadline = time.monotonic() + 10
    while not (gw.stderr and gw.stderr[-1] == b""):
        assert time.monotonic() < deadline, "the gateway's stderr never ended"
        time.sleep(0.05)
    return b"".join(gw.stderr).decode()


def test_a_claude_desktop_file_served_as_it_is_lists_its_servers_tools(tmp_path):
    desktop = tmp_path / "home" / ".config" / "Claude" / "claude_desktop_config.json"
    desktop.parent.mkdir(parents=True)
    desktop.write_text(json.dumps({"globalShortcut": "Ctrl+Space",
                                   "mcpServers": {"memory": scripted("memory", internal_only=None)}}))
    gw = RawGateway(tmp_path, gateway_args(tmp_path, desktop))
    try:
        gw.initialize()
        names = gw.wait_listed(has_all("memory__echo"), timeout=10)
        assert {"memory__echo", "memory__whoami", "search_tools"} <= names
        stderr = stderr_at_exit(gw)
    finally:
        gw.kill()
    assert "internal" not in stderr, stderr


def test_clawais_own_file_keeps_servers_internal_and_says_which_and_how_to_show_them(tmp_path):
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"memory": scripted("memory", internal_only=None),
                                                 "shown": scripted("shown")}}))
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.initialize()
        names = gw.wait_listed(has_all("shown__echo"), timeout=10)
        assert not [n for n in names if n.startswith("memory__")], names
        stderr = stderr_at_exit(gw)
    finally:
        gw.kill()
    told = [line for line in stderr.splitlines() if "internal servers" in line]
    assert len(told) == 1 and ": memory;" in told[0], stderr
    assert '`"internalOnly": false`' in told[0] and "skill" in told[0], told


def post_modern(url: str, rid: int, method: str, params: dict, token: str | None, meta: dict | None = None) -> dict:
    """One 2026-07-28 request (no session), as the Python SDK sends it; `meta` adds to its `_meta`."""
    params = {**params, "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                  "io.modelcontextprotocol/clientCapabilities": {}, **(meta or {})}}
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": MODERN, "mcp-method": method}
    if "name" in params:
        headers["mcp-name"] = params["name"]
    if token:
        headers["authorization"] = f"Bearer {token}"
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=10) as response:
            text = response.read().decode()
    except urllib.error.HTTPError as refused:  # an error answer may come with a 4xx status
        text = refused.read().decode()
    if text.startswith(("event:", "data:")):
        messages = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]
        return next(m for m in messages if m.get("id") == rid)
    return json.loads(text)


def listed_names(url: str, token: str | None) -> set[str]:
    answer = post_modern(url, 1, "tools/list", {}, token)
    return {tool["name"] for tool in answer["result"]["tools"]}


def test_a_skill_a_stateless_client_activates_changes_its_principals_view_only(tmp_path):
    skill = tmp_path / "skills" / "hidden-tools"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: hidden-tools\nallowed-tools:\n  - hidden__*\n---\nUse them.\n")
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"hidden": scripted("hidden", internal_only=True),
                                                 "shown": scripted("shown")}}))
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with open(tmp_path / "gateway.err", "wb") as err:
        proc = subprocess.Popen([clawai_bin(), *gateway_args(tmp_path, config), "--skills", str(tmp_path / "skills"),
                                 "--listen", f"127.0.0.1:{port}"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err, start_new_session=True, env=own_state(tmp_path, dict(os.environ)),
                                cwd=tmp_path)
    try:
        wait_until_listening(port, proc)
        deadline = time.monotonic() + 15
        while "shown__echo" not in listed_names(url, "alice"):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        answer = post_modern(url, 2, "tools/call", {"name": "skill__hidden-tools", "arguments": {}}, "alice")
        assert not answer["result"].get("isError"), answer
        assert "hidden__echo" in listed_names(url, "alice"), "the skill shows its tools to the client that asked"
        for other in ("bob", None):
            names = listed_names(url, other)
            assert "shown__echo" in names and not [n for n in names if n.startswith("hidden__")], (other, names)
        # The same principal, a later request: still its view.
        assert "hidden__echo" in listed_names(url, "alice")
    finally:
        stop(proc)
