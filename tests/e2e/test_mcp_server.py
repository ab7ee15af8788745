"""clawai's built-in tools with the official Python `mcp` client: `clawai mcp-server` under the
starter policy (`clawai policy init`): a read inside the project is allowed, a credential read
is denied, `exec_shell` and `write_file` ask a person and do nothing unless the person allows;
`"type": "builtin"` in a gateway; and a gateway built in Rust over in-process SDK servers."""

import json
import pathlib
import subprocess

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from conftest import clawai_bin, read_audit
from gateway_support import client as gateway_client, error_text, listed, has_all, scripted, text_of, write_config
from test_approvals import Person, decide, home_env
from test_sdk import example

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


BUILTINS = {f"builtin__{name}" for name in ("read_file", "write_file", "list_directory", "exec_shell", "web_fetch")}


def starter_home(tmp_path: pathlib.Path) -> dict:
    """A home of the test's own with the starter policy written by `clawai policy init`."""
    env = home_env(tmp_path)
    subprocess.run([clawai_bin(), "policy", "init"], env=env, check=True, capture_output=True)
    return env


def mcp_server(tmp_path: pathlib.Path, env: dict, *extra: str, **callbacks) -> Client:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    params = StdioServerParameters(command=clawai_bin(), args=["mcp-server", "--ask-timeout", "5", *extra],
                                   env=env, cwd=project)
    return Client(params, mode="legacy", **callbacks)


def audit(env: dict) -> list[dict]:
    return read_audit(pathlib.Path(env["XDG_STATE_HOME"]) / "clawai" / "audit.jsonl")


async def test_a_read_inside_the_project_is_allowed_and_audited(tmp_path):
    env = starter_home(tmp_path)
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "notes.txt").write_text("meeting at noon\n")
    with anyio.fail_after(30):
        async with mcp_server(tmp_path, env) as c:
            names = await listed(c, has_all(*BUILTINS))
            assert BUILTINS <= names and "search_tools" in names
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert tools["builtin__read_file"].annotations.read_only_hint is True
            assert tools["builtin__exec_shell"].annotations.destructive_hint is True
            assert text_of(await c.call_tool("builtin__read_file", {"path": "notes.txt"})) == "meeting at noon\n"
            listing = text_of(await c.call_tool("builtin__list_directory", {"path": "."}))
            assert listing == "notes.txt (16 bytes)"
    decided = [e for e in audit(env) if e.get("tool") == "read_file" and e.get("decision")]
    assert decided and decided[0]["decision"] == "audit" and decided[0]["rule"] == "audit-the-rest", decided
    assert decided[0]["server"] == "builtin"


async def test_a_credential_read_is_denied_and_nothing_is_read(tmp_path):
    env = starter_home(tmp_path)
    ssh = pathlib.Path(env["HOME"]) / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nsecret-key-material\n")
    (tmp_path / "project").mkdir()
    # A path that climbs out of the project into the key, and a link to it, are caught too.
    (tmp_path / "project" / "innocent.txt").symlink_to(ssh / "id_ed25519")
    with anyio.fail_after(30):
        async with mcp_server(tmp_path, env) as c:
            await listed(c, has_all(*BUILTINS))
            for path in (str(ssh / "id_ed25519"), f"../home/.ssh/id_ed25519", "innocent.txt"):
                why = await error_text(c, "builtin__read_file", {"path": path})
                assert "no-credentials" in why and "secret-key-material" not in why, (path, why)
    denied = [e for e in audit(env) if e.get("tool") == "read_file" and e.get("decision") == "deny"]
    assert len(denied) == 3 and all(e["rule"] == "no-credentials" for e in denied), denied


