"""`clawai gateway` end to end, with the official Python client in front and scripted stdio
servers behind (tests/e2e/servers/scripted_server.py), plus the official npm servers:
namespacing, visibility, what a session may see, policy, pagination, resources shared
between servers, requests from servers to the client, the children's environment,
start-up errors, and HTTP sessions that reuse ids. Servers that are slow, crash, end,
or are edited away: test_gateway_lifecycle.py."""

import hashlib
import json
import os
import re
import subprocess
import time

import anyio
import pytest
from mcp import Client, types
from mcp.shared.exceptions import MCPError

from conftest import ALLOW_ALL, EVERYTHING, FILESYSTEM, clawai_bin, read_audit
from gateway_support import (BASE_TOOLS, LONG_TOOL_NAME, RawGateway, all_items, calls_received, client, error_text,
                             gateway_args, gateway_missing, has_all, listed, own_state, poll, prefixed, read_log,
                             run_gateway_to_failure, scripted, text_of, tool_names, write_config)
from test_conformance import free_port, stop
from test_http import wait_until_listening

_MISSING = gateway_missing()
pytestmark = [pytest.mark.anyio, pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")]


@pytest.fixture
def anyio_backend():
    return "asyncio"


def without_id(line: bytes) -> bytes:
    return re.sub(rb'"id":\s*[0-9]+', b'"id":_', line)


# --- names and routing -------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_tools_of_two_servers_are_listed_with_their_prefixes(tmp_path, mode):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a"), "b": scripted("b")})
    with anyio.fail_after(15):
        async with client(tmp_path, config, mode=mode) as c:
            names = await listed(c, has_all("a__echo", "b__echo"))
    assert prefixed(names, "a") == {f"a__{t}" for t in BASE_TOOLS}
    assert prefixed(names, "b") == {f"b__{t}" for t in BASE_TOOLS}
    assert not names & BASE_TOOLS, "no tool is listed under its bare upstream name"


async def test_a_call_is_routed_to_the_server_that_owns_the_tool(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a"), "b": scripted("b")})
    with anyio.fail_after(15):
        async with client(tmp_path, config) as c:
            await listed(c, has_all("a__whoami", "b__whoami"))
            assert json.loads(text_of(await c.call_tool("b__whoami", {})))["name"] == "b"
            assert json.loads(text_of(await c.call_tool("a__whoami", {})))["name"] == "a"
            assert text_of(await c.call_tool("a__echo", {"text": "hi"})) == "a: hi"
    calls = [e for e in read_audit(tmp_path / "audit.jsonl") if e.get("method") == "tools/call" and e.get("kind") == "request"]
    echo = [e for e in calls if e.get("listed_as") == "a__echo"]
    assert echo and echo[0]["server"] == "a" and echo[0]["tool"] == "echo", calls


async def test_internal_only_by_default_hides_a_server_and_its_tools_are_unknown(tmp_path):
    hidden = scripted("hidden", "--log", tmp_path / "hidden.log", internal_only=None)
    with_hidden = write_config(tmp_path / "with.json", {"pub": scripted("pub"), "hidden": hidden})
    without_hidden = write_config(tmp_path / "without.json", {"pub": scripted("pub")})
    responses = {}
    for label, config in (("with", with_hidden), ("without", without_hidden)):
        gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
        try:
            gw.initialize()
            names = gw.wait_listed(has_all("pub__echo"))
            assert not prefixed(names, "hidden")
            gw.send({"id": 7, "method": "tools/call", "params": {"name": "hidden__echo", "arguments": {"text": "x"}}})
            responses[label] = gw.read_response(7)
            gw.send({"id": 8, "method": "tools/call", "params": {"name": "ghost__echo", "arguments": {"text": "x"}}})
            responses[label + "-ghost"] = gw.read_response(8)
            if label == "with":
                prompts = gw.request(9, "prompts/list")["result"]["prompts"]
                assert "pub__greet" in {p["name"] for p in prompts}
                assert not any(p["name"].startswith("hidden__") for p in prompts)
                uris = {r["uri"] for r in gw.request(10, "resources/list")["result"]["resources"]}
                assert not any(u.startswith("clawai://hidden/") for u in uris), uris
                read = gw.request(11, "resources/read", {"uri": "clawai://hidden/mem://shared"})
                assert "error" in read and "shared resource of hidden" not in json.dumps(read)
        finally:
            gw.kill()
    error = json.loads(responses["with"])["error"]
    assert error["code"] == -32602 and "unknown" in error["message"].lower(), error
    # One error for every name that is not visible: the hidden server's tool gets exactly
    # what the same name gets where no such server is configured...
    assert responses["with"] == responses["without"]
    # ...and what a tool of a server that exists nowhere gets, but for its name.
    assert without_id(responses["with"]) == without_id(responses["with-ghost"].replace(b"ghost__echo", b"hidden__echo"))
    assert calls_received(tmp_path / "hidden.log", "echo") == []
    # The operator sees the probing in the trail, under the name the client asked for.
    refused = [e for e in read_audit(tmp_path / "audit.jsonl") if e.get("decision") == "refused"]
    assert {e.get("listed_as") for e in refused} >= {"hidden__echo", "ghost__echo", "clawai://hidden/mem://shared"}
    assert all(e.get("server") is None for e in refused), "the trail does not say which server has a hidden name"


def test_a_hidden_servers_prompts_and_resources_get_the_errors_of_a_server_that_does_not_exist(tmp_path):
    config = write_config(tmp_path / "gateway.json", {
        "pub": scripted("pub"), "hidden": scripted("hidden", "--log", tmp_path / "hidden.log", internal_only=None)})
    asks = [
        ("resources/read", {"uri": "clawai://S/mem://shared"}),
        ("resources/subscribe", {"uri": "clawai://S/mem://shared"}),
        ("prompts/get", {"name": "S__greet", "arguments": {"name": "Ada"}}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "S__greet"}, "argument": {"name": "name", "value": "A"}}),
        ("completion/complete", {"ref": {"type": "ref/resource", "uri": "clawai://S/mem://item/{id}"},
                                 "argument": {"name": "id", "value": "1"}}),
    ]
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.initialize()
        gw.wait_listed(has_all("pub__echo"))
        for n, (method, params) in enumerate(asks):
            answers = {}
            for server in ("hidden", "ghost"):
                gw.send({"id": n, "method": method, "params": json.loads(json.dumps(params).replace("S", server))})
                answers[server] = gw.read_response(n).replace(server.encode(), b"S")
            assert b'"error"' in answers["hidden"] and answers["hidden"] == answers["ghost"], (method, answers)
    finally:
        gw.kill()
    received = {m.get("method") for m in read_log(tmp_path / "hidden.log")[0]}
    assert not received & {method for method, _ in asks}, received


