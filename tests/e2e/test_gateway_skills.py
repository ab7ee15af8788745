"""Skills through `clawai gateway`: an internal claude-flow-like server of 200 tools stays
hidden until a skill shows exactly the tools its `allowed-tools` name, with list_changed;
`agent.allowedTools` narrows what a skill shows; hidden tools get the unknown-tool error."""

import json
import pathlib
import shutil

import anyio
import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from conftest import ROOT, read_audit
from gateway_support import client, gateway_missing, listed, scripted, tool_names

_MISSING = gateway_missing()
pytestmark = [pytest.mark.anyio, pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")]


@pytest.fixture
def anyio_backend():
    return "asyncio"

FIXTURES = ROOT / "crates" / "clawai-gateway" / "tests" / "fixtures"
FLOW_TOOLS = FIXTURES / "claude-flow-tools.json"
MEMORY = {f"claude-flow__{t['name']}" for t in json.loads(FLOW_TOOLS.read_text()) if t["name"].startswith("memory_")}


def setup(tmp_path: pathlib.Path, agent: list[str] | None = None) -> pathlib.Path:
    skills = tmp_path / "skills"
    for name in ("flow-memory", "flow-swarm"):
        shutil.copytree(FIXTURES / "skills" / name, skills / name)
    config = {"mcpServers": {
        "ext": scripted("ext"),
        "claude-flow": scripted("claude-flow", "--tools-file", FLOW_TOOLS, internal_only=None),
        "other": scripted("other", internal_only=True),
    }}
    if agent is not None:
        config["agent"] = {"allowedTools": agent}
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(config))
    return path


def ours(names: set[str]) -> set[str]:
    """The servers' tools among `names` (not the gateway's own: skills and search)."""
    return {n for n in names if not n.startswith("skill__") and n != "search_tools"}


async def test_a_skill_shows_exactly_the_tools_it_names(tmp_path):
    config = setup(tmp_path)
    changed = []

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changed.append(message)

    with anyio.fail_after(20):
        async with client(tmp_path, config, "--skills", str(tmp_path / "skills"), message_handler=on_message) as c:
            before = set(await listed(c, lambda names: "ext__echo" in names and "skill__flow-memory" in names))
            assert {n for n in ours(before) if not n.startswith("ext__")} == set(), "only the external server's tools"
            assert {"skill__flow-memory", "skill__flow-swarm"} <= before
            with pytest.raises(MCPError) as hidden:
                await c.call_tool("claude-flow__memory_store", {"key": "k", "value": "v"})
            assert hidden.value.code == -32602 and "Unknown tool" in hidden.value.message

            changed.clear()
            prompt = await c.get_prompt("skill__flow-memory", {"operation": "store notes"})
            assert "store notes" in prompt.messages[0].content.text
            after = set(await tool_names(c))
            assert {n for n in ours(after) if not n.startswith("ext__")} == MEMORY
            assert changed, "the session was told its tools changed"
            result = await c.call_tool("claude-flow__memory_store", {"key": "k", "value": "v"})
            assert result.content[0].text == "memory_store called"

            # Another skill replaces it; deactivating it goes back to the external tools.
            await c.call_tool("skill__flow-swarm", {"task": "plan the release"})
            swarm = ours(set(await tool_names(c)))
            assert not (swarm & MEMORY) and any(n.startswith("claude-flow__swarm_") for n in swarm)
            await c.call_tool("skill__flow-swarm", {"deactivate": True})
            assert {n for n in ours(set(await tool_names(c))) if not n.startswith("ext__")} == set()


