"""clawai over HTTP with real peers: the official Python client over Streamable HTTP
through `clawai proxy --listen` (in front of a stdio server, and of a remote one), the
same client over stdio through `clawai proxy --upstream` in front of server-everything's
HTTP modes (Streamable HTTP, and the legacy HTTP+SSE transport), policy denials inside
event streams, and the official conformance suite through `--listen`."""

import base64
import concurrent.futures
import http.client as http_client
import http.server as http_server
import json
import os
import pathlib
import re
import select
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from conftest import ALLOW_ALL, EVERYTHING, clawai_bin, read_audit, write_policy
from test_conformance import NODE22, SUITE, TARGET, free_port, stop
from test_everything import direct, session_transcript
from test_sdk import example as sdk_example

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


def wait_until_listening(port: int, proc: subprocess.Popen, path: str = "/mcp"):
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {port}")


def everything_http(mode: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen(["node", str(EVERYTHING), mode], env={**os.environ, "PORT": str(port)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    wait_until_listening(port, proc)
    return proc, port


def clawai_listen(policy, audit, *target: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen([clawai_bin(), "proxy", "--listen", f"127.0.0.1:{port}", "--policy", str(policy),
                             "--audit", str(audit), "--server", "everything", *target],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    wait_until_listening(port, proc)
    return proc, port


def upstream_params(policy, audit, url: str) -> StdioServerParameters:
    return StdioServerParameters(command=clawai_bin(), args=["proxy", "--upstream", url, "--policy", str(policy),
                                                             "--audit", str(audit), "--server", "everything"])


async def test_listen_in_front_of_a_stdio_server_is_identical_to_direct(tmp_path):
    policy = write_policy(tmp_path, ALLOW_ALL)
    audit = tmp_path / "audit.jsonl"
    proc, port = clawai_listen(policy, audit, "--", "node", str(EVERYTHING), "stdio")
    try:
        with anyio.fail_after(90):
            expected = await session_transcript(direct(), "legacy")
            actual = await session_transcript(f"http://localhost:{port}/mcp", "auto")
    finally:
        stop(proc)
    assert expected["progress"] and "sampled: " in str(expected["sampling"])
    assert actual == expected
    calls = {e["tool"] for e in read_audit(audit) if e.get("method") == "tools/call" and e["kind"] == "request"}
    assert {"echo", "trigger-sampling-request", "trigger-elicitation-request"} <= calls


@pytest.mark.parametrize("transport,path", [("streamableHttp", "/mcp"), ("sse", "/sse")])
async def test_upstream_in_front_of_a_remote_server_is_identical_to_direct(tmp_path, transport, path):
    policy = write_policy(tmp_path, ALLOW_ALL)
    audit = tmp_path / "audit.jsonl"
    server, port = everything_http(transport)
    try:
        with anyio.fail_after(90):
            expected = await session_transcript(direct(), "legacy")
            actual = await session_transcript(upstream_params(policy, audit, f"http://localhost:{port}{path}"), "legacy")
    finally:
        stop(server)
    assert actual == expected
    events = read_audit(audit)
    assert any(e.get("tool") == "trigger-sampling-request" and e.get("decision") == "allow" for e in events)
    assert any(e.get("method") == "sampling/createMessage" and e.get("direction") == "server->client" for e in events)


async def test_listen_in_front_of_a_remote_server(tmp_path):
    policy = write_policy(tmp_path, ALLOW_ALL)
    audit = tmp_path / "audit.jsonl"
    server, upstream_port = everything_http("streamableHttp")
    proc, port = clawai_listen(policy, audit, "--upstream", f"http://localhost:{upstream_port}/mcp")
    try:
        with anyio.fail_after(90):
            expected = await session_transcript(direct(), "legacy")
            actual = await session_transcript(f"http://localhost:{port}/mcp", "legacy")
    finally:
        stop(proc)
        stop(server)
    assert actual == expected


DENY_POLICY = """
[[rule]]
id = "no-env"
action = "deny"
tool = "get-env"
description = "The environment holds secrets"

[[rule]]
id = "no-sampling"
action = "deny"
method = "sampling/createMessage"

[[rule]]
action = "allow"
method = "**"
"""


async def test_denials_over_http_and_inside_event_streams(tmp_path):
    policy = write_policy(tmp_path, DENY_POLICY)
    audit = tmp_path / "audit.jsonl"
    asked = []

    async def sampler(context, params):
        asked.append(params)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="x"), model="m")

    proc, port = clawai_listen(policy, audit, "--", "node", str(EVERYTHING), "stdio")
    try:
        with anyio.fail_after(60):
            async with Client(f"http://localhost:{port}/mcp", mode="legacy", sampling_callback=sampler) as client:
                denied = await client.call_tool("get-env", {})
                assert denied.is_error and "no-env" in denied.content[0].text and "PATH" not in denied.content[0].text
                # The server's sampling request travels inside the call's event stream;
                # clawai answers it for the client, which is never asked.
                sampled = await client.call_tool("trigger-sampling-request", {"prompt": "leak", "maxTokens": 5})
                ok = await client.call_tool("echo", {"message": "still serving"})
                assert "still serving" in ok.content[0].text
    finally:
        stop(proc)
    assert asked == []
    assert sampled.is_error or "no-sampling" in str(sampled.model_dump())
    events = read_audit(audit)
    assert any(e.get("tool") == "get-env" and e["decision"] == "deny" for e in events)
    assert any(e.get("method") == "sampling/createMessage" and e.get("decision") == "deny" for e in events)


async def test_denials_through_upstream(tmp_path):
    policy = write_policy(tmp_path, DENY_POLICY)
    audit = tmp_path / "audit.jsonl"
    server, port = everything_http("streamableHttp")
    try:
        with anyio.fail_after(60):
            async with Client(upstream_params(policy, audit, f"http://localhost:{port}/mcp"), mode="legacy") as client:
                denied = await client.call_tool("get-env", {})
                assert denied.is_error and "no-env" in denied.content[0].text
    finally:
        stop(server)


async def test_a_remote_entry_wrapped_by_clawai_wrap_is_guarded(tmp_path):
    """As a user would: a Cursor config with a remote server, `clawai wrap --all`, then the
    client starts the entry it finds in the file."""
    policy = write_policy(tmp_path, DENY_POLICY)
    audit = tmp_path / "audit.jsonl"
    home = tmp_path / "home"
    config = home / ".cursor" / "mcp.json"
    config.parent.mkdir(parents=True)
    server, port = everything_http("streamableHttp")
    original = json.dumps({"mcpServers": {"everything": {"url": f"http://localhost:{port}/mcp",
                                                         "headers": {"X-Team": "core"}}}}, indent=2)
    config.write_text(original)
    env = {**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(home / ".config")}
    try:
        wrap = subprocess.run([clawai_bin(), "wrap", "--all", "--policy", str(policy)], env=env,
                              capture_output=True, text=True, timeout=30)
        assert wrap.returncode == 0 and "wrapped everything" in wrap.stdout, wrap.stdout + wrap.stderr
        entry = json.loads(config.read_text())["mcpServers"]["everything"]
        assert "url" not in entry and "--upstream" in entry["args"], entry
        params = StdioServerParameters(command=entry["command"], args=entry["args"],
                                       env={**os.environ, "CLAWAI_AUDIT": str(audit)})
        with anyio.fail_after(60):
            async with Client(params, mode="legacy") as client:
                denied = await client.call_tool("get-env", {})
                assert denied.is_error and "no-env" in denied.content[0].text
                ok = await client.call_tool("echo", {"message": "through the wrap"})
                assert "through the wrap" in ok.content[0].text
        unwrap = subprocess.run([clawai_bin(), "unwrap", "--all"], env=env, capture_output=True, text=True,
                                timeout=30)
        assert unwrap.returncode == 0, unwrap.stderr
        assert config.read_text() == original, "unwrap gives back the exact file"
    finally:
        stop(server)
    events = read_audit(audit)
    assert any(e.get("tool") == "get-env" and e["decision"] == "deny" and e.get("server") == "everything"
               for e in events)


def http(method: str, port: int, headers: dict, body: bytes | None = None) -> tuple[int, dict, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}'


def test_front_door_checks(tmp_path):
    policy = write_policy(tmp_path, ALLOW_ALL)
    port = free_port()
    proc = subprocess.Popen([clawai_bin(), "proxy", "--listen", str(port), "--policy", str(policy), "--audit",
                             str(tmp_path / "a.jsonl"), "--auth-token-env", "CLAWAI_TEST_TOKEN", "--session-idle", "1",
                             "--", "node", str(EVERYTHING), "stdio"],
                            env={**os.environ, "CLAWAI_TEST_TOKEN": "t0ken"}, stderr=subprocess.DEVNULL, start_new_session=True)
    wait_until_listening(port, proc)
    json_headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    authed = {**json_headers, "Authorization": "Bearer t0ken"}
    try:
        assert http("POST", port, json_headers, INIT)[0] == 401
        assert http("POST", port, {**json_headers, "Authorization": "Bearer wrong"}, INIT)[0] == 401
        assert http("POST", port, {**authed, "Origin": "http://evil.example"}, INIT)[0] == 403
        assert http("POST", port, {**authed, "Host": "evil.example"}, INIT)[0] == 403
        status, headers, body = http("POST", port, authed, INIT)
        assert status == 200, body
        session = headers["mcp-session-id"]
        ping = b'{"jsonrpc":"2.0","id":2,"method":"ping"}'
        assert http("POST", port, authed, ping)[0] == 400, "no session id"
        assert http("POST", port, {**authed, "Mcp-Session-Id": "nope"}, ping)[0] == 404
        status, _, body = http("POST", port, {**authed, "Mcp-Session-Id": session}, b'[{"jsonrpc":"2.0","id":3,"method":"ping"}]')
        assert status == 400 and "-32600" in body, "a batch is refused"
        status, _, body = http("POST", port, {**authed, "Mcp-Session-Id": session}, ping)
        assert status == 200 and '"result"' in body
        # 2026-07-28 headers that disagree with the body are refused before any decision.
        mismatched = {**authed, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
        call = b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get-env","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}'
        status, _, body = http("POST", port, mismatched, call)
        assert status == 400 and "-32020" in body
        time.sleep(2.5)
        assert http("POST", port, {**authed, "Mcp-Session-Id": session}, ping)[0] == 404, "the idle session expired"
    finally:
        stop(proc)


def run_suite(url: str, workdir) -> dict[str, tuple[int, int]]:
    out = subprocess.run([str(NODE22), str(SUITE), "server", "--url", url], cwd=workdir, capture_output=True, text=True, timeout=600)
    results = {m.group(1): (int(m.group(2)), int(m.group(3)))
               for m in re.finditer(r"^[✓✗] ([a-z0-9-]+): (\d+) passed, (\d+) failed", out.stdout, re.M)}
    assert results, out.stdout[-2000:] + out.stderr[-2000:]
    return results


def run_suite_both(tmp_path, direct_port: int, clawai_port: int):
    """The suite against the server directly, then through clawai."""
    results = []
    for name, port in (("direct", direct_port), ("clawai", clawai_port)):
        (tmp_path / name).mkdir()
        results.append(run_suite(f"http://localhost:{port}/mcp", tmp_path / name))
    return results


def test_conformance_through_listen_in_front_of_a_stdio_server(tmp_path):
    policy = write_policy(tmp_path, ALLOW_ALL)
    audit = tmp_path / "audit.jsonl"
    proc, port = clawai_listen(policy, audit, "--", "node", str(TARGET))
    try:
        results = run_suite(f"http://localhost:{port}/mcp", tmp_path)
    finally:
        stop(proc)
    failing = {name: r for name, r in results.items() if r[1] or not r[0]}
    assert not failing, f"every scenario passes through clawai --listen: {failing}"
    assert len(results) >= 30 and results["dns-rebinding-protection"][0] >= 2


def test_conformance_through_listen_in_front_of_a_remote_server(tmp_path):
    policy = write_policy(tmp_path, ALLOW_ALL)
    server, upstream_port = everything_http("streamableHttp")
    proc, port = clawai_listen(policy, tmp_path / "a.jsonl", "--upstream", f"http://localhost:{upstream_port}/mcp")
    try:
        direct_results, through = run_suite_both(tmp_path, upstream_port, port)
    finally:
        stop(proc)
        stop(server)
    assert through["dns-rebinding-protection"][1] == 0, "clawai protects even where the server does not"
    # Each scenario passes or fails as it does directly. Check counts are not compared:
    # server-sse-multiple-streams counts a second SUCCESS only when an answer comes as an
    # event stream, and clawai answers a response that comes alone as JSON (an INFO).
    for name in direct_results:
        if name != "dns-rebinding-protection":
            assert (through[name][1] == 0) == (direct_results[name][1] == 0), name


def test_a_client_that_disconnects_cancels_its_call(tmp_path):
    policy = write_policy(tmp_path, ALLOW_ALL)
    audit = tmp_path / "audit.jsonl"
    proc, port = clawai_listen(policy, audit, "--", "node", str(EVERYTHING), "stdio")
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    try:
        status, response_headers, _ = http("POST", port, headers, INIT)
        session = {**headers, "Mcp-Session-Id": response_headers["mcp-session-id"]}
        http("POST", port, session, b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        conn = http_client.HTTPConnection("127.0.0.1", port, timeout=10)
        call = b'{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":10,"steps":10},"_meta":{"progressToken":"p"}}}'
        conn.request("POST", "/mcp", body=call, headers=session)
        response = conn.getresponse()
        assert response.headers["content-type"].startswith("text/event-stream")
        first = response.fp.readline()  # the first event of the stream: progress
        assert first
        conn.sock.shutdown(socket.SHUT_RDWR)
        conn.close()
        deadline = time.time() + 10
        cancelled = []
        while time.time() < deadline and not cancelled:
            time.sleep(0.2)
            cancelled = [e for e in read_audit(audit) if e.get("method") == "notifications/cancelled"]
        assert cancelled and cancelled[0]["direction"] == "client->server"
    finally:
        stop(proc)


def test_a_thousand_sessions_with_bounded_memory(tmp_path):
    policy = write_policy(tmp_path, ALLOW_ALL)
    upstream_port = free_port()
    upstream = subprocess.Popen([sdk_example("calculator"), "--http", f"127.0.0.1:{upstream_port}"],
                                stderr=subprocess.DEVNULL, start_new_session=True)
    wait_until_listening(upstream_port, upstream)
    proc, port = clawai_listen(policy, tmp_path / "a.jsonl", "--upstream", f"http://127.0.0.1:{upstream_port}/mcp")
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def one_session(n: int) -> str:
        _, response_headers, _ = http("POST", port, headers, INIT)
        session = {**headers, "Mcp-Session-Id": response_headers["mcp-session-id"]}
        call = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                           "params": {"name": "calculator", "arguments": {"operation": "add", "a": n, "b": 1}}}).encode()
        _, _, body = http("POST", port, session, call)
        return json.loads(body)["result"]["content"][0]["text"]

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
            answers = list(pool.map(one_session, range(1000)))
        assert answers == [f"Result: {n + 1}" for n in range(1000)]
        rss_kib = int(re.search(r"VmRSS:\s+(\d+)", pathlib.Path(f"/proc/{proc.pid}/status").read_text()).group(1))
        print(f"clawai RSS with 1000 open sessions: {rss_kib / 1024:.1f} MiB")
        assert rss_kib < 64 * 1024, f"{rss_kib} KiB for 1000 sessions"
    finally:
        stop(proc)
        stop(upstream)


class ProtectedUpstream(http_server.BaseHTTPRequestHandler):
    """A minimal OAuth-protected MCP server: 401 without the right token, its Protected
    Resource Metadata at the RFC 9728 path, initialize answered with the token."""

    seen_authorization: list = []

    def log_message(self, *args):
        pass

    def send(self, status: int, body: dict, headers: dict | None = None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        port = self.server.server_address[1]
        if self.path == "/.well-known/oauth-protected-resource/mcp":
            self.send(200, {"resource": f"http://127.0.0.1:{port}/mcp", "authorization_servers": ["https://auth.example.com"],
                            "scopes_supported": ["mcp"]})
        else:
            self.send(404, {})

    def do_POST(self):
        port = self.server.server_address[1]
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        authorization = self.headers.get("Authorization")
        ProtectedUpstream.seen_authorization.append(authorization)
        if authorization != "Bearer upstream-token":
            self.send(401, {"error": "invalid_token"}, {"WWW-Authenticate":
                      f'Bearer error="invalid_token", resource_metadata="http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"'})
            return
        if "id" not in body:
            self.send_response(202)
            self.end_headers()
            return
        self.send(200, {"jsonrpc": "2.0", "id": body["id"], "result": {"protocolVersion": "2025-11-25", "capabilities": {},
                                                                          "serverInfo": {"name": "protected", "version": "1"}}},
                  {"Mcp-Session-Id": "upstream-session"})


def test_oauth_discovery_and_tokens_through_listen(tmp_path):
    policy = write_policy(tmp_path, ALLOW_ALL)
    audit = tmp_path / "audit.jsonl"
    upstream = http_server.ThreadingHTTPServer(("127.0.0.1", 0), ProtectedUpstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    upstream_port = upstream.server_address[1]
    proc, port = clawai_listen(policy, audit, "--upstream", f"http://127.0.0.1:{upstream_port}/mcp")
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Host": f"localhost:{port}"}
    try:
        # Without a token: the upstream's 401 reaches the client, pointing at clawai's metadata.
        status, response_headers, _ = http("POST", port, headers, INIT)
        assert status == 401
        challenge = response_headers["www-authenticate"]
        assert f'resource_metadata="http://localhost:{port}/.well-known/oauth-protected-resource/mcp"' in challenge
        assert str(upstream_port) not in challenge
        # The metadata names the URL the client uses, and the upstream's authorization server.
        request = urllib.request.Request(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp", headers={"Host": f"localhost:{port}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            metadata = json.loads(response.read())
        assert metadata["resource"] == f"http://localhost:{port}/mcp"
        assert metadata["authorization_servers"] == ["https://auth.example.com"]
        # With the token: forwarded to the upstream it was issued for, never written down.
        status, response_headers, body = http("POST", port, {**headers, "Authorization": "Bearer upstream-token"}, INIT)
        assert status == 200 and json.loads(body)["result"]["serverInfo"]["name"] == "protected"
        assert ProtectedUpstream.seen_authorization[-1] == "Bearer upstream-token"
    finally:
        stop(proc)
        upstream.shutdown()
    assert "upstream-token" not in audit.read_text()


def test_conformance_target_over_http_passes_directly_and_through_listen(tmp_path):
    policy = write_policy(tmp_path, ALLOW_ALL)
    audit = tmp_path / "audit.jsonl"
    target_port = free_port()
    target = subprocess.Popen(["node", str(TARGET), "http", str(target_port)], stderr=subprocess.DEVNULL, start_new_session=True)
    wait_until_listening(target_port, target)
    proc, port = clawai_listen(policy, audit, "--upstream", f"http://127.0.0.1:{target_port}/mcp")
    try:
        direct_results, through = run_suite_both(tmp_path, target_port, port)
    finally:
        stop(proc)
        stop(target)
    failing = {name: r for name, r in direct_results.items() if r[1] or not r[0]}
    assert not failing, f"the HTTP target passes every scenario directly: {failing}"
    # The same scenarios pass. (Check counts may differ: where the target answers with an
    # event stream, clawai answers a response that comes alone as JSON, which the suite
    # notes as INFO rather than a second SUCCESS in server-sse-multiple-streams.)
    assert {name: r[1] == 0 for name, r in through.items()} == {name: True for name in direct_results}
    tools = {e.get("tool") for e in read_audit(audit) if e.get("method") == "tools/call"}
    assert {"test_simple_text", "test_sampling", "test_elicitation"} <= tools, "the calls really went through clawai"


async def test_stateless_clients_share_a_server_through_listen(tmp_path):
    """Python clients in auto mode adopt 2026-07-28 (the SDK server answers
    server/discover): no sessions, one shared server, ids of different clients collide
    and must not get crossed, and the policy still decides every call."""
    policy = write_policy(tmp_path, """
[[rule]]
id = "no-multiplying"
action = "deny"
tool = "calculator"
args.operation = "multiply"

[[rule]]
action = "allow"
method = "**"
""")
    audit = tmp_path / "audit.jsonl"
    proc, port = clawai_listen(policy, audit, "--", sdk_example("calculator"))
    results = {}
    try:
        with anyio.fail_after(60):
            async with Client(f"http://localhost:{port}/mcp", mode="auto") as first, \
                       Client(f"http://localhost:{port}/mcp", mode="auto") as second:
                assert first.session.protocol_version == "2026-07-28"

                async def add(name, client, a):
                    for b in range(10):
                        result = await client.call_tool("calculator", {"operation": "add", "a": a, "b": b})
                        results.setdefault(name, []).append(result.content[0].text)

                async with anyio.create_task_group() as group:
                    group.start_soon(add, "first", first, 100)
                    group.start_soon(add, "second", second, 200)
                denied = await second.call_tool("calculator", {"operation": "multiply", "a": 6, "b": 7})
    finally:
        stop(proc)
    assert results["first"] == [f"Result: {100 + b}" for b in range(10)]
    assert results["second"] == [f"Result: {200 + b}" for b in range(10)]
    assert denied.is_error and "no-multiplying" in denied.content[0].text
    assert any(e.get("rule") == "no-multiplying" and e["decision"] == "deny" for e in read_audit(audit))


class ParamHeaderUpstream(http_server.BaseHTTPRequestHandler):
    """A 2026-07-28 server with a tool whose `region` and `note` arguments are mirrored
    into `Mcp-Param-*` headers; like a conforming server it refuses a call whose headers
    do not say what the body says (400, -32020)."""

    seen: list = []

    def log_message(self, *args):
        pass

    def send(self, status: int, body: dict):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        headers = {name.lower(): value for name, value in self.headers.items()}
        ParamHeaderUpstream.seen.append((body.get("method"), headers))
        if "id" not in body:
            self.send_response(202)
            self.end_headers()
            return
        if body["method"] == "tools/list":
            schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"},
                                                       "note": {"type": "string", "x-mcp-header": "Note"},
                                                       "sql": {"type": "string"}}}
            self.send(200, {"jsonrpc": "2.0", "id": body["id"],
                            "result": {"resultType": "complete", "tools": [{"name": "query", "inputSchema": schema}]}})
            return
        arguments = body["params"]["arguments"]
        for name in ("region", "note"):
            header = headers.get(f"mcp-param-{name}")
            if header is not None and header.startswith("=?base64?") and header.endswith("?="):
                header = base64.b64decode(header[9:-2]).decode()
            if header != arguments.get(name):
                self.send(400, {"jsonrpc": "2.0", "id": body["id"],
                                "error": {"code": -32020, "message": f"Mcp-Param-{name} {header!r} is not {arguments.get(name)!r}"}})
                return
        self.send(200, {"jsonrpc": "2.0", "id": body["id"],
                        "result": {"resultType": "complete", "content": [{"type": "text", "text": f"ran in {arguments['region']}"}]}})


def test_upstream_mirrors_x_mcp_header_arguments_into_mcp_param_headers(tmp_path):
    policy = write_policy(tmp_path, ALLOW_ALL)
    upstream = http_server.ThreadingHTTPServer(("127.0.0.1", 0), ParamHeaderUpstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    # A configured header in the reserved namespace must not stand in for the argument.
    proc = subprocess.Popen([clawai_bin(), "proxy", "--upstream", f"http://127.0.0.1:{upstream.server_address[1]}/mcp",
                             "--header", "Mcp-Param-Region: forged", "--policy", str(policy),
                             "--audit", str(tmp_path / "a.jsonl")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}

    def ask(message: dict) -> dict:
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 20)
        assert ready, "no answer"
        return json.loads(proc.stdout.readline())

    try:
        listed = ask({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}})
        assert listed["result"]["tools"][0]["name"] == "query", listed
        arguments = {"region": "eu-west-1", "note": "déjà vu", "sql": "select 1"}
        called = ask({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "query", "arguments": arguments, "_meta": meta}})
        assert called.get("result", {}).get("content") == [{"type": "text", "text": "ran in eu-west-1"}], called
        # An argument left out gets no header (and the server expects none).
        called = ask({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "query", "arguments": {"region": "us-east-2"}, "_meta": meta}})
        assert "result" in called, called
    finally:
        proc.kill()
        upstream.shutdown()
    calls = [headers for method, headers in ParamHeaderUpstream.seen if method == "tools/call"]
    assert calls[0]["mcp-param-region"] == "eu-west-1"
    assert calls[0]["mcp-param-note"].startswith("=?base64?"), "non-ASCII travels as base64"
    assert "mcp-param-sql" not in calls[0]
    assert "mcp-param-note" not in calls[1] and calls[1]["mcp-param-region"] == "us-east-2"


class EndlessEventUpstream(http_server.BaseHTTPRequestHandler):
    """Answers every POST with an event stream whose one event never ends."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        try:
            self.wfile.write(b"data: ")
            for _ in range(64):
                self.wfile.write(b"x" * 65536)  # 4 MiB, no blank line
                self.wfile.flush()
            time.sleep(20)  # and the stream stays open
        except OSError:
            pass  # clawai hung up, as it should


def test_an_upstream_event_that_never_ends_is_cut_off(tmp_path):
    policy = write_policy(tmp_path, ALLOW_ALL)
    upstream = http_server.ThreadingHTTPServer(("127.0.0.1", 0), EndlessEventUpstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    proc = subprocess.Popen([clawai_bin(), "proxy", "--upstream", f"http://127.0.0.1:{upstream.server_address[1]}/mcp",
                             "--policy", str(policy), "--audit", str(tmp_path / "a.jsonl"), "--max-message-size", "100000"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        proc.stdin.write(INIT + b"\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 10)
        assert ready, "clawai kept buffering an event that never ends"
        answer = json.loads(proc.stdout.readline())
        assert answer["id"] == 1 and answer["error"]["code"] == -32005, answer
    finally:
        proc.kill()
        upstream.shutdown()


def test_a_session_whose_server_died_is_gone_and_a_new_one_starts_a_new_server(tmp_path):
    policy = write_policy(tmp_path, ALLOW_ALL)
    proc, port = clawai_listen(policy, tmp_path / "a.jsonl", "--", sys.executable, str(pathlib.Path(__file__).parent / "dying_server.py"))
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    call = lambda name: json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": {}}}).encode()
    try:
        _, response_headers, _ = http("POST", port, headers, INIT)
        session = {**headers, "Mcp-Session-Id": response_headers["mcp-session-id"]}
        assert "alive" in http("POST", port, session, call("ping"))[2]
        status, _, body = http("POST", port, session, call("exit"))
        assert status == 200 and json.loads(body)["error"]["code"] == -32005, body
        assert http("POST", port, session, call("ping"))[0] == 404, "the dead session is gone"
        _, response_headers, _ = http("POST", port, headers, INIT)
        fresh = {**headers, "Mcp-Session-Id": response_headers["mcp-session-id"]}
        assert "alive" in http("POST", port, fresh, call("ping"))[2], "a new session runs a new server"
    finally:
        stop(proc)


def test_public_url_names_the_endpoint_behind_a_tls_proxy(tmp_path):
    policy = write_policy(tmp_path, ALLOW_ALL)
    upstream = http_server.ThreadingHTTPServer(("127.0.0.1", 0), ProtectedUpstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    proc, port = clawai_listen(policy, tmp_path / "a.jsonl", "--public-url", "https://mcp.example.com",
                               "--upstream", f"http://127.0.0.1:{upstream.server_address[1]}/mcp")
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    try:
        status, response_headers, _ = http("POST", port, headers, INIT)
        assert status == 401
        assert 'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"' in response_headers["www-authenticate"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp", timeout=10) as response:
            assert json.loads(response.read())["resource"] == "https://mcp.example.com/mcp"
        # The TLS proxy in front forwards the public Host: clawai answers to it.
        assert http("POST", port, {**headers, "Host": "mcp.example.com", "Origin": "https://mcp.example.com"}, INIT)[0] == 401
        assert http("POST", port, {**headers, "Host": "evil.example"}, INIT)[0] == 403
    finally:
        stop(proc)
        upstream.shutdown()