def test_ids_come_back_exactly_and_a_batch_is_refused(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a", "--log", tmp_path / "a.log")})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.initialize()
        gw.wait_listed(has_all("a__echo"))
        for raw_id in (b'"abc"', b"0", b"9007199254740993", b'"1"'):
            gw.proc.stdin.write(b'{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"t"}}}\n' % raw_id)
            gw.proc.stdin.flush()
            line = gw.read_response(json.loads(raw_id))
            assert b'"id":%s' % raw_id in line and b'"a: t"' in line, line
        gw.proc.stdin.write(b'[{"jsonrpc":"2.0","id":50,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"batched"}}}]\n')
        gw.proc.stdin.flush()
        refused = json.loads(gw.read_response(None))
        assert refused["error"]["code"] == -32600, refused
        assert gw.request(51, "ping")["result"] == {}
    finally:
        gw.kill()
    assert not [m for m in read_log(tmp_path / "a.log")[0] if "batched" in json.dumps(m)]


def test_lines_the_front_refuses_are_in_the_trail(tmp_path):
    """An unparsable line and a line over the size limit are refused by the same stage as
    in the proxy, and each leaves a `refused` line in the trail."""
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a")})
    gw = RawGateway(tmp_path, [*gateway_args(tmp_path, config), "--max-message-size", "4096"])
    try:
        gw.initialize()
        gw.wait_listed(has_all("a__echo"))
        gw.proc.stdin.write(b'{"jsonrpc":"2.0","id":60,"method":"tools/call","method":"ping"}\n')
        gw.proc.stdin.flush()
        assert json.loads(gw.read_response(60))["error"]["code"] in (-32600, -32003)
        big = json.dumps({"jsonrpc": "2.0", "id": 61, "method": "tools/call",
                          "params": {"name": "a__echo", "arguments": {"text": "x" * 8000}}})
        gw.proc.stdin.write(big.encode() + b"\n")
        gw.proc.stdin.flush()
        assert json.loads(gw.read_response(61))["error"]["code"] == -32004
        assert gw.request(62, "ping")["result"] == {}
    finally:
        gw.kill()
    refused = [e for e in read_audit(tmp_path / "audit.jsonl") if e.get("decision") == "refused"]
    assert any(e.get("id") == 60 for e in refused), refused
    assert any("over the 4096-byte limit" in e.get("reason", "") for e in refused), refused


async def test_a_tool_whose_own_name_has_a_double_underscore_is_routed_on_the_first(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"s": scripted("s"), "s_foo": scripted("s_foo")})
    # A tool added after the first listing would be held by pinning until approved.
    unpinned = ALLOW_ALL + "\n[guards]\npinning = false\n"
    with anyio.fail_after(15):
        async with client(tmp_path, config, policy=unpinned) as c:
            await listed(c, has_all("s__add_tool", "s_foo__echo"))
            text_of(await c.call_tool("s__add_tool", {"name": "foo__bar"}))
            await listed(c, has_all("s__foo__bar"))
            assert text_of(await c.call_tool("s__foo__bar", {})) == "s: foo__bar"


