"""The edges of clawai's HTTP transports a new user runs into, against the scripted
server (no npm peer needed): how to allow a refused Origin, the ids the audit trail
shows for 2026-07-28 requests, headers that disagree with the body, an upstream that
refuses connections, and calls made before any tools/list."""

import http.server as http_server
import json
import pathlib
import subprocess
import threading
import time

from conftest import ALLOW_ALL, ROOT, clawai_bin, read_audit, write_policy
from test_conformance import free_port, stop
from test_http import INIT, http, wait_until_listening

SCRIPTED = ROOT / "tests" / "scripted" / "server.py"
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
STATELESS = {**JSON_HEADERS, "MCP-Protocol-Version": "2026-07-28"}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}

NO_WIPE = """
[[rule]]
id = "no-wipe"
action = "deny"
tool = "wipe"

[[rule]]
action = "allow"
method = "**"
"""


def listen(tmp_path: pathlib.Path, policy_text: str, *extra: str) -> tuple[subprocess.Popen, int, pathlib.Path]:
    policy = write_policy(tmp_path, policy_text)
    audit = tmp_path / "audit.jsonl"
    port = free_port()
    target = list(extra) if "--upstream" in extra else [*extra, "--", "python3", str(SCRIPTED)]
    proc = subprocess.Popen([clawai_bin(), "proxy", "--listen", f"127.0.0.1:{port}", "--policy", str(policy),
                             "--audit", str(audit), *target],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    wait_until_listening(port, proc)
    return proc, port, audit


def call(rid, tool: str, stateless: bool = True) -> bytes:
    params = {"name": tool, "arguments": {}}
    if stateless:
        params["_meta"] = META
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}).encode()


def test_a_foreign_origin_is_told_how_to_allow_it(tmp_path):
    site = {**JSON_HEADERS, "Origin": "http://app.example:5173"}
    proc, port, _ = listen(tmp_path, ALLOW_ALL)
    try:
        status, _, body = http("POST", port, site, INIT)
    finally:
        stop(proc)
    assert status == 403
    assert "--allowed-host app.example" in json.loads(body)["error"]["message"], body
    # Doing what it says lets the site in.
    proc, port, _ = listen(tmp_path, ALLOW_ALL, "--allowed-host", "app.example")
    try:
        status, _, body = http("POST", port, site, INIT)
    finally:
        stop(proc)
    assert status == 200, body


def test_stateless_requests_are_audited_under_the_ids_their_clients_sent(tmp_path):
    proc, port, audit = listen(tmp_path, NO_WIPE)
    mirrored = {**STATELESS, "Mcp-Method": "tools/call"}
    try:
        status, _, body = http("POST", port, {**mirrored, "Mcp-Name": "safe_read"}, call("mine-7", "safe_read"))
        assert status == 200 and json.loads(body)["id"] == "mine-7", body
        status, _, body = http("POST", port, {**mirrored, "Mcp-Name": "wipe"}, call(8, "wipe"))
        assert status == 200 and json.loads(body)["result"]["isError"] is True, body
    finally:
        stop(proc)
    events = [e for e in read_audit(audit) if e.get("method") == "tools/call"]
    shown = {(e["kind"], e.get("tool"), e["id"]) for e in events}
    assert ("request", "safe_read", "mine-7") in shown, events
    assert ("response", None, "mine-7") in shown, events
    assert ("request", "wipe", 8) in shown, events
    assert not any(str(e.get("id")).startswith("clawai-") for e in read_audit(audit)), events


def test_headers_that_disagree_with_the_body_get_400_and_a_json_rpc_error(tmp_path):
    proc, port, audit = listen(tmp_path, ALLOW_ALL)
    try:
        # 2026-07-28: the method header, then the name header, says something else.
        for headers in ({"Mcp-Method": "tools/list", "Mcp-Name": "safe_read"},
                        {"Mcp-Method": "tools/call", "Mcp-Name": "wipe"}):
            status, _, body = http("POST", port, {**STATELESS, **headers}, call("c1", "safe_read"))
            answer = json.loads(body)
            assert status == 400 and answer["jsonrpc"] == "2.0", body
            assert answer["error"]["code"] == -32020 and answer["id"] == "c1", body
        # An earlier revision's session: headers it did not need, but that a router may read.
        status, headers, _ = http("POST", port, JSON_HEADERS, INIT)
        session = {**JSON_HEADERS, "Mcp-Session-Id": headers["mcp-session-id"]}
        status, _, body = http("POST", port, {**session, "Mcp-Method": "tools/list"}, call(2, "safe_read", False))
        assert status == 400 and json.loads(body)["error"]["code"] == -32020, body
        status, _, body = http("POST", port, {**session, "Mcp-Method": "tools/call"}, call(3, "safe_read", False))
        assert status == 200 and "called safe_read" in body, body
    finally:
        stop(proc)
    # Each refusal is in the trail, under the id the client sent.
    refused = [e for e in read_audit(audit) if e.get("decision") == "refused"]
    assert [e.get("id") for e in refused].count("c1") == 2 and 2 in [e.get("id") for e in refused], refused
    assert all("header" in e["reason"].lower() or "mcp-" in e["reason"].lower() for e in refused), refused