async def test_a_skill_variable_not_given_is_an_error_naming_it_and_nothing_activates(tmp_path):
    config = setup(tmp_path)
    with anyio.fail_after(20):
        async with client(tmp_path, config, "--skills", str(tmp_path / "skills")) as c:
            before = set(await listed(c, lambda names: "ext__echo" in names and "skill__flow-memory" in names))
            prompts = {p.name: p for p in (await c.list_prompts()).prompts}
            assert [(a.name, a.required) for a in prompts["skill__flow-memory"].arguments] == [("operation", True)]
            with pytest.raises(MCPError) as refused:
                await c.get_prompt("skill__flow-memory", {})
            assert refused.value.code == -32602 and "`operation`" in refused.value.message, refused.value
            result = await c.call_tool("skill__flow-memory", {"operation": "  "})
            assert result.is_error and "`operation`" in result.content[0].text, result
            assert "{{" not in result.content[0].text
            assert set(await tool_names(c)) == before, "nothing was activated"
            # Given, it activates, and the model reads the value where the placeholder was.
            result = await c.call_tool("skill__flow-memory", {"operation": "store notes"})
            assert not result.is_error and "Use them to\nstore notes." in result.content[0].text, result
    # The trail says each call without the variable was refused, and only the last one allowed.
    own = [e["decision"] for e in read_audit(tmp_path / "audit.jsonl") if e.get("listed_as") == "skill__flow-memory"]
    assert own == ["refused", "refused", "allow"], own


async def test_the_agent_scope_narrows_what_a_skill_shows(tmp_path):
    config = setup(tmp_path, agent=["ext__*", "claude-flow__memory_s*"])
    with anyio.fail_after(20):
        async with client(tmp_path, config, "--skills", str(tmp_path / "skills")) as c:
            await listed(c, lambda names: "ext__echo" in names)
            await c.get_prompt("skill__flow-memory", {"operation": "store notes"})
            names = ours(set(await tool_names(c)))
            flow = {n for n in names if n.startswith("claude-flow__")}
            assert flow == {n for n in MEMORY if n.startswith("claude-flow__memory_s")} and flow
            outside = next(iter(MEMORY - flow))
            with pytest.raises(MCPError) as hidden:
                await c.call_tool(outside, {})
            assert hidden.value.code == -32602


async def test_a_malformed_skill_is_skipped_and_the_others_load(tmp_path):
    config = setup(tmp_path)
    broken = tmp_path / "skills" / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("---\nname: broken\nallowed-tools: [unclosed\n---\nbody\n")
    with anyio.fail_after(20):
        async with client(tmp_path, config, "--skills", str(tmp_path / "skills")) as c:
            names = await listed(c, lambda names: "skill__flow-memory" in names)
            assert "skill__broken" not in names


async def test_a_skill_not_user_invocable_is_a_tool_but_no_prompt(tmp_path):
    config = setup(tmp_path)
    quiet = tmp_path / "skills" / "model-only"
    quiet.mkdir()
    (quiet / "SKILL.md").write_text("---\nname: model-only\ndescription: For the model\nuser-invocable: false\n"
                                    "allowed-tools: [ext__echo]\n---\nUse echo.\n")
    with anyio.fail_after(20):
        async with client(tmp_path, config, "--skills", str(tmp_path / "skills")) as c:
            names = await listed(c, lambda names: "skill__model-only" in names)
            assert "skill__model-only" in names
            prompts = {p.name for p in (await c.list_prompts()).prompts}
            assert "skill__flow-memory" in prompts and "skill__model-only" not in prompts
            with pytest.raises(MCPError) as refused:
                await c.get_prompt("skill__model-only")
            with pytest.raises(MCPError) as unknown:
                await c.get_prompt("skill__no-such-skill")
            assert refused.value.code == unknown.value.code
            assert refused.value.message.replace("model-only", "X") == unknown.value.message.replace("no-such-skill", "X")
            result = await c.call_tool("skill__model-only", {})
            assert not result.is_error and "Use echo." in result.content[0].text


async def search(c, query: str, limit: int = 20) -> list[dict]:
    result = await c.call_tool("search_tools", {"query": query, "limit": limit})
    return result.structured_content["results"]


async def test_search_finds_hidden_tools_and_names_the_skill_that_shows_them(tmp_path):
    config = setup(tmp_path)
    with anyio.fail_after(20):
        async with client(tmp_path, config, "--skills", str(tmp_path / "skills")) as c:
            await listed(c, lambda names: "ext__echo" in names and "search_tools" in names)
            hits = await search(c, "store a value in memory", 5)
            store = next(h for h in hits if h["name"] == "claude-flow__memory_store")
            assert store["visible"] is False and store["skills"] == ["skill__flow-memory"]
            await c.get_prompt("skill__flow-memory", {"operation": "store notes"})
            hits = await search(c, "store a value in memory", 5)
            assert next(h for h in hits if h["name"] == "claude-flow__memory_store")["visible"] is True