async def test_internal_only_false_lists_the_servers_tools(tmp_path):
    config = write_config(tmp_path / "gateway.json", {
        "camel": scripted("camel", internal_only=False),
        "snake": {**scripted("snake", internal_only=None), "internal_only": False},
    })
    with anyio.fail_after(15):
        async with client(tmp_path, config) as c:
            names = await listed(c, has_all("camel__echo", "snake__echo"))
            assert prefixed(names, "snake") == {f"snake__{t}" for t in BASE_TOOLS}
            assert text_of(await c.call_tool("snake__echo", {"text": "ok"})) == "snake: ok"


async def test_policy_rule_on_server_and_upstream_tool_name_denies_through_the_gateway(tmp_path):
    policy = """
[[rule]]
id = "no-delete-on-a"
action = "deny"
server = "a"
tool = "delete_everything"
description = "Nothing is deleted on a"

[[rule]]
action = "allow"
method = "**"
"""
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a", "--log", tmp_path / "a.log"),
                                                      "b": scripted("b")})
    with anyio.fail_after(15):
        async with client(tmp_path, config, policy=policy) as c:
            await listed(c, has_all("a__echo", "b__delete_everything"))
            denied = await c.call_tool("a__delete_everything", {})
            assert denied.is_error and "no-delete-on-a" in denied.content[0].text, denied
            assert text_of(await c.call_tool("b__delete_everything", {})) == "b: deleted everything"
    assert calls_received(tmp_path / "a.log", "delete_everything") == [], "a denied call never reaches the server"
    events = [e for e in read_audit(tmp_path / "audit.jsonl") if e.get("decision") == "deny"]
    assert events and events[0]["server"] == "a" and events[0]["tool"] == "delete_everything", events
    assert events[0]["listed_as"] == "a__delete_everything" and events[0]["rule"] == "no-delete-on-a"


