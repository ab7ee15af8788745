"""`subscriptions/listen` through `clawai gateway` over stdio (2026-07-28, the official client
in auto mode): the gateway acknowledges the list changes it tells, and tells the client on
that stream when what its session sees changes (a skill it activates or ends); resource
subscriptions are not honored."""

import anyio
import pytest

from gateway_support import client, gateway_missing, has_all, listed, scripted, write_config

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
                assert not sub.honored.resource_subscriptions, sub.honored
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
