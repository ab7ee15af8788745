"""What `clawai gateway` says is wrong: `--check` starts a configuration, reports every
server (state, tools), skill and problem and exits (1 on problems), here on a configuration
like the seed's own (Claude Code, claude-flow, and `npx -y my-mcp-server`, which is not on
npm, with a skill whose Grep and Glob patterns match nothing in Claude Code 2.1); while
serving, an unmatched `allowed-tools` pattern is logged once with its file and line, and a
server that cannot start is reported once with the end of its stderr, then one line per
retry."""

import os
import re
import subprocess
import sys
import time

import pytest

from conftest import ALLOW_ALL, ROOT, clawai_bin, write_policy
from gateway_support import RawGateway, gateway_args, gateway_missing, has_all, own_state, scripted, write_config

PEERS = ROOT / "tests" / "peers" / "node_modules" / ".bin"
CLAUDE, CLAUDE_FLOW = PEERS / "claude", PEERS / "claude-flow"

_MISSING = gateway_missing()
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")

# seed 001's code-assist skill: Claude Code 2.1's server has no Grep and no Glob.
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
---

Use Claude Code's tools to accomplish: {{task}}
"""


def run_check(tmp_path, config, *extra) -> subprocess.CompletedProcess:
    policy = write_policy(tmp_path, ALLOW_ALL)
    return subprocess.run([clawai_bin(), "gateway", "--config", str(config), "--policy", str(policy), "--check", *extra],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180,
                          env=own_state(tmp_path, {**os.environ, "HOME": str(tmp_path)}),
                          cwd=tmp_path)


@pytest.mark.skipif(not (CLAUDE.exists() and CLAUDE_FLOW.exists()),
                    reason="Claude Code and claude-flow are not installed (scripts/setup-test-peers)")
def test_check_reports_every_server_skill_and_problem_of_the_seed_configuration(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    skill = tmp_path / "skills" / "code-assist"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(CODE_ASSIST)
    env = {"HOME": str(home)}
    config = write_config(tmp_path / "gateway.json", {
        "claude-code": {"command": str(CLAUDE), "args": ["mcp", "serve"], "env": env, "internalOnly": False},
        "claude-flow": {"command": str(CLAUDE_FLOW), "args": ["mcp", "start"], "env": env},
        "my-server": {"command": "npx", "args": ["-y", "my-mcp-server"], "env": env, "internalOnly": False},
    })
    out = run_check(tmp_path, config, "--skills", str(tmp_path / "skills"))
    report = out.stdout
    assert out.returncode == 1, (out.returncode, report, out.stderr[-3000:])
    assert re.search(r"^  claude-code: up, \d+ tools$", report, re.M), report
    assert re.search(r"^  claude-flow: up, 353 tools, internal \(shown by skills\)$", report, re.M), report
    assert re.search(r"^  my-server: failed, 0 tools$", report, re.M), report
    assert f"  skill__code-assist: {skill / 'SKILL.md'}" in report
    problems = report.split("problems (", 1)[1]
    assert "server `my-server` could not start" in problems, report
    assert "npm" in problems, "the cause is quoted from the server's stderr"
    # Lines 11 and 12 of the SKILL.md; Read, Edit and Bash match.
    assert f"{skill / 'SKILL.md'}:11: skill `code-assist`: `claude-code__Grep` in allowed-tools matches no tool" in problems
    assert f"{skill / 'SKILL.md'}:12: skill `code-assist`: `claude-code__Glob` in allowed-tools matches no tool" in problems
    for matched in ("Read", "Edit", "Bash"):
        assert f"claude-code__{matched}`" not in problems, report
    assert report.startswith(f"{config}:\n")


def test_check_of_a_sound_configuration_says_so_and_exits_0(tmp_path):
    skill = tmp_path / "skills" / "echoes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: echoes\nallowed-tools:\n  - a__echo\n  - b__*\n---\nEcho.\n")
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a"), "b": scripted("b", internal_only=True)})
    out = run_check(tmp_path, config, "--skills", str(tmp_path / "skills"))
    assert out.returncode == 0, (out.stdout, out.stderr[-2000:])
    assert "  a: up, 10 tools\n" in out.stdout and "  b: up, 10 tools, internal (shown by skills)\n" in out.stdout
    assert out.stdout.endswith("no problems\n"), out.stdout


def stderr_at_exit(gw: RawGateway) -> str:
    gw.close()
    deadline = time.monotonic() + 10
    while not (gw.stderr and gw.stderr[-1] == b""):
        assert time.monotonic() < deadline, "the gateway's stderr never ended"
        time.sleep(0.05)
    return b"".join(gw.stderr).decode()


def test_while_serving_a_failing_server_is_told_once_and_an_unmatched_pattern_once(tmp_path):
    failing = {"command": sys.executable, "args": ["-c", "import sys\nfor n in range(12): print(f'npm error line {n}', "
                                                   "file=sys.stderr)\nsys.exit(1)"], "internalOnly": False}
    skill = tmp_path / "skills" / "mixed"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: mixed\nallowed-tools:\n  - good__echo\n  - good__Grep\n---\nGo.\n")
    config = write_config(tmp_path / "gateway.json", {"good": scripted("good"), "bad": failing})
    gw = RawGateway(tmp_path, [*gateway_args(tmp_path, config), "--skills", str(tmp_path / "skills")])
    try:
        gw.initialize()
        gw.wait_listed(has_all("good__echo"), timeout=10)
        # Three runs of `bad` (0.5 s, then 1 s, between them), the lists read meanwhile.
        deadline = time.monotonic() + 30
        while b"".join(gw.stderr).count(b"failed to start again") < 2:
            assert time.monotonic() < deadline, b"".join(gw.stderr).decode()
            gw.tool_names()
            time.sleep(0.2)
        stderr = stderr_at_exit(gw)
    finally:
        gw.kill()
    assert stderr.count("server `bad` could not start") == 1, stderr
    # The end of its stderr, quoted once (the last 8 of its 12 lines); no raw line again.
    assert stderr.count("npm error line 11") == 1 and "npm error line 3\n" not in stderr, stderr
    runs_after_the_first = stderr.count("server `bad` failed to start again")
    # `starting` once, `could not start` once, then one line per retry.
    lines_about_bad = [line for line in stderr.splitlines() if "`bad`" in line]
    assert len(lines_about_bad) == 2 + runs_after_the_first, lines_about_bad
    told = f"{skill / 'SKILL.md'}:5: skill `mixed`: `good__Grep` in allowed-tools matches no tool"
    assert stderr.count(told) == 1, stderr
    assert "good__echo`" not in stderr