async def test_pagination_across_servers_collects_every_tool_exactly_once(tmp_path):
    servers = {s: scripted(s, "--tools", 3, "--page-size", 2) for s in ("a", "b", "c")}
    config = write_config(tmp_path / "gateway.json", servers)
    expected = {f"{s}__{t}" for s in servers for t in BASE_TOOLS | {"tool_0", "tool_1", "tool_2"}}
    with anyio.fail_after(15):
        async with client(tmp_path, config) as c:
            await listed(c, has_all("a__tool_2", "b__tool_2", "c__tool_2"))
            names = await tool_names(c)
            resources = [r.uri for r in await all_items(c, "resources")]
            prompts = [p.name for p in await all_items(c, "prompts")]
    ours = [n for n in names if n.split("__")[0] in servers]
    assert len(ours) == len(set(ours)), "no tool twice"
    assert set(ours) == expected
    assert sorted(resources) == [f"clawai://{s}/mem://shared" for s in ("a", "b", "c")]
    assert sorted(p for p in prompts if p.endswith("__greet")) == ["a__greet", "b__greet", "c__greet"]


async def test_the_gateways_own_pages_hold_every_item_exactly_once(tmp_path):
    servers = {s: scripted(s, "--tools", 4) for s in ("a", "b")}
    config = write_config(tmp_path / "gateway.json", servers)
    expected = {f"{s}__{t}" for s in servers for t in BASE_TOOLS | {f"tool_{i}" for i in range(4)}}
    with anyio.fail_after(15):
        async with client(tmp_path, config, "--page-size", "3") as c:
            await listed(c, has_all("a__tool_3", "b__tool_3"))
            first = await c.list_tools()
            assert len(first.tools) == 3 and first.next_cursor, first
            names = await tool_names(c)
    ours = [n for n in names if n.split("__")[0] in servers]
    assert len(ours) == len(set(ours)) and set(ours) == expected


async def test_a_forged_cursor_gets_invalid_params(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a", "--page-size", 2), "b": scripted("b")})
    with anyio.fail_after(15):
        async with client(tmp_path, config) as c:
            await listed(c, has_all("a__echo", "b__echo"))
            for forged in ("forged", "2", "eyJvZmZzZXQiOjB9"):
                for method in (c.list_tools, c.list_prompts, c.list_resources):
                    with pytest.raises(MCPError) as raised:
                        await method(cursor=forged)
                    assert raised.value.code == -32602, (method, forged, raised.value)


async def test_a_cursor_from_before_the_list_changed_gets_invalid_params(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a", "--tools", 500)})
    with anyio.fail_after(15):
        async with client(tmp_path, config) as c:
            await listed(c, has_all("a__tool_499"))
            stale = (await c.list_tools()).next_cursor
            if stale:
                write_config(config, {"a": scripted("a", "--tools", 500), "c": scripted("c")})
                await listed(c, has_all("c__echo"), timeout=3)
                with pytest.raises(MCPError) as raised:
                    await c.list_tools(cursor=stale)
                assert raised.value.code == -32602
    if not stale:
        pytest.skip("the gateway lists 510 tools in one page: no cursor to go stale")


async def test_two_servers_sharing_a_uri_each_serve_their_own(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a"), "b": scripted("b")})
    with anyio.fail_after(15):
        async with client(tmp_path, config) as c:
            await listed(c, has_all("a__echo", "b__echo"))
            uris = {r.uri for r in await all_items(c, "resources")}
            assert {"clawai://a/mem://shared", "clawai://b/mem://shared"} <= uris
            for s in ("a", "b"):
                read = await c.read_resource(f"clawai://{s}/mem://shared")
                assert read.contents[0].text == f"shared resource of {s}"
            templates = {t.uri_template for t in await all_items(c, "templates")}
            assert {"clawai://a/mem://item/{id}", "clawai://b/mem://item/{id}"} <= templates
            assert (await c.read_resource("clawai://b/mem://item/7")).contents[0].text == "item 7 of b"


async def test_a_resource_link_in_a_result_stays_readable(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a"), "b": scripted("b")})
    with anyio.fail_after(15):
        async with client(tmp_path, config) as c:
            await listed(c, has_all("b__link"))
            link = (await c.call_tool("b__link", {})).content[0]
            assert link.type == "resource_link" and link.uri == "clawai://b/mem://shared", link
            assert (await c.read_resource(link.uri)).contents[0].text == "shared resource of b"


async def test_prompts_are_namespaced_and_completed(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a"), "b": scripted("b")})
    with anyio.fail_after(15):
        async with client(tmp_path, config) as c:
            await listed(c, has_all("a__echo", "b__echo"))
            names = {p.name for p in await all_items(c, "prompts")}
            assert {"a__greet", "b__greet"} <= names and "greet" not in names
            prompt = await c.get_prompt("b__greet", {"name": "Ada"})
            assert prompt.messages[0].content.text == "Hello Ada from b"
            done = await c.complete(types.PromptReference(type="ref/prompt", name="a__greet"), {"name": "name", "value": "Al"})
            assert done.completion.values == ["Alan", "Alonzo"]


async def test_a_long_tool_name_is_listed_and_callable_under_its_short_form(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"long": scripted("long", "--long-name")})
    full = f"long__{LONG_TOOL_NAME}"
    short = full[:55] + "_" + hashlib.sha256(full.encode()).hexdigest()[:8]
    assert len(full) > 64 and len(short) == 64
    with anyio.fail_after(15):
        async with client(tmp_path, config) as c:
            names = await listed(c, has_all("long__echo"))
            assert short in names and full not in names
            assert all(len(n) <= 64 for n in names)
            assert text_of(await c.call_tool(short, {})) == f"long: {LONG_TOOL_NAME}"
    events = [e for e in read_audit(tmp_path / "audit.jsonl") if e.get("listed_as") == short]
    assert events and events[0]["tool"] == LONG_TOOL_NAME and events[0]["server"] == "long"


# --- what a session may see, and the policy's part ---------------------------------------------

async def test_agent_allowed_tools_is_the_most_a_session_sees(tmp_path):
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"a": scripted("a"), "b": scripted("b")},
                                  "agent": {"allowedTools": ["a__echo", "b__who*"]}}))
    with anyio.fail_after(15):
        async with client(tmp_path, config) as c:
            names = await listed(c, has_all("a__echo", "b__whoami"))
            assert prefixed(names, "a") | prefixed(names, "b") == {"a__echo", "b__whoami"}
            outside = await error_text(c, "a__whoami")
            unknown = await error_text(c, "a__no_such_tool")
    assert outside.startswith("-32602 ") and outside.replace("a__whoami", "NAME") == unknown.replace("a__no_such_tool", "NAME")


