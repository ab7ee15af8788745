"""server-everything through clawai: with an allow-all policy, everything the official
Python client can do directly works identically through the proxy."""

import pathlib

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from conftest import ALLOW_ALL, EVERYTHING, clawai_bin, read_audit, write_policy

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


def direct() -> StdioServerParameters:
    return StdioServerParameters(command="node", args=[str(EVERYTHING), "stdio"])


def proxied(policy: pathlib.Path, audit: pathlib.Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=clawai_bin(),
        args=["proxy", "--policy", str(policy), "--audit", str(audit), "--server", "everything", "--", "node", str(EVERYTHING), "stdio"],
    )


async def sampling_callback(context, params: types.CreateMessageRequestParams):
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="sampled: " + params.messages[0].content.text), model="test-model")


async def elicitation_callback(context, params):
    return types.ElicitResult(action="accept", content={"name": "Ada", "check": True, "firstLine": "x", "email": "a@b.c", "homepage": "https://a.b", "birthdate": "2000-01-01", "integer": 1, "number": 1.5, "enum": "ok", "untitledSingleSelectEnum": "option1", "titledSingleSelectEnum": "value1", "untitledMultipleSelectEnum": ["option1"], "titledMultipleSelectEnum": ["value1"], "legacyTitledEnum": "opt1"})


async def list_roots(context):
    return types.ListRootsResult(roots=[types.Root(uri="file:///tmp", name="tmp")])


def normalise(value):
    """Results minus what legitimately differs between two runs (timestamps, ids)."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items() if k not in ("_meta",)}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


async def session_transcript(params: StdioServerParameters, mode: str) -> dict:
    progress = []

    async def on_progress(p, total, message):
        progress.append(p)

    out = {}
    async with Client(params, mode=mode, sampling_callback=sampling_callback, elicitation_callback=elicitation_callback, list_roots_callback=list_roots) as client:
        tools = await client.list_tools()
        out["tools"] = sorted(t.name for t in tools.tools)
        out["echo"] = normalise(await client.call_tool("echo", {"message": "hello ✓ \u2028 \"quoted\""}))
        out["sum"] = normalise(await client.call_tool("get-sum", {"a": 2, "b": 40}))
        out["structured"] = normalise(await client.call_tool("get-structured-content", {"location": "New York"}))
        out["long"] = normalise(await client.call_tool("trigger-long-running-operation", {"duration": 0.2, "steps": 3}, progress_callback=on_progress))
        out["progress"] = progress
        out["sampling"] = normalise(await client.call_tool("trigger-sampling-request", {"prompt": "hi", "maxTokens": 5}))
        out["elicitation"] = normalise(await client.call_tool("trigger-elicitation-request", {}))
        out["roots"] = normalise(await client.call_tool("get-roots-list", {}))
        resources = await client.list_resources()
        out["resources"] = sorted(r.uri for r in resources.resources)[:5]
        first = sorted(resources.resources, key=lambda r: str(r.uri))[0]
        out["read"] = normalise(await client.read_resource(first.uri))
        prompts = await client.list_prompts()
        out["prompts"] = sorted(p.name for p in prompts.prompts)
        out["prompt"] = normalise(await client.get_prompt("simple-prompt"))
        out["image"] = normalise(await client.call_tool("get-tiny-image", {}))
    return out


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_allow_all_is_identical_to_direct(tmp_path, mode):
    policy = write_policy(tmp_path, ALLOW_ALL)
    audit = tmp_path / "audit.jsonl"
    with anyio.fail_after(60):
        expected = await session_transcript(direct(), mode)
        actual = await session_transcript(proxied(policy, audit), mode)
    assert expected["progress"], "the server sent progress"
    assert "sampled: " in str(expected["sampling"])
    assert actual == expected
    events = read_audit(audit)
    calls = [e for e in events if e.get("method") == "tools/call" and e["kind"] == "request"]
    assert {e["tool"] for e in calls} >= {"echo", "get-sum", "trigger-sampling-request"}
    assert all(e["decision"] == "allow" and e["rule"] == "allow-all" for e in calls)
    sampling = [e for e in events if e.get("method") == "sampling/createMessage" and e["kind"] == "request"]
    assert sampling and sampling[0]["direction"] == "server->client" and sampling[0]["decision"] == "allow"
    responses = [e for e in events if e["kind"] == "response" and e.get("method") == "tools/call"]
    assert responses and all("duration_ms" in e for e in responses)


async def test_denied_tool_gets_an_error_result_naming_the_rule(tmp_path):
    policy = write_policy(tmp_path, """
