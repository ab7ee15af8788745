"""The servers people run, for real, behind `clawai gateway`: Claude Code's own MCP server
(`claude mcp serve`, npm @anthropic-ai/claude-code) and claude-flow (@claude-flow/cli,
353 tools), both installed by scripts/setup-test-peers and run offline, with pinning and
the poisoning scan on at their defaults.

- seed 001's `code-assist` skill shows `claude-code__Bash` (and Read, Edit) on the first
  start: nothing of either server is held;
- Claude Code declared `"session": "per-client"`: session B reads the file session A read
  and gets its content (one shared `claude mcp serve` answers `file_unchanged`);
- after the gateway stops, no process of theirs is left, not even the `setsid` child a
  `Bash` call started."""

import pathlib
import re

import anyio
import pytest

from conftest import ROOT, read_audit
from gateway_support import gateway_missing, has_all, listed, text_of, write_config
from test_gateway_per_client import ListeningGateway
from test_process_tree import exists

PEERS = ROOT / "tests" / "peers" / "node_modules" / ".bin"
CLAUDE = PEERS / "claude"
CLAUDE_FLOW = PEERS / "claude-flow"

_MISSING = gateway_missing() or (None if CLAUDE.exists() and CLAUDE_FLOW.exists()
                                 else "Claude Code and claude-flow are not installed (scripts/setup-test-peers)")
pytestmark = [pytest.mark.anyio, pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")]

CODE_ASSIST = """---
name: code-assist
description: Code editing via Claude Code tools
version: 1.0.0
variables:
  - task
allowed-tools:
  - claude-code__Read
  - claude-code__Edit
  - claude-code__Bash
  - claude-code__Grep
  - claude-code__Glob
user-invocable: true
argument-hint: Code task to accomplish
---

You have access to Claude Code's file and shell tools. Use them to
accomplish the following task: {{task}}
"""


@pytest.fixture
def anyio_backend():
    return "asyncio"


def servers(home: pathlib.Path, claude_session: str) -> dict:
    env = {"HOME": str(home)}
    return {
        "claude-code": {"command": str(CLAUDE), "args": ["mcp", "serve"], "env": env, "session": claude_session},
        "claude-flow": {"command": str(CLAUDE_FLOW), "args": ["mcp", "start"], "env": env},
    }


def theirs() -> list[int]:
    """Processes of Claude Code, claude-flow, or the `sleep 97` a Bash call started."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(PEERS.parent) in line or "sleep 97" in line:
            if (entry / "stat").read_text().split(") ")[-1].startswith("Z"):
                continue
            found.append(int(entry.name))
    return found


async def test_claude_code_and_claude_flow_behind_the_gateway(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    note = project / "note.txt"
    note.write_text("the content of the note\n")
    skill = tmp_path / ".clawai" / "skills" / "code-assist"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(CODE_ASSIST)
    config = write_config(tmp_path / "gateway.json", servers(home, "per-client"))
    before = set(theirs())
    gateway = ListeningGateway(tmp_path, config)
    try:
        with anyio.fail_after(120):
            async with gateway.client() as a, gateway.client() as b:
                # Both servers internal: the skill shows Claude Code's tools, Bash among them.
                await a.get_prompt("skill__code-assist", {"task": "read the note"})
                names = await listed(a, has_all("claude-code__Bash", "claude-code__Read", "claude-code__Edit"), 60)
                assert not [n for n in names if n.startswith("claude-flow__")], "the skill shows only its tools"
                await b.get_prompt("skill__code-assist", {"task": "read the note"})
                await listed(b, has_all("claude-code__Read"), 60)
                read = {"file_path": str(note)}
                first = text_of(await a.call_tool("claude-code__Read", read))
                assert "the content of the note" in first, first
                again = text_of(await a.call_tool("claude-code__Read", read))
                assert "file_unchanged" in again, f"Claude Code keeps per-session state: {again}"
                other = text_of(await b.call_tool("claude-code__Read", read))
                assert "the content of the note" in other, f"session B sees A's state: {other}"
                ran = text_of(await a.call_tool("claude-code__Bash",
                                                {"command": "setsid sleep 97 > /dev/null 2>&1 & echo started"}))
                assert "started" in ran, ran
    finally:
        gateway.stop()
    # claude-flow came up with every tool it lists, nothing of it held.
    log = (tmp_path / "gateway.err").read_text()
    up = re.search(r"server `claude-flow` is up: (\d+) tools", log)
    assert up and int(up.group(1)) >= 300, log[-3000:]
    held = [e for e in read_audit(tmp_path / "audit.jsonl") if e.get("kind") == "pinning" and e.get("decision") == "held"]
    assert held == [], held
    with anyio.fail_after(10):
        while [pid for pid in theirs() if pid not in before and exists(pid)]:
            await anyio.sleep(0.1)
