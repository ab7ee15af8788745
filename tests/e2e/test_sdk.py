"""Servers written with clawai-sdk, driven by the official Python `mcp` client over
stdio (legacy handshake and auto mode, which starts with `server/discover`) and over
Streamable HTTP, guarded by `clawai proxy`, and checked by the official conformance
suite over the SDK's own HTTP transport."""

import os
import pathlib
import re
import subprocess
import time
import urllib.request

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from conftest import ROOT, clawai_bin, read_audit, write_policy
from test_conformance import NODE22, SUITE, free_port, stop

pytestmark = pytest.mark.anyio

# The scenarios for what the SDK implements: lifecycle, ping, logging, tools.
SDK_SCENARIOS = {
    "server-initialize", "ping", "logging-set-level", "tools-list", "tools-call-simple-text",
    "tools-call-image", "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content",
    "tools-call-with-logging", "tools-call-error", "tools-call-with-progress", "json-schema-2020-12",
    "dns-rebinding-protection",
}


@pytest.fixture
def anyio_backend():
    return "asyncio"


def example(name: str) -> str:
    path = pathlib.Path(os.environ.get("CLAWAI_SDK_EXAMPLES", ROOT / "target" / "debug" / "examples")) / name
    if not path.exists():
        raise RuntimeError(f"{path} does not exist: build it with `cargo build -p clawai-sdk --examples`")
    return str(path)


def text(result) -> str:
    return "\n".join(block.text for block in result.content)


async def exercise_calculator(client):
    """What a user of the seed's calculator server does, and every error path."""
    tools = await client.list_tools()
    by_name = {tool.name: tool for tool in tools.tools}
    assert sorted(by_name) == ["calculator", "echo", "fetch"]
    assert by_name["calculator"].input_schema["required"] == ["operation", "a", "b"]
    assert by_name["echo"].input_schema["required"] == ["text"]
    assert by_name["echo"].input_schema["properties"]["repeat"]["description"] == "How many times (default 1)."

    added = await client.call_tool("calculator", {"operation": "add", "a": 2, "b": 3})
    assert text(added) == "Result: 5" and not added.is_error
    assert text(await client.call_tool("calculator", {"operation": "multiply", "a": 6, "b": 7})) == "Result: 42"
    unknown_op = await client.call_tool("calculator", {"operation": "divide", "a": 1, "b": 1})
    assert unknown_op.is_error and text(unknown_op) == "Unknown operation: divide"
    assert text(await client.call_tool("echo", {"text": "hi", "repeat": 3})) == "hi\nhi\nhi"
    assert text(await client.call_tool("echo", {"text": "once"})) == "once"
    assert text(await client.call_tool("fetch", {"url": "https://example.com"})) == "Fetched: https://example.com"

    with pytest.raises(MCPError) as handler_error:
        await client.call_tool("fetch", {"url": ""})
    assert handler_error.value.error.code == -32603
    assert "URL cannot be empty" in handler_error.value.error.message
    with pytest.raises(MCPError) as missing:
        await client.call_tool("calculator", {"operation": "add", "a": 1})
    assert missing.value.error.code == -32602 and "`b`" in missing.value.error.message
    with pytest.raises(MCPError) as mistyped:
        await client.call_tool("calculator", {"operation": "add", "a": "one", "b": 1})
    assert mistyped.value.error.code == -32602 and "`a`" in mistyped.value.error.message
    with pytest.raises(MCPError) as unknown_tool:
        await client.call_tool("no-such-tool", {})
    assert unknown_tool.value.error.code == -32602


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_server_over_stdio(mode):
    params = StdioServerParameters(command=example("calculator"), args=[])
    async with Client(params, mode=mode) as client:
        # auto mode probes server/discover, which the SDK answers: the stateless revision.
        expected = "2025-11-25" if mode == "legacy" else "2026-07-28"
        assert client.session.protocol_version == expected
        assert client.session.server_info.name == "math-tools"
        await exercise_calculator(client)


def wait_for_port(port: int, proc: subprocess.Popen):
    deadline = time.time() + 20
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/mcp", timeout=1)
        except urllib.error.HTTPError:
            return  # it answers (405 for GET)
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the server did not start listening")


def http_server(name: str, *args: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen([example(name), *args, f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL, start_new_session=True)
    wait_for_port(port, proc)
    return proc, port


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_server_over_streamable_http(mode):
    proc, port = http_server("calculator", "--http")
    try:
        async with Client(f"http://localhost:{port}/mcp", mode=mode) as client:
            await exercise_calculator(client)
    finally:
        stop(proc)


async def test_sdk_server_guarded_by_clawai(tmp_path):
    policy = write_policy(tmp_path, """
[[rule]]
id = "no-multiplying"
description = "multiplication is off limits"
action = "deny"
tool = "calculator"
args.operation = "multiply"

[[rule]]
id = "rest"
action = "allow"
method = "**"
""")
    audit = tmp_path / "audit.jsonl"
    params = StdioServerParameters(command=clawai_bin(), args=["proxy", "--policy", str(policy), "--audit", str(audit), "--server", "math", "--", example("calculator")])
    async with Client(params, mode="auto") as client:
        assert text(await client.call_tool("calculator", {"operation": "add", "a": 1, "b": 1})) == "Result: 2"
        denied = await client.call_tool("calculator", {"operation": "multiply", "a": 6, "b": 7})
        assert denied.is_error and "no-multiplying" in text(denied) and "42" not in text(denied)
    decisions = [(e.get("tool"), e.get("decision")) for e in read_audit(audit) if e.get("method") == "tools/call" and e.get("decision")]
    assert ("calculator", "deny") in decisions and ("calculator", "allow") in decisions


def test_conformance_scenarios_pass_against_the_sdk(tmp_path):
    for path in (NODE22, SUITE):
        if not path.exists():
            raise RuntimeError(f"{path} is missing: run ./scripts/setup-test-peers")
    proc, port = http_server("conformance_server")
    results = {}
    try:
        for scenario in sorted(SDK_SCENARIOS):
            out = subprocess.run([str(NODE22), str(SUITE), "server", "--url", f"http://localhost:{port}/mcp", "--scenario", scenario],
                                 cwd=tmp_path, capture_output=True, text=True, timeout=120)
            summary = re.search(r"Passed: (\d+)/(\d+), (\d+) failed", out.stdout)
            assert summary, f"{scenario}: no result\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
            results[scenario] = (int(summary.group(1)), int(summary.group(3)))
    finally:
        stop(proc)
    failing = {name: r for name, r in results.items() if r[1] or not r[0]}
    assert not failing, f"SDK scenarios that did not pass: {failing}"