async def test_a_tool_the_policy_always_denies_is_not_listed(tmp_path):
    policy = """
[[rule]]
id = "no-delete-on-a"
action = "deny"
server = "a"
tool = "delete_everything"

[[rule]]
action = "allow"
method = "**"
"""
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a"), "b": scripted("b")})
    with anyio.fail_after(15):
        async with client(tmp_path, config, policy=policy) as c:
            names = await listed(c, has_all("a__echo", "b__delete_everything"))
            # Left out of the list, the call still gets the policy's denial, naming the rule.
            denied = await c.call_tool("a__delete_everything", {})
            assert denied.is_error and "no-delete-on-a" in denied.content[0].text, denied
    assert "a__delete_everything" not in names


async def test_a_prompt_the_policy_denies_gets_an_error_in_the_implementation_range(tmp_path):
    policy = """
[[rule]]
id = "no-greeting-from-a"
action = "deny"
server = "a"
prompt = "greet"

[[rule]]
action = "allow"
method = "**"
"""
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a", "--log", tmp_path / "a.log"), "b": scripted("b")})
    with anyio.fail_after(15):
        async with client(tmp_path, config, policy=policy) as c:
            await listed(c, has_all("a__echo", "b__echo"))
            with pytest.raises(MCPError) as raised:
                await c.get_prompt("a__greet", {"name": "Ada"})
            assert (await c.get_prompt("b__greet", {"name": "Ada"})).messages[0].content.text == "Hello Ada from b"
    assert -32019 <= raised.value.code <= -32000 and "no-greeting-from-a" in raised.value.message, raised.value
    assert not [m for m in read_log(tmp_path / "a.log")[0] if m.get("method") == "prompts/get"]


