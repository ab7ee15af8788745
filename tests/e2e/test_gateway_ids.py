"""What a request carries, kept through `clawai gateway`: its id comes back byte for byte,
whatever JSON number the client wrote (integers beyond 64 bits, exponents, trailing zeros:
a parser would make them floats; -0; 1e400, which a parser refuses), alongside strings and
0; a cancellation naming such an id reaches the server under the id the server saw, and
the audit trail shows the id as written; and the capabilities a
2026-07-28 request declares decide what its server may ask during it, never another
request's."""

import json
import re
import subprocess
import time

import pytest

from conftest import clawai_bin
from gateway_support import (RawGateway, calls_received, gateway_args, gateway_missing, has_all, read_log, scripted,
                             write_config)

_MISSING = gateway_missing()
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")


def exchange(gw: RawGateway, raw_id: str, method: str, params: str) -> bytes:
    line = f'{{"jsonrpc":"2.0","id":{raw_id},"method":"{method}","params":{params}}}\n'.encode()
    gw.proc.stdin.write(line)
    gw.proc.stdin.flush()
    while True:
        answer = gw.lines.get(timeout=10)
        assert answer, b"".join(gw.stderr).decode()[-2000:]
        if b'"method"' not in answer.split(b'"result"')[0].split(b'"error"')[0]:
            return answer


@pytest.mark.parametrize("raw_id", ["123456789012345678901234567890", "-98765432109876543210987", "1e3", "2.50",
                                    "0", '"s-1"', "18446744073709551615", "-0", "1e400"])
def test_every_id_comes_back_as_the_client_wrote_it(tmp_path, raw_id):
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a")})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.initialize()
        gw.wait_listed(has_all("a__echo"), timeout=10)
        for method, params in [("tools/call", '{"name":"a__echo","arguments":{"text":"hi"}}'), ("tools/list", "{}"),
                               ("ping", "{}")]:
            answer = exchange(gw, raw_id, method, params)
            assert re.search(rb'"id":' + re.escape(raw_id.encode()) + rb"[,}]", answer), (method, answer[:200])
            assert b'"result"' in answer, answer[:300]
    finally:
        gw.kill()


def wait_for(condition, what: str, timeout: float = 10):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


@pytest.mark.parametrize("raw_id,in_trail", [("123456789012345678901234567890", "123456789012345678901234567890"),
                                             ("-0", "-0"), ("2.50", "2.50"),
                                             # beyond a double: the trail's readers refuse it as a number
                                             ("1e400", '"clawai-number:1e400"')])
def test_a_cancellation_naming_an_id_json_would_alter_reaches_the_server_and_the_trail_shows_it(tmp_path, raw_id,
                                                                                                  in_trail):
    log = tmp_path / "a.log"
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a", "--log", log)})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.initialize()
        gw.wait_listed(has_all("a__slow"), timeout=10)
        call = f'{{"jsonrpc":"2.0","id":{raw_id},"method":"tools/call","params":{{"name":"a__slow","arguments":{{"seconds":30}}}}}}\n'
        gw.proc.stdin.write(call.encode())
        gw.proc.stdin.flush()
        seen = wait_for(lambda: calls_received(log, "slow"), "the call to reach the server")
        cancel = f'{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{raw_id},"reason":"no"}}}}\n'
        gw.proc.stdin.write(cancel.encode())
        gw.proc.stdin.flush()
        # The server saw the call under the gateway's id, and the cancellation names that id.
        cancelled = wait_for(lambda: read_log(log)[1], "the server to see the cancellation")
        assert cancelled == [f"cancelled {json.dumps(seen[0]['id'])}"], cancelled
    finally:
        gw.kill()
    trail = (tmp_path / "audit.jsonl").read_text().splitlines()
    call_lines = [line for line in trail if '"kind":"request"' in line and '"tool":"slow"' in line]
    assert len(call_lines) == 1, trail
    assert f'"id":{in_trail},' in call_lines[0], call_lines[0]
    # The trail stays readable and whole with it.
    verified = subprocess.run([clawai_bin(), "audit", "verify", "--audit", str(tmp_path / "audit.jsonl")],
                              capture_output=True, text=True, timeout=30)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    shown = subprocess.run([clawai_bin(), "audit", "query", "--audit", str(tmp_path / "audit.jsonl"), "--tool", "slow"],
                           capture_output=True, text=True, timeout=30)
    assert shown.returncode == 0 and "slow" in shown.stdout, shown.stdout + shown.stderr


def modern(rid: str, method: str, params: dict, capabilities: dict) -> dict:
    return {"id": rid, "method": method, "params": {**params, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities}}}


def test_a_server_request_is_decided_with_the_capabilities_its_call_carried(tmp_path):
    """2026-07-28 requests declare capabilities each: a request that follows a call (from
    the same client, or another of its principal) never changes what that call allows."""
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a")})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.wait_listed(has_all("a__elicit"), timeout=10)
        elicit = {"name": "a__elicit", "arguments": {}}
        # The call declares elicitation; a request right after it declares nothing.
        gw.send(modern("with", "tools/call", elicit, {"elicitation": {}}))
        gw.send(modern("after-with", "tools/list", {}, {}))
        answer = json.loads(gw.read_response("with"))["result"]
        assert answer["resultType"] == "input_required", answer
        assert [r["method"] for r in answer["inputRequests"].values()] == ["elicitation/create"], answer
        # The call declares nothing; a request right after it declares elicitation.
        gw.send(modern("without", "tools/call", elicit, {}))
        gw.send(modern("after-without", "tools/list", {}, {"elicitation": {}}))
        answer = json.loads(gw.read_response("without"))["result"]
        assert answer.get("resultType") != "input_required" and answer["isError"], answer
        assert "did not declare the `elicitation` capability" in json.dumps(answer), answer
    finally:
        gw.kill()
