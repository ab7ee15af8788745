"""Shared helpers: where the clawai binary and the real MCP servers are."""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PEERS = ROOT / "tests" / "peers" / "node_modules" / "@modelcontextprotocol"
EVERYTHING = PEERS / "server-everything" / "dist" / "index.js"
FILESYSTEM = PEERS / "server-filesystem" / "dist" / "index.js"


def clawai_bin() -> str:
    path = os.environ.get("CLAWAI_BIN") or str(ROOT / "target" / "debug" / "clawai")
    if not pathlib.Path(path).exists():
        raise RuntimeError(f"{path} does not exist: build it with `cargo build` or set CLAWAI_BIN")
    return path


@pytest.fixture(scope="session", autouse=True)
def peers_installed():
    for server in (EVERYTHING, FILESYSTEM):
        if not server.exists():
            raise RuntimeError(f"{server} is missing: run ./scripts/setup-test-peers (CI does)")


@pytest.fixture(autouse=True)
def own_pins(tmp_path, monkeypatch):
    """Each test's own pin store: what one test's server lists is never compared with
    another's, nor with the user's own pins. Proxies started with os.environ inherit
    it, and so do those the official client starts: its stdio transport gives a child
    only a minimal environment, to which this adds the pin store."""
    pins = str(tmp_path / "pins")
    monkeypatch.setenv("CLAWAI_PINS", pins)
    import mcp.client.stdio as stdio

    minimal = stdio.get_default_environment
    monkeypatch.setattr(stdio, "get_default_environment", lambda: {**minimal(), "CLAWAI_PINS": pins})


def write_policy(tmp_path: pathlib.Path, text: str) -> pathlib.Path:
    policy = tmp_path / "policy.toml"
    policy.write_text(text)
    # The policy must be valid, or the test is about something else.
    subprocess.run([clawai_bin(), "policy", "check", str(policy)], check=True, capture_output=True)
    return policy


def read_audit(path: pathlib.Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


ALLOW_ALL = """
[[rule]]
id = "allow-all"
action = "allow"
method = "**"
"""