async def test_exec_shell_asks_a_person_and_runs_only_when_allowed(tmp_path):
    env = starter_home(tmp_path)
    marker = tmp_path / "ran"
    refuse = Person(decide("deny"))
    with anyio.fail_after(30):
        async with mcp_server(tmp_path, env, elicitation_callback=refuse) as c:
            await listed(c, has_all(*BUILTINS))
            why = await error_text(c, "builtin__exec_shell", {"command": "touch", "args": [str(marker)]})
            assert "declined" in why, why
    assert len(refuse.questions) == 1 and "exec_shell" in refuse.questions[0].message
    assert "ask-before-delete" in refuse.questions[0].message
    assert not marker.exists(), "a refused command never runs"

    allow = Person(decide("allow_once"))
    with anyio.fail_after(30):
        async with mcp_server(tmp_path, env, elicitation_callback=allow) as c:
            await listed(c, has_all(*BUILTINS))
            result = await c.call_tool("builtin__exec_shell", {"command": "touch", "args": [str(marker)]})
            assert text_of(result) == "exit status 0"
    assert len(allow.questions) == 1 and marker.exists()


async def test_write_file_asks_a_person_and_writes_only_when_allowed(tmp_path):
    env = starter_home(tmp_path)
    target = tmp_path / "project" / "out.txt"
    refuse = Person(types.ElicitResult(action="decline"))
    with anyio.fail_after(30):
        async with mcp_server(tmp_path, env, elicitation_callback=refuse) as c:
            await listed(c, has_all(*BUILTINS))
            why = await error_text(c, "builtin__write_file", {"path": "out.txt", "content": "x"})
            assert "declined" in why, why
    assert len(refuse.questions) == 1 and "ask-before-destructive" in refuse.questions[0].message
    assert not target.exists()
    allow = Person(decide("allow_once"))
    with anyio.fail_after(30):
        async with mcp_server(tmp_path, env, elicitation_callback=allow) as c:
            await listed(c, has_all(*BUILTINS))
            assert text_of(await c.call_tool("builtin__write_file", {"path": "out.txt", "content": "hello"})) \
                == "wrote 5 bytes to `out.txt`"
    assert target.read_text() == "hello"


async def test_the_builtin_tools_join_a_gateway_beside_other_servers(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"ext": scripted("ext"), "builtin": {"type": "builtin"}})
    (tmp_path / "data.txt").write_text("from the gateway")
    with anyio.fail_after(30):
        async with gateway_client(tmp_path, config) as c:
            names = await listed(c, has_all(*BUILTINS, "ext__echo"))
            assert BUILTINS <= names
            assert text_of(await c.call_tool("builtin__read_file", {"path": "data.txt"})) == "from the gateway"
            assert text_of(await c.call_tool("ext__echo", {"text": "hi"})) == "ext: hi"


def test_a_builtin_entry_under_another_name_stops_the_gateway(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"tools": {"type": "builtin"}})
    out = subprocess.run([clawai_bin(), "gateway", "--config", str(config)], capture_output=True, text=True,
                         timeout=30, stdin=subprocess.DEVNULL)
    assert out.returncode == 2, out
    assert "gateway.json:3:5:" in out.stderr and "rename `tools` to `builtin`" in out.stderr, out.stderr


async def test_a_gateway_built_in_rust_over_in_process_sdk_servers(tmp_path):
    params = StdioServerParameters(command=example("in_process_gateway"), args=[])
    with anyio.fail_after(30):
        async with Client(params, mode="legacy") as c:
            names = await listed(c, has_all("math__add", "math__divide", "text__echo"))
            # The policy denies `shout` whatever its arguments: the gateway does not list it,
            # and a call to it is denied by the rule.
            assert names == {"math__add", "math__divide", "text__echo", "search_tools"}
            assert text_of(await c.call_tool("math__add", {"a": 2, "b": 40})) == "42"
            assert text_of(await c.call_tool("text__echo", {"text": "quiet"})) == "quiet"
            why = await error_text(c, "text__shout", {"text": "loud"})
            assert "rule `no-shouting`" in why and "LOUD" not in why, why


ALLOW_EVERYTHING = """
[defaults]
action = "allow"
"""


