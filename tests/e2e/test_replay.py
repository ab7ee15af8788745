"""`clawai policy replay` on a trail recorded from a real session: the official Python client
calls server-filesystem through `clawai proxy`, then candidate policies are tried on what
really happened: what would change is listed by group with counts, exit 1 when anything
would (for CI), 0 when nothing would."""

import json
import subprocess

import anyio
import pytest
from mcp import Client, StdioServerParameters

from conftest import FILESYSTEM, clawai_bin, read_audit, write_policy

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


# What ran: everything allowed and marked, annotations read (so the trail records them).
RECORDING = """
[[rule]]
id = "ask-destructive"
action = "prompt"
destructive = true
tool = "move_file"

[[rule]]
id = "everything"
action = "audit"
method = "**"
"""


async def record_session(tmp_path):
    root = tmp_path / "root"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "a.txt").write_text("alpha")
    policy = write_policy(tmp_path, RECORDING)
    audit = tmp_path / "audit.jsonl"
    params = StdioServerParameters(command=clawai_bin(), args=[
        "proxy", "--policy", str(policy), "--audit", str(audit), "--server", "filesystem", "--",
        "node", str(FILESYSTEM), str(root)])
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            await client.list_tools()
            assert "alpha" in (await client.call_tool("read_text_file", {"path": str(root / "docs" / "a.txt")})).content[0].text
            await client.call_tool("list_directory", {"path": str(root / "docs")})
            written = await client.call_tool("write_file", {"path": str(root / "docs" / "b.txt"), "content": "beta"})
            assert not written.is_error
            await client.call_tool("read_text_file", {"path": str(root / "docs" / "b.txt")})
            # Two calls the guards decide, not the rules: a write to the policy
            # (self-protection) and one carrying a credential (the arguments guard asks,
            # and this client cannot be asked).
            for arguments in [{"path": str(policy), "content": "[defaults]\naction = \"allow\"\n"},
                              {"path": str(root / "docs" / "c.txt"), "content": "AKIAIOSFODNN7EXAMPLE"}]:
                assert (await client.call_tool("write_file", arguments)).is_error
    return audit, root


def replay(tmp_path, audit, policy_text: str, *extra: str) -> subprocess.CompletedProcess:
    candidate = tmp_path / "candidate.toml"
    candidate.write_text(policy_text)
    subprocess.run([clawai_bin(), "policy", "check", str(candidate)], check=True, capture_output=True)
    return subprocess.run([clawai_bin(), "policy", "replay", "--policy", str(candidate), "--audit", str(audit), *extra],
                          capture_output=True, text=True, timeout=60)


async def test_a_stricter_policy_lists_the_calls_it_would_deny(tmp_path):
    audit, root = await record_session(tmp_path)
    recorded = [e for e in read_audit(audit) if e.get("method") == "tools/call" and e.get("kind") == "request"
                and e.get("rule") not in ("self-protection", "secrets-in-arguments")]
    assert len(recorded) == 4 and all(e["decision"] == "audit" for e in recorded)
    # The server's list said what each tool does: the trail holds it with the call.
    assert {e["tool"]: e["annotations"].get("readOnlyHint") for e in recorded} == {
        "read_text_file": True, "list_directory": True, "write_file": False}

    out = replay(tmp_path, audit, """
[[rule]]
id = "no-writes"
action = "deny"
tool = "write_file"

[[rule]]
id = "ask-destructive"
action = "prompt"
destructive = true

[[rule]]
id = "rest"
action = "allow"
method = "**"
""", "--json")
    assert out.returncode == 1, out
    report = json.loads(out.stdout)
    # tools/list and initialize pass whatever the policy says; the four calls and the lists are decided.
    groups = {(g["from"], g["to"]): g for g in report["changes"]}
    assert groups[("audit", "deny")]["count"] == 1
    assert groups[("audit", "deny")]["calls"][0]["name"] == "write_file"
    assert groups[("audit", "deny")]["calls"][0]["rule"] == "no-writes"
    allowed = groups[("audit", "allow")]
    assert {c["name"] for c in allowed["calls"] if c["method"] == "tools/call"} == {"read_text_file", "list_directory"}
    assert report["not_faithful"] == [], "annotations and plain paths were all recorded"

    text = replay(tmp_path, audit, "[[rule]]\nid = \"no-writes\"\naction = \"deny\"\ntool = \"write_file\"\n\n"
                                    "[[rule]]\nid = \"rest\"\naction = \"audit\"\nmethod = \"**\"\n")
    assert text.returncode == 1
    assert "audit → deny: 1" in text.stdout and "tools/call filesystem/write_file  by rule `no-writes`" in text.stdout


async def test_the_same_policy_changes_nothing_and_exits_0(tmp_path):
    audit, _ = await record_session(tmp_path)
    guarded = [e for e in read_audit(audit) if e.get("rule") in ("self-protection", "secrets-in-arguments")]
    assert {e["rule"] for e in guarded} == {"self-protection", "secrets-in-arguments"}, guarded
    out = replay(tmp_path, audit, RECORDING)
    assert out.returncode == 0, out
    assert "would change" in out.stdout and ": 0 would change" in out.stdout, out.stdout
    future = replay(tmp_path, audit, "[defaults]\naction = \"deny\"\n", "--since", "2999-01-01T00:00:00Z", "--json")
    assert future.returncode == 0 and json.loads(future.stdout)["checked"] == 0, future


def test_a_missing_trail_or_policy_is_an_error_that_says_what_to_do(tmp_path):
    policy = write_policy(tmp_path, RECORDING)
    out = subprocess.run([clawai_bin(), "policy", "replay", "--policy", str(policy), "--audit", str(tmp_path / "none.jsonl")],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "no audit trail" in out.stderr and "--audit" in out.stderr, out
    bad = tmp_path / "bad.toml"
    bad.write_text("[[rule]]\naction = \"maybe\"\n")
    out = subprocess.run([clawai_bin(), "policy", "replay", "--policy", str(bad), "--audit", str(tmp_path / "none.jsonl")],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "bad.toml" in out.stderr, out