async def test_an_unknown_resource_and_an_approval_not_given_get_different_codes(tmp_path):
    # A client must be able to tell "no such resource" from "clawai wants a person to say
    # yes": they once shared -32002.
    policy = """
[[rule]]
id = "ask-before-reading"
action = "prompt"
server = "a"
resource = "mem://shared"

[[rule]]
action = "allow"
method = "**"
"""
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a")})
    with anyio.fail_after(15):
        async with client(tmp_path, config, policy=policy) as c:
            await listed(c, has_all("a__echo"))
            with pytest.raises(MCPError) as unknown:
                await c.read_resource("clawai://nobody/mem://shared")
            with pytest.raises(MCPError) as asked:
                await c.read_resource("clawai://a/mem://shared")
    assert unknown.value.code == -32002, unknown.value
    assert asked.value.code == -32007 and "ask-before-reading" in asked.value.message, asked.value


# --- requests from servers to the client ---------------------------------------------------

async def test_sampling_reaches_the_callers_callback_and_the_answer_returns(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a"), "b": scripted("b")})
    asked = []

    async def sampler(context, params: types.CreateMessageRequestParams):
        asked.append(params.messages[0].content.text)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="model says hi"),
                                         model="test-model")

    with anyio.fail_after(15):
        async with client(tmp_path, config, sampling_callback=sampler) as c:
            await listed(c, has_all("b__sample"))
            assert text_of(await c.call_tool("b__sample", {})) == "b sampled: model says hi"
    assert asked == ["hello from b"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_requests_from_two_servers_with_the_same_id_each_get_their_own_answer(tmp_path, mode):
    """Both scripted servers number their requests to the client from 0, so their first
    sampling requests carry the same id; a 2026-07-28 client gets them inside results."""
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a"), "b": scripted("b")})

    async def sampler(context, params: types.CreateMessageRequestParams):
        await anyio.sleep(0.3)  # both requests are outstanding at once
        return types.CreateMessageResult(role="assistant", model="test-model",
                                         content=types.TextContent(type="text", text="re: " + params.messages[0].content.text))

    answers = {}

    async def sample(server: str, c: Client):
        answers[server] = text_of(await c.call_tool(f"{server}__sample", {}))

    with anyio.fail_after(15):
        async with client(tmp_path, config, mode=mode, sampling_callback=sampler) as c:
            await listed(c, has_all("a__sample", "b__sample"))
            async with anyio.create_task_group() as tg:
                tg.start_soon(sample, "a", c)
                tg.start_soon(sample, "b", c)
            version = c.protocol_version
    assert answers == {"a": "a sampled: re: hello from a", "b": "b sampled: re: hello from b"}
    assert version == ("2025-11-25" if mode == "legacy" else "2026-07-28")


async def test_a_resource_update_arrives_under_the_gateway_uri(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a"), "b": scripted("b")})
    updated = []

    async def on_message(message):
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))

    with anyio.fail_after(15):
        async with client(tmp_path, config, message_handler=on_message) as c:
            await listed(c, has_all("b__touch"))
            await c.subscribe_resource("clawai://b/mem://shared")
            text_of(await c.call_tool("b__touch", {"uri": "mem://shared"}))
            await poll(lambda: updated, 5, "notifications/resources/updated")
    assert updated == ["clawai://b/mem://shared"]