async def test_search_never_returns_what_the_caller_could_not_be_shown(tmp_path):
    """Internal tools no skill shows, tools outside the agent's scope, and tools a deny
    rule always covers are never results, whatever the query."""
    config = setup(tmp_path, agent=["ext__*", "other__*", "claude-flow__memory_*"])
    policy = '[[rule]]\nid = "no-delete"\naction = "deny"\ntool = "memory_delete"\n\n[[rule]]\naction = "allow"\nmethod = "**"\n'
    with anyio.fail_after(30):
        async with client(tmp_path, config, "--skills", str(tmp_path / "skills"), policy=policy) as c:
            await listed(c, lambda names: "ext__echo" in names)
            seen = set()
            for query in ("echo", "swarm", "agent spawn", "memory delete", "delete", "whoami", "memory", "task", "neural"):
                seen |= {h["name"] for h in await search(c, query)}
    assert not any(n.startswith("other__") for n in seen), "an internal server no skill shows"
    assert not any(n.startswith("claude-flow__swarm_") for n in seen), "outside the agent's scope"
    assert "claude-flow__memory_delete" not in seen, "always denied by the policy"
    assert "claude-flow__memory_store" in seen and "ext__echo" in seen, "the search works at all"


async def test_a_skill_removed_while_active_ends_and_does_not_come_back_on_its_own(tmp_path):
    config = setup(tmp_path)
    skill_dir = tmp_path / "skills" / "flow-memory"
    with anyio.fail_after(20):
        async with client(tmp_path, config, "--skills", str(tmp_path / "skills")) as c:
            await listed(c, lambda names: "skill__flow-memory" in names)
            await c.get_prompt("skill__flow-memory", {"operation": "store notes"})
            assert MEMORY <= set(await tool_names(c))
            saved = tmp_path / "saved-flow-memory"
            shutil.move(skill_dir, saved)
            await listed(c, lambda names: "skill__flow-memory" not in names)
            assert not (MEMORY & set(await tool_names(c))), "the skill that is gone shows nothing"
            shutil.move(saved, skill_dir)
            names = await listed(c, lambda names: "skill__flow-memory" in names)
            assert not (MEMORY & set(names)), "a skill of the same name is not active until asked for"


async def test_the_policy_decides_the_gateways_own_tools_and_the_trail_says_so(tmp_path):
    """`search_tools` and the skills are decided like any call: a deny rule refuses them
    (the skill stays inactive), and every call of them has a line with its decision."""
    config = setup(tmp_path)
    policy = """
[[rule]]
id = "no-swarm-skill"
action = "deny"
tool = "skill__flow-swarm"

[[rule]]
id = "mark-search"
action = "audit"
tool = "search_tools"

[[rule]]
action = "allow"
method = "**"
"""
    with anyio.fail_after(20):
        async with client(tmp_path, config, "--skills", str(tmp_path / "skills"), policy=policy) as c:
            await listed(c, lambda names: "ext__echo" in names and "skill__flow-swarm" in names)
            refused = await c.call_tool("skill__flow-swarm", {"task": "plan"})
            assert refused.is_error and "no-swarm-skill" in refused.content[0].text, refused
            assert not any(n.startswith("claude-flow__swarm_") for n in await tool_names(c)), "the skill stayed off"
            assert await search(c, "store a value in memory", 3)
            activated = await c.call_tool("skill__flow-memory", {"operation": "store notes"})
            assert not activated.is_error
    trail = read_audit(tmp_path / "audit.jsonl")
    own = {e["listed_as"]: e for e in trail if e.get("listed_as") in ("skill__flow-swarm", "skill__flow-memory", "search_tools")}
    assert own["skill__flow-swarm"]["decision"] == "deny" and own["skill__flow-swarm"]["rule"] == "no-swarm-skill"
    assert own["search_tools"]["decision"] == "audit" and own["search_tools"]["rule"] == "mark-search"
    assert own["search_tools"]["arguments"]["query"] == "store a value in memory"
    assert own["skill__flow-memory"]["decision"] == "allow"
