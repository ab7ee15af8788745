"""End to end: the command line `clawai wrap` writes into a client's configuration
launches a guarded server that the official Python client can call, and a denied call
is denied (with the policy found at its default location)."""

import json
import os
import subprocess

import anyio
import pytest
from mcp import Client, StdioServerParameters

from conftest import FILESYSTEM, clawai_bin

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_wrapped_config_launches_a_guarded_server(tmp_path):
    home = tmp_path / "home"
    root = tmp_path / "data"
    (root / "public").mkdir(parents=True)
    (root / "public" / "hello.txt").write_text("hello")
    (root / "secret.txt").write_text("SECRET-CONTENT-42")
    config = home / ".config" / "Claude" / "claude_desktop_config.json"
    config.parent.mkdir(parents=True)
    original = {"mcpServers": {"files": {"command": "node", "args": [str(FILESYSTEM), str(root)], "env": {"KEEP": "me"}}}}
    config.write_text(json.dumps(original, indent=2))
    policy = home / ".config" / "clawai" / "policy.toml"
    policy.parent.mkdir(parents=True)
    policy.write_text(f"""
[[rule]]
id = "public-only"
action = "allow"
tools = ["read_text_file", "list_allowed_directories"]
any_arg = ["{root}/public/**"]

[[rule]]
id = "listing"
action = "allow"
tool = "list_allowed_directories"
""")
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_STATE_HOME": str(tmp_path / "state")}
    env.pop("CLAWAI_POLICY", None)
    out = subprocess.run([clawai_bin(), "wrap", "--all"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    entry = json.loads(config.read_text())["mcpServers"]["files"]
    assert entry["env"] == {"KEEP": "me"}
    assert os.path.isabs(entry["command"]) and entry["command"].endswith("clawai")
    # Launch exactly what the client would, with the client's environment.
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env={**env, **entry["env"]})
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            ok = await client.call_tool("read_text_file", {"path": str(root / "public" / "hello.txt")})
            assert not ok.is_error and ok.content[0].text == "hello"
            denied = await client.call_tool("read_text_file", {"path": str(root / "secret.txt")})
            assert denied.is_error and "clawai denied" in denied.content[0].text
            assert "SECRET-CONTENT-42" not in denied.content[0].text
    audit = (tmp_path / "state" / "clawai" / "audit.jsonl").read_text()
    assert '"server":"files"' in audit, "the server name from the config reaches the audit trail"
    out = subprocess.run([clawai_bin(), "unwrap", "--all"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(config.read_text()) == original