async def test_no_tool_call_changes_clawais_files_or_client_configs_whatever_the_policy(tmp_path):
    env = home_env(tmp_path)
    home = pathlib.Path(env["HOME"])
    policy = pathlib.Path(env["XDG_CONFIG_HOME"]) / "clawai" / "policy.toml"
    policy.parent.mkdir(parents=True)
    policy.write_text(ALLOW_EVERYTHING)
    cursor = home / ".cursor" / "mcp.json"
    cursor.parent.mkdir()
    cursor.write_text('{"mcpServers": {}}')
    (tmp_path / "project").mkdir()
    # A link in the project to the policy is the policy.
    (tmp_path / "project" / "settings.toml").symlink_to(policy)
    audit_file = pathlib.Path(env["XDG_STATE_HOME"]) / "clawai" / "audit.jsonl"
    with anyio.fail_after(30):
        async with mcp_server(tmp_path, env) as c:
            await listed(c, has_all(*BUILTINS))
            for tool, arguments in [
                ("builtin__write_file", {"path": str(policy), "content": "[defaults]\naction = \"allow\"\n"}),
                ("builtin__write_file", {"path": "settings.toml", "content": "x"}),
                ("builtin__write_file", {"path": "~/.cursor/mcp.json", "content": "{}"}),
                ("builtin__exec_shell", {"command": f"echo '{{}}' > {cursor}", "shell": True}),
                ("builtin__exec_shell", {"command": "rm", "args": ["-f", str(audit_file)]}),
            ]:
                why = await error_text(c, tool, arguments)
                assert "self-protection" in why, (tool, arguments, why)
            # Reads follow the policy, and other files are the policy's business.
            assert "action" in text_of(await c.call_tool("builtin__read_file", {"path": str(policy)}))
            assert text_of(await c.call_tool("builtin__write_file", {"path": "notes.md", "content": "ok"})) \
                == "wrote 2 bytes to `notes.md`"
    assert policy.read_text() == ALLOW_EVERYTHING and cursor.read_text() == '{"mcpServers": {}}'
    assert audit_file.exists()
    refused = [e for e in audit(env) if e.get("rule") == "self-protection"]
    assert len(refused) == 5 and all(e["decision"] == "deny" for e in refused)


async def test_a_call_carrying_a_credential_is_asked_about_even_when_the_policy_allows(tmp_path):
    env = home_env(tmp_path)
    policy = pathlib.Path(env["XDG_CONFIG_HOME"]) / "clawai" / "policy.toml"
    policy.parent.mkdir(parents=True)
    policy.write_text(ALLOW_EVERYTHING)
    refuse = Person(types.ElicitResult(action="decline"))
    import base64
    hidden = base64.b64encode(b"token=ghp_abcdefghijklmnopqrstuvwxyz0123456789").decode()
    with anyio.fail_after(30):
        async with mcp_server(tmp_path, env, elicitation_callback=refuse) as c:
            await listed(c, has_all(*BUILTINS))
            for content in ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", hidden):
                why = await error_text(c, "builtin__write_file", {"path": "leak.txt", "content": content})
                assert "declined" in why, why
            assert text_of(await c.call_tool("builtin__write_file", {"path": "plain.txt", "content": "hello"})) \
                == "wrote 5 bytes to `plain.txt`"
    assert len(refuse.questions) == 2 and all("secrets-in-arguments" in q.message for q in refuse.questions)
    assert not (tmp_path / "project" / "leak.txt").exists()
    events = [e for e in audit(env) if e.get("rule") == "secrets-in-arguments"]
    asked = [e for e in events if e.get("kind") == "request"]
    assert len(asked) == 2 and all("AKIA" not in json.dumps(e) and "ghp_" not in json.dumps(e) for e in events)
    # The person's answers, each with the rule that asked and what it decided.
    answered = [e for e in events if e.get("kind") == "approval"]
    assert len(answered) == 2 and all(e["decision"] == "deny" for e in answered), answered
