"""`clawai gateway` in front of a Streamable HTTP server whose session expires mid-run
(tests/e2e/servers/expiring_http_server.py): answered 404, as the specification says, or
400 "No valid session ID provided", as the TypeScript SDK's examples do. The gateway opens
a new session and sends the refused request again, once; a server that keeps refusing
is reported once, and each call it refuses gets an error that says why."""

import json
import pathlib
import subprocess
import sys
import time

import pytest

from gateway_support import RawGateway, gateway_args, gateway_missing, has_all, write_config

SERVER = pathlib.Path(__file__).parent / "servers" / "expiring_http_server.py"
_MISSING = gateway_missing()
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")


@pytest.fixture(params=["404", "400"])
def expiring(request, tmp_path):
    """The server, answering an unknown session with the variant's status; (url, log)."""
    port_file, log = tmp_path / "port", tmp_path / "upstream.jsonl"
    proc = subprocess.Popen([sys.executable, str(SERVER), "--port-file", str(port_file), "--variant", request.param,
                             "--log", str(log)])
    try:
        wait_for(lambda: port_file.exists() and port_file.read_text(), 10, "the server's port")
        yield f"http://127.0.0.1:{port_file.read_text()}/mcp", log
    finally:
        proc.kill()
        proc.wait()


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


def stderr_at_exit(gw: RawGateway) -> str:
    """Everything the gateway logged, once it ended (its client's EOF)."""
    gw.close()
    wait_for(lambda: gw.stderr and gw.stderr[-1] == b"", 10, "the end of the gateway's stderr")
    return b"".join(gw.stderr).decode()


def upstream_log(log: pathlib.Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def call(gw: RawGateway, rid: str, name: str, arguments: dict) -> dict:
    return gw.request(rid, "tools/call", {"name": name, "arguments": arguments}, timeout=20)


def start(tmp_path, url: str) -> RawGateway:
    config = write_config(tmp_path / "gateway.json", {"remote": {"url": url, "internalOnly": False}})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    gw.initialize()
    gw.wait_listed(has_all("remote__echo", "remote__expire"), timeout=10)
    return gw


def test_an_expired_upstream_session_is_opened_anew_and_the_call_sent_again(tmp_path, expiring):
    url, log = expiring
    gw = start(tmp_path, url)
    try:
        assert call(gw, "1", "remote__echo", {"text": "one"})["result"]["content"][0]["text"] == "echo: one"
        assert call(gw, "2", "remote__expire", {})["result"]["content"][0]["text"] == "expired"
        answer = call(gw, "3", "remote__echo", {"text": "two"})
        assert answer.get("result", {}).get("content", [{}])[0].get("text") == "echo: two", answer
        assert call(gw, "4", "remote__echo", {"text": "three"})["result"]["content"][0]["text"] == "echo: three"
        stderr = stderr_at_exit(gw)
    finally:
        gw.kill()
    entries = upstream_log(log)
    initializes = [e for e in entries if e["method"] == "initialize"]
    assert len(initializes) == 2, "one new session, opened once"
    twos = [e for e in entries if e.get("text") == "two"]
    # Refused once for the old session, then run once in the new one.
    assert [e["accepted"] for e in twos] == [False, True], twos
    assert twos[1]["session"] == initializes[1]["session"]
    # The new session was initialized as a client must before it is used.
    after = entries[entries.index(initializes[1]) + 1]
    assert after["method"] == "notifications/initialized" and after["accepted"], after
    assert "session expired; a new one was opened" in stderr, stderr


def test_a_server_that_keeps_refusing_new_sessions_is_reported_once(tmp_path, expiring):
    url, log = expiring
    gw = start(tmp_path, url)
    try:
        assert call(gw, "1", "remote__expire", {"forever": True})["result"]["content"][0]["text"] == "expired"
        for n in range(3):
            answer = call(gw, f"refused-{n}", "remote__echo", {"text": f"lost {n}"})
            why = json.dumps(answer)
            assert "the upstream session expired and a new one could not be opened" in why, answer
            assert "echo: lost" not in why
        stderr = stderr_at_exit(gw)
    finally:
        gw.kill()
    assert stderr.count("a new one could not be opened") == 1, stderr
    # Every refused call was tried again in a new session, and never ran.
    assert not [e for e in upstream_log(log) if (e.get("text") or "").startswith("lost") and e["accepted"]]
