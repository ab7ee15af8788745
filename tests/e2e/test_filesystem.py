"""server-filesystem through clawai with a restrictive policy: reads outside the
allowed directory are denied and the file's content never crosses the proxy."""

import anyio
import pytest
from mcp import Client, StdioServerParameters

from conftest import FILESYSTEM, clawai_bin, read_audit, write_policy

pytestmark = pytest.mark.anyio

SECRET = "TOP-SECRET-7f3a9c"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    (root / "allowed").mkdir(parents=True)
    (root / "allowed" / "notes.txt").write_text("public notes")
    (root / "secret.txt").write_text(SECRET)
    (root / ".ssh").mkdir()
    (root / ".ssh" / "id_rsa").write_text(SECRET)
    return root


def policy_for(tmp_path, root):
    return write_policy(tmp_path, f"""
[[rule]]
id = "no-ssh"
action = "deny"
tool = "**"
any_arg = "**/.ssh/**"
description = "SSH keys never leave the machine"

[[rule]]
id = "project-reads"
action = "allow"
tools = ["read_text_file", "read_file", "list_directory", "read_multiple_files"]
any_arg = "{root}/allowed/**"

[[rule]]
id = "listing"
action = "allow"
tools = ["list_allowed_directories"]

[[rule]]
id = "lists"
action = "allow"
method = ["tools/list", "resources/list", "prompts/list"]
""")


def proxied(policy, audit, root):
    return StdioServerParameters(
        command=clawai_bin(),
        args=["proxy", "--policy", str(policy), "--audit", str(audit), "--server", "filesystem", "--", "node", str(FILESYSTEM), str(root)],
    )


async def test_reads_inside_are_allowed_and_outside_denied(tmp_path, tree):
    policy = policy_for(tmp_path, tree)
    audit = tmp_path / "audit.jsonl"
    seen = []

    async def on_message(message):
        seen.append(repr(message))

    with anyio.fail_after(60):
        async with Client(proxied(policy, audit, tree), mode="legacy", message_handler=on_message) as client:
            ok = await client.call_tool("read_text_file", {"path": str(tree / "allowed" / "notes.txt")})
            assert not ok.is_error and "public notes" in ok.content[0].text

            for path in [
                str(tree / "secret.txt"),
                str(tree / "allowed" / ".." / "secret.txt"),
                str(tree / "allowed") + "/%2e%2e/secret.txt",
                str(tree / ".ssh" / "id_rsa"),
                str(tree / "allowed" / ".." / ".ssh" / "id_rsa"),
            ]:
                denied = await client.call_tool("read_text_file", {"path": path})
                assert denied.is_error, path
                assert SECRET not in denied.content[0].text
                assert "clawai denied" in denied.content[0].text

            many = await client.call_tool("read_multiple_files", {"paths": [str(tree / "allowed" / "notes.txt"), str(tree / "secret.txt")]})
            assert many.is_error and SECRET not in str(many.model_dump())
    assert all(SECRET not in m for m in seen)
    events = read_audit(audit)
    assert SECRET not in (tmp_path / "audit.jsonl").read_text()
    decisions = [(e.get("rule"), e["decision"]) for e in events if e.get("tool") in ("read_text_file", "read_multiple_files") and e["kind"] == "request"]
    assert decisions[0] == ("project-reads", "allow")
    assert ("no-ssh", "deny") in decisions
    assert (None, "deny") in decisions, "the default denies what no rule allows"


@pytest.mark.parametrize("follow_links", [True, False])
async def test_links_out_of_the_allowed_directory_are_denied_when_the_policy_follows_links(tmp_path, tree, follow_links):
    # server-filesystem resolves both links to files inside the directory it serves and
    # reads them: only clawai can refuse, and only when it looks where links lead.
    (tree / "allowed" / "docs").symlink_to(tree / ".ssh", target_is_directory=True)
    (tree / "allowed" / "escape.txt").symlink_to(tree / "secret.txt")
    policy = write_policy(tmp_path, f"""
[defaults]
follow_links = {str(follow_links).lower()}

[[rule]]
id = "no-ssh"
action = "deny"
tool = "**"
any_arg = "**/.ssh/**"

[[rule]]
id = "project-reads"
action = "allow"
tools = ["read_text_file"]
args.path = "{tree}/allowed/**"
""")
    audit = tmp_path / "audit.jsonl"
    with anyio.fail_after(60):
        async with Client(proxied(policy, audit, tree), mode="legacy") as client:
            notes = await client.call_tool("read_text_file", {"path": str(tree / "allowed" / "notes.txt")})
            key = await client.call_tool("read_text_file", {"path": str(tree / "allowed" / "docs" / "id_rsa")})
            escape = await client.call_tool("read_text_file", {"path": str(tree / "allowed" / "escape.txt")})
    assert not notes.is_error and "public notes" in notes.content[0].text
    if follow_links:
        assert key.is_error and "rule `no-ssh`" in key.content[0].text
        # No rule denies secret.txt: the allow no longer holds, so the default denies.
        assert escape.is_error and "clawai denied" in escape.content[0].text
        for result in (key, escape):
            assert SECRET not in str(result.model_dump())
    else:
        # Matched as spelled, both paths are under `allowed/` and not under `.ssh`.
        assert not key.is_error and SECRET in key.content[0].text
        assert not escape.is_error and SECRET in escape.content[0].text


async def test_a_pin_store_named_by_flag_is_protected_like_clawais_own_files(tmp_path, tree):
    # Overwriting a pin file, or moving the store away, would make clawai trust a rug
    # pull anew: no tool call may, whatever the policy says, wherever `--pins` puts it.
    policy = write_policy(tmp_path, '[defaults]\naction = "allow"\n')
    pins = tree / "mypins"
    params = StdioServerParameters(
        command=clawai_bin(),
        args=["proxy", "--policy", str(policy), "--audit", str(tmp_path / "audit.jsonl"), "--pins", str(pins),
              "--server", "filesystem", "--", "node", str(FILESYSTEM), str(tree)],
    )
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            await client.list_tools()
            [stored] = list(pins.iterdir())
            before = stored.read_bytes()
            for tool, arguments in [
                ("write_file", {"path": str(stored), "content": "{}"}),
                ("write_file", {"path": str(pins / "other.json"), "content": "{}"}),
                ("move_file", {"source": str(pins), "destination": str(tree / "elsewhere")}),
                ("move_file", {"source": str(tree / "allowed" / "notes.txt"), "destination": str(pins / "n.json")}),
            ]:
                refused = await client.call_tool(tool, arguments)
                assert refused.is_error and "self-protection" in refused.content[0].text, (tool, refused)
            # Anything else is the policy's business.
            wrote = await client.call_tool("write_file", {"path": str(tree / "allowed" / "x.txt"), "content": "x"})
            assert not wrote.is_error, wrote
    assert stored.read_bytes() == before and sorted(p.name for p in pins.iterdir()) == [stored.name]
    assert not (tree / "elsewhere").exists()