[[rule]]
id = "no-env"
action = "deny"
tool = "get-env"
description = "The environment holds secrets"

[[rule]]
action = "allow"
method = "**"
""")
    audit = tmp_path / "audit.jsonl"
    with anyio.fail_after(30):
        async with Client(proxied(policy, audit), mode="legacy") as client:
            result = await client.call_tool("get-env", {})
            assert result.is_error
            text = result.content[0].text
            assert "no-env" in text and "The environment holds secrets" in text
            assert "PATH" not in text
            ok = await client.call_tool("echo", {"message": "still serving"})
            assert not ok.is_error and "still serving" in ok.content[0].text
    denied = [e for e in read_audit(audit) if e.get("tool") == "get-env"]
    assert denied and denied[0]["decision"] == "deny" and denied[0]["rule"] == "no-env"


async def test_denied_sampling_never_reaches_the_client(tmp_path):
    policy = write_policy(tmp_path, """
[[rule]]
id = "no-sampling"
action = "deny"
method = "sampling/createMessage"

[[rule]]
action = "allow"
method = "**"
""")
    audit = tmp_path / "audit.jsonl"
    asked = []

    async def sampler(context, params):
        asked.append(params)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="x"), model="m")

    with anyio.fail_after(30):
        async with Client(proxied(policy, audit), mode="legacy", sampling_callback=sampler) as client:
            result = await client.call_tool("trigger-sampling-request", {"prompt": "leak", "maxTokens": 5})
    assert asked == [], "the client's model was never asked"
    assert "no-sampling" in str(result.model_dump()) or result.is_error
    denied = [e for e in read_audit(audit) if e.get("method") == "sampling/createMessage" and e["kind"] == "request"]
    assert denied and denied[0]["decision"] == "deny"


async def test_destructive_annotation_rule_uses_tools_list(tmp_path):
    # server-everything marks get-sum readOnly; trigger-sampling-request as not destructive.
    policy = write_policy(tmp_path, """
[[rule]]
id = "read-only-ok"
action = "allow"
read_only = true

[[rule]]
id = "ask-destructive"
action = "prompt"
destructive = true

[[rule]]
action = "allow"
method = "**"
""")
    audit = tmp_path / "audit.jsonl"
    with anyio.fail_after(30):
        async with Client(proxied(policy, audit), mode="legacy") as client:
            await client.list_tools()
            ok = await client.call_tool("get-sum", {"a": 1, "b": 2})
            assert not ok.is_error
    events = [e for e in read_audit(audit) if e.get("tool") == "get-sum"]
    assert events[0]["rule"] == "read-only-ok"


async def test_a_call_before_any_listing_is_decided_on_what_the_server_says(tmp_path):
    """A client that calls a tool it knows without listing first: clawai asks the server
    for its tools itself, so read-only get-sum is not taken for a destructive tool."""
    policy = write_policy(tmp_path, """
[[rule]]
id = "read-only-ok"
action = "allow"
read_only = true

[[rule]]
id = "ask-destructive"
action = "prompt"
destructive = true
description = "The server marks this tool as destructive"

[[rule]]
action = "allow"
method = "**"
""")
    audit = tmp_path / "audit.jsonl"
    with anyio.fail_after(30):
        async with Client(proxied(policy, audit), mode="legacy") as client:
            ok = await client.call_tool("get-sum", {"a": 1, "b": 2})
            assert not ok.is_error, ok
            missing = await client.call_tool("no-such-tool", {})
            assert missing.is_error and "no tool `no-such-tool`" in missing.content[0].text, missing
            assert "The server marks" not in missing.content[0].text
    events = read_audit(audit)
    assert [e["rule"] for e in events if e.get("tool") == "get-sum"] == ["read-only-ok"]
    own = [e for e in events if e.get("method") == "tools/list" and str(e.get("id")).startswith("clawai-tools-list-")]
    assert own and own[0]["kind"] == "request", events


async def test_prompt_action_is_denied_until_approvals_exist(tmp_path):
    policy = write_policy(tmp_path, """
[[rule]]
id = "ask"
action = "prompt"
tool = "echo"
description = "echo needs approval"

[[rule]]
action = "allow"
method = "**"
""")
    with anyio.fail_after(30):
        async with Client(proxied(policy, tmp_path / "a.jsonl"), mode="legacy") as client:
            result = await client.call_tool("echo", {"message": "x"})
    assert result.is_error and "approval" in result.content[0].text