async def test_sampling_for_a_client_without_the_capability_fails_at_once(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a")})
    with anyio.fail_after(15):
        async with client(tmp_path, config) as c:
            await listed(c, has_all("a__sample"))
            started = time.monotonic()
            result = await c.call_tool("a__sample", {})
            # The server would wait 30 s for an answer; the gateway answers it with an error at once.
            assert time.monotonic() - started < 5
    assert result.is_error and "sampling failed" in result.content[0].text, result


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_elicitation_and_roots_reach_the_caller(tmp_path, mode):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a")})

    async def elicit(context, params):
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def roots(context):
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/gw-root", name="root")])

    with anyio.fail_after(15):
        async with client(tmp_path, config, mode=mode, elicitation_callback=elicit, list_roots_callback=roots) as c:
            await listed(c, has_all("a__elicit"))
            assert json.loads(text_of(await c.call_tool("a__elicit", {}))) == {"action": "accept", "content": {"name": "Ada"}}
            assert json.loads(text_of(await c.call_tool("a__roots", {})))["roots"][0]["uri"] == "file:///tmp/gw-root"


# --- the children's environment and start-up errors -------------------------------------------

async def test_children_get_a_minimal_environment_plus_their_own_env(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a", env={"GIVEN_VAR": "given",
                                                                           "EXPANDED_VAR": "${GW_TEST_VALUE}"})})
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "SECRET_API_KEY": "x",
           "GW_TEST_VALUE": "expanded"}
    with anyio.fail_after(15):
        async with client(tmp_path, config, env=env) as c:
            await listed(c, has_all("a__whoami"))
            seen = json.loads(text_of(await c.call_tool("a__whoami", {})))["env"]
    assert "SECRET_API_KEY" not in seen and "GW_TEST_VALUE" not in seen
    assert seen["GIVEN_VAR"] == "given" and seen["EXPANDED_VAR"] == "expanded"
    # CLAWAI_SERVER_TAG: clawai's mark of the server's process tree (nothing of the gateway's own).
    allowed = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM", "TMPDIR", "SHELL", "GIVEN_VAR", "EXPANDED_VAR",
               "CLAWAI_SERVER_TAG"}
    assert {k for k in seen if k not in allowed and not k.startswith("LC_")} == set(), seen
    assert len(seen["CLAWAI_SERVER_TAG"]) == 32, seen