def test_listen_in_front_of_an_upstream_that_refuses_connections_answers_at_once(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/mcp"
    proc, port, _ = listen(tmp_path, ALLOW_ALL, "--upstream", url)
    try:
        started = time.monotonic()
        status, _, body = http("POST", port, JSON_HEADERS, INIT)
        took = time.monotonic() - started
    finally:
        stop(proc)
    assert took < 2, took
    answer = json.loads(body)
    assert answer["id"] == 1 and f"connection refused to {url}" in answer["error"]["message"], body


def test_unreachable_upstream_error_names_the_cause_at_once(tmp_path):
    policy = write_policy(tmp_path, ALLOW_ALL)
    port = free_port()
    proc = subprocess.Popen([clawai_bin(), "proxy", "--upstream", f"http://127.0.0.1:{port}/mcp", "--policy", str(policy),
                             "--audit", str(tmp_path / "a.jsonl")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    started = time.monotonic()
    proc.stdin.write(INIT + b"\n")
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    took = time.monotonic() - started
    proc.stdin.close()
    proc.wait(timeout=30)
    assert took < 2, took
    assert answer["id"] == 1 and answer["error"]["code"] == -32005
    assert f"connection refused to http://127.0.0.1:{port}/mcp" in answer["error"]["message"], answer
    assert proc.returncode == 0


class StatelessUpstream(http_server.BaseHTTPRequestHandler):
    """A sessionless JSON-only MCP server: it answers every request, so a restart loses
    nothing."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "id" not in body:
            self.send_response(202)
            self.end_headers()
            return
        if body["method"] == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "u", "version": "1"}}
        else:
            result = {"content": [{"type": "text", "text": f"ran {body['method']}"}]}
        data = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(port: int) -> http_server.ThreadingHTTPServer:
    server = http_server.ThreadingHTTPServer(("127.0.0.1", port), StatelessUpstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_an_established_session_rides_out_an_upstream_restart(tmp_path):
    policy = write_policy(tmp_path, ALLOW_ALL)
    port = free_port()
    upstream = serve(port)
    proc = subprocess.Popen([clawai_bin(), "proxy", "--upstream", f"http://127.0.0.1:{port}/mcp", "--policy", str(policy),
                             "--audit", str(tmp_path / "a.jsonl")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        proc.stdin.write(INIT + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["result"]["serverInfo"]["name"] == "u"
        upstream.shutdown()
        upstream.server_close()
        # The upstream is down for a second; clawai retries with backoff meanwhile.
        restarted = threading.Timer(1.0, lambda: serve(port))
        restarted.start()
        proc.stdin.write(call(2, "echo", False) + b"\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        assert answer["id"] == 2 and answer["result"]["content"][0]["text"] == "ran tools/call", answer
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def test_calls_before_any_listing_through_listen_are_decided_on_the_servers_annotations(tmp_path):
    policy = """
[[rule]]
id = "no-destructive"
action = "deny"
destructive = true
description = "The server marks this tool as destructive"

[[rule]]
action = "allow"
method = "**"
"""
    proc, port, _ = listen(tmp_path, policy)
    try:
        status, headers, _ = http("POST", port, JSON_HEADERS, INIT)
        session = {**JSON_HEADERS, "Mcp-Session-Id": headers["mcp-session-id"]}
        status, _, body = http("POST", port, session, call(2, "safe_read", False))
        assert status == 200 and "called safe_read" in body, body
        status, _, body = http("POST", port, session, call(3, "ghost", False))
        assert "no tool `ghost`" in body and "The server marks" not in body, body
        # A 2026-07-28 call: clawai's own listing carries the revision's _meta.
        status, _, body = http("POST", port, {**STATELESS, "Mcp-Method": "tools/call", "Mcp-Name": "safe_read"},
                               call(4, "safe_read"))
        assert status == 200 and "called safe_read" in body, body
    finally:
        stop(proc)


def test_a_2025_03_26_session_may_post_batches(tmp_path):
    proc, port, _ = listen(tmp_path, NO_WIPE)
    init = json.loads(INIT)
    init["params"]["protocolVersion"] = "2025-03-26"
    try:
        # JSON only: the server's notification before the result would make it a stream.
        json_only = {**JSON_HEADERS, "Accept": "application/json"}
        status, headers, body = http("POST", port, json_only, json.dumps(init).encode())
        assert json.loads(body)["result"]["protocolVersion"] == "2025-03-26", body
        session = {**JSON_HEADERS, "Mcp-Session-Id": headers["mcp-session-id"]}
        notification = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        batch = b"[" + b",".join([call(1, "safe_read", False), call(2, "wipe", False), notification]) + b"]"
        status, _, body = http("POST", port, session, batch)
        assert status == 200, body
        answers = {answer["id"]: answer for answer in json.loads(body)}
        assert sorted(answers) == [1, 2], body
        assert answers[1]["result"]["content"][0]["text"] == "called safe_read"
        assert answers[2]["result"]["isError"] is True and "no-wipe" in answers[2]["result"]["content"][0]["text"]
        status, _, _ = http("POST", port, session, b"[" + notification + b"]")
        assert status == 202
    finally:
        stop(proc)
    # A later revision's session keeps refusing them.
    proc, port, _ = listen(tmp_path, NO_WIPE)
    try:
        status, headers, _ = http("POST", port, JSON_HEADERS, INIT)
        session = {**JSON_HEADERS, "Mcp-Session-Id": headers["mcp-session-id"]}
        status, _, body = http("POST", port, session, b"[" + call(1, "safe_read", False) + b"]")
        assert status == 400 and "-32600" in body, body
    finally:
        stop(proc)