def test_an_unset_variable_in_env_stops_the_gateway_naming_it(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a", env={"TOKEN": "${GW_TEST_UNSET_VARIABLE}"})})
    env = {k: v for k, v in os.environ.items() if k != "GW_TEST_UNSET_VARIABLE"}
    out = run_gateway_to_failure(tmp_path, gateway_args(tmp_path, config), env=env)
    assert out.returncode != 0 and "GW_TEST_UNSET_VARIABLE" in out.stderr, out


def test_an_unknown_key_in_its_own_config_stops_the_gateway_naming_key_and_line(tmp_path):
    config = tmp_path / "gateway.json"
    config.write_text('{\n  "mcpServers": {\n    "a": {\n      "command": "python3",\n      "internalOnyl": false\n    }\n  }\n}\n')
    out = run_gateway_to_failure(tmp_path, gateway_args(tmp_path, config))
    assert out.returncode != 0 and "internalOnyl" in out.stderr, out
    assert "line 5" in out.stderr or ":5" in out.stderr, out.stderr


def test_a_server_name_with_a_double_underscore_is_rejected(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a__b": scripted("a__b")})
    out = run_gateway_to_failure(tmp_path, gateway_args(tmp_path, config))
    assert out.returncode != 0 and "a__b" in out.stderr, out


# --- HTTP ------------------------------------------------------------------------------------

def test_the_http_front_records_what_it_refuses_and_nothing_twice(tmp_path):
    from test_http import http
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a")})
    port = free_port()
    proc = subprocess.Popen([clawai_bin(), *gateway_args(tmp_path, config), "--listen", f"127.0.0.1:{port}"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env=own_state(tmp_path, dict(os.environ)), cwd=tmp_path)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    call = json.dumps({"jsonrpc": "2.0", "id": "h1", "method": "tools/call",
                       "params": {"name": "a__echo", "arguments": {"text": "t"}, "_meta": meta}}).encode()
    try:
        wait_until_listening(port, proc)
        status, _, body = http("POST", port, headers, call)
        assert status == 400 and json.loads(body)["error"]["code"] == -32020, body
        status, _, body = http("POST", port, {**headers, "Mcp-Method": "tools/call", "Mcp-Name": "a__echo"}, call)
        assert status == 200 and "a: t" in body, body
    finally:
        stop(proc)
    trail = read_audit(tmp_path / "audit.jsonl")
    assert [e["id"] for e in trail if e.get("decision") == "refused"] == ["h1"], trail
    decided = [e for e in trail if e.get("method") == "tools/call" and e.get("kind") == "request"]
    assert len(decided) == 1 and decided[0]["decision"] == "allow", decided


async def test_two_http_sessions_with_the_same_ids_each_get_their_own_answers(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a"), "b": scripted("b")})
    port = free_port()
    with open(tmp_path / "gateway.err", "wb") as err:
        proc = subprocess.Popen([clawai_bin(), *gateway_args(tmp_path, config), "--listen", f"127.0.0.1:{port}"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                                env=own_state(tmp_path, dict(os.environ)), cwd=tmp_path)
    results = {}

    CALLS_PER_SESSION = 200

    async def one_call(c: Client, session: int, i: int):
        server = "ab"[i % 2]
        if i % 10 == 0:  # some calls carry progress tokens, the same ones in both sessions
            progress = []

            async def on_progress(value, total, message):
                progress.append(value)

            r = await c.call_tool(f"{server}__slow", {"seconds": 0.3}, progress_callback=on_progress)
            results[session, i] = (text_of(r), progress)
        else:
            results[session, i] = text_of(await c.call_tool(f"{server}__echo", {"text": f"s{session}-{i}"}))

    async def session(k: int):
        async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy", cache=None) as c:
            await listed(c, has_all("a__echo", "b__echo"))
            async with anyio.create_task_group() as tg:
                for i in range(CALLS_PER_SESSION):
                    tg.start_soon(one_call, c, k, i)

    try:
        wait_until_listening(port, proc)
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(session, 1)
                tg.start_soon(session, 2)
    finally:
        stop(proc)
    for k in (1, 2):
        for i in range(CALLS_PER_SESSION):
            server = "ab"[i % 2]
            if i % 10 == 0:
                assert results[k, i] == (f"{server}: slept 0.3", [1, 2, 3]), (k, i, results[k, i])
            else:
                assert results[k, i] == f"{server}: s{k}-{i}"


async def test_over_http_a_servers_sampling_request_goes_to_the_session_that_called(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a")})
    port = free_port()
    with open(tmp_path / "gateway.err", "wb") as err:
        proc = subprocess.Popen([clawai_bin(), *gateway_args(tmp_path, config), "--listen", f"127.0.0.1:{port}"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                                env=own_state(tmp_path, dict(os.environ)), cwd=tmp_path)
    asked = []

    def sampler_of(session: str):
        async def sampler(context, params: types.CreateMessageRequestParams):
            asked.append(session)
            return types.CreateMessageResult(role="assistant", model="m",
                                             content=types.TextContent(type="text", text=f"answer of {session}"))
        return sampler

    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until_listening(port, proc)
        with anyio.fail_after(15):
            async with Client(url, mode="legacy", cache=None, sampling_callback=sampler_of("one")) as one, \
                    Client(url, mode="legacy", cache=None, sampling_callback=sampler_of("two")) as two:
                await listed(one, has_all("a__sample"))
                await listed(two, has_all("a__sample"))
                assert text_of(await two.call_tool("a__sample", {})) == "a sampled: answer of two"
                assert text_of(await one.call_tool("a__sample", {})) == "a sampled: answer of one"
    finally:
        stop(proc)
    assert asked == ["two", "one"]


# --- the official npm servers ----------------------------------------------------------------

async def test_server_everything_and_server_filesystem_behind_one_gateway(tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    (files / "note.txt").write_text("hello from a file")
    config = write_config(tmp_path / "gateway.json", {
        "everything": {"command": "node", "args": [str(EVERYTHING), "stdio"], "internalOnly": False},
        "filesystem": {"command": "node", "args": [str(FILESYSTEM), str(files)], "internalOnly": False},
    })
    with anyio.fail_after(30):
        async with client(tmp_path, config) as c:
            names = await listed(c, has_all("everything__echo", "filesystem__read_text_file"), timeout=15)
            assert {"everything__get-sum", "filesystem__list_directory", "filesystem__write_file"} <= names
            assert text_of(await c.call_tool("everything__echo", {"message": "through"})) == "Echo: through"
            read = await c.call_tool("filesystem__read_text_file", {"path": str(files / "note.txt")})
            assert text_of(read) == "hello from a file"
            outside = await c.call_tool("filesystem__read_text_file", {"path": "/etc/hostname"})
            assert outside.is_error, "the server's own directory limit still holds"
