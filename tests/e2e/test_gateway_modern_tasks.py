"""Tasks of the 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`) through
`clawai gateway`, in front of tests/e2e/servers/modern_server.py (whose `long` tool answers
with a task when the request declares the extension): the task is named `SERVER__taskId`,
`tasks/get`, `tasks/update` and `tasks/cancel` reach the server under its own id, the
gateway declares the extension when a server has it, and a task belongs to the client (the
principal, for these session-less clients) that created it."""

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from conftest import clawai_bin
from gateway_support import RawGateway, gateway_args, gateway_missing, has_all, own_state, write_config
from test_conformance import free_port, stop
from test_gateway_views import post_modern
from test_http import wait_until_listening

SERVER = pathlib.Path(__file__).parent / "servers" / "modern_server.py"
MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
GITHUB_TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
_MISSING = gateway_missing()
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")


def modern(rid: str, method: str, params: dict, tasks: bool = True) -> dict:
    capabilities = {"extensions": {TASKS: {}}} if tasks else {}
    return {"id": rid, "method": method, "params": {**params, "_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": capabilities}}}


def ask(gw: RawGateway, rid: str, method: str, params: dict, tasks: bool = True) -> dict:
    gw.send(modern(rid, method, params, tasks))
    return json.loads(gw.read_response(rid))


def logged(path: pathlib.Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_task_is_created_asks_for_input_is_updated_and_completes_through_the_gateway(tmp_path):
    log = tmp_path / "m.jsonl"
    config = write_config(tmp_path / "gateway.json", {
        "m": {"command": sys.executable, "args": [str(SERVER), "--name", "m", "--log", str(log)],
              "internalOnly": False}})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.wait_listed(has_all("m__long"), timeout=15)
        discovered = ask(gw, "d", "server/discover", {})["result"]
        assert TASKS in discovered["capabilities"]["extensions"], discovered
        created = ask(gw, "c", "tools/call", {"name": "m__long", "arguments": {}})["result"]
        assert created["resultType"] == "task" and created["taskId"] == "m__t1", created
        waiting = ask(gw, "g1", "tasks/get", {"taskId": "m__t1"})["result"]
        assert waiting["taskId"] == "m__t1" and waiting["status"] == "input_required", waiting
        assert waiting["inputRequests"]["go"]["method"] == "elicitation/create", waiting
        # The answer carries a token, which the server puts in the task's result.
        answer = {"action": "accept", "content": {"ok": True, "note": GITHUB_TOKEN}}
        updated = ask(gw, "u", "tasks/update", {"taskId": "m__t1", "inputResponses": {"go": answer}})
        assert "result" in updated, updated
        done = ask(gw, "g2", "tasks/get", {"taskId": "m__t1"})["result"]
        assert done["status"] == "completed", done
        # The result reached the client through the results guard: the token is redacted.
        text = done["result"]["content"][0]["text"]
        assert text.startswith('m: long done with {"action": "accept"') and GITHUB_TOKEN not in text, text
        assert "[REDACTED]" in text, text
        # A second task, cancelled.
        second = ask(gw, "c2", "tools/call", {"name": "m__long", "arguments": {}})["result"]["taskId"]
        assert "result" in ask(gw, "x", "tasks/cancel", {"taskId": second})
        assert ask(gw, "g3", "tasks/get", {"taskId": second})["result"]["status"] == "cancelled"
        # A task the session has not got is refused by the gateway, as an unknown one.
        unknown = ask(gw, "n", "tasks/update", {"taskId": "m__t99", "inputResponses": {}})
        assert unknown["error"]["code"] == -32602, unknown
        # A request that does not declare the extension gets no task from the server.
        plain = ask(gw, "p", "tools/call", {"name": "m__long", "arguments": {}}, tasks=False)["result"]
        assert plain.get("resultType") != "task" and plain["isError"], plain
    finally:
        gw.kill()
    # The server saw its own ids, never the gateway's names.
    about_tasks = [r for r in logged(log) if r["method"].startswith("tasks/")]
    assert [(r["method"], r["params"]["taskId"]) for r in about_tasks] == [
        ("tasks/get", "t1"), ("tasks/update", "t1"), ("tasks/get", "t1"), ("tasks/cancel", "t2"), ("tasks/get", "t2")]


def test_another_principal_can_neither_see_nor_touch_a_task(tmp_path):
    config = write_config(tmp_path / "gateway.json", {
        "m": {"command": sys.executable, "args": [str(SERVER), "--name", "m"], "internalOnly": False}})
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with open(tmp_path / "gateway.err", "wb") as err:
        proc = subprocess.Popen([clawai_bin(), *gateway_args(tmp_path, config), "--listen", f"127.0.0.1:{port}"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True, env=own_state(tmp_path, dict(os.environ)), cwd=tmp_path)
    try:
        wait_until_listening(port, proc)
        tasks = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}}}
        created = {}
        for _ in range(100):
            created = post_modern(url, 1, "tools/call", {"name": "m__long", "arguments": {}}, "alice", meta=tasks)
            if created.get("result", {}).get("resultType") == "task":
                break
            time.sleep(0.1)  # the server is still starting
        task_id = created["result"]["taskId"]
        for method, params in [("tasks/get", {}), ("tasks/update", {"inputResponses": {}}), ("tasks/cancel", {})]:
            refused = post_modern(url, 2, method, {"taskId": task_id, **params}, "bob", meta=tasks)
            assert refused["error"]["code"] == -32602, (method, refused)
        own = post_modern(url, 3, "tasks/get", {"taskId": task_id}, "alice", meta=tasks)
        assert own["result"]["taskId"] == task_id and own["result"]["status"] == "input_required", own
    finally:
        stop(proc)


def next_notification(gw: RawGateway, method: str, timeout: float = 10) -> dict:
    """The next notification `method` from the gateway (others and answers are kept for later)."""
    deadline = time.monotonic() + timeout
    while True:
        for seen in gw.others:
            if seen.get("method") == method:
                gw.others.remove(seen)
                return seen
        line = gw.lines.get(timeout=max(0.01, deadline - time.monotonic()))
        assert line, b"".join(gw.stderr).decode()[-2000:]
        message = json.loads(line)
        if "method" in message:
            gw.others.append(message)
        else:
            gw.early.setdefault(message.get("id"), []).append(line.rstrip(b"\n"))


def test_a_subscription_that_follows_a_task_is_told_its_state(tmp_path):
    """`subscriptions/listen` with `taskIds` (the extension's): the gateway follows the task on
    its own subscription to the server, and the server's `notifications/tasks` reach the
    client's subscription, under the gateway's task name."""
    log = tmp_path / "m.jsonl"
    config = write_config(tmp_path / "gateway.json", {
        "m": {"command": sys.executable, "args": [str(SERVER), "--name", "m", "--log", str(log)],
              "internalOnly": False}})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    try:
        gw.wait_listed(has_all("m__long"), timeout=15)
        task_id = ask(gw, "c", "tools/call", {"name": "m__long", "arguments": {}})["result"]["taskId"]
        # Following tasks takes the extension.
        refused = ask(gw, "no", "subscriptions/listen", {"notifications": {"taskIds": [task_id]}}, tasks=False)
        assert refused["error"]["code"] == -32021, refused
        gw.send(modern("sub", "subscriptions/listen", {"notifications": {"taskIds": [task_id, "m__t99"]}}))
        ack = next_notification(gw, "notifications/subscriptions/acknowledged")
        assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub", ack
        assert ack["params"]["notifications"] == {"taskIds": [task_id]}, ack
        answer = {"action": "accept", "content": {"ok": True}}
        ask(gw, "u", "tasks/update", {"taskId": task_id, "inputResponses": {"go": answer}})
        told = next_notification(gw, "notifications/tasks")
        assert told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub", told
        assert told["params"]["taskId"] == task_id and told["params"]["status"] == "completed", told
        assert "long done with" in told["params"]["result"]["content"][0]["text"], told
    finally:
        gw.kill()
    listens = [r["params"]["notifications"] for r in logged(log) if r["method"] == "subscriptions/listen"]
    assert any(listen.get("taskIds") == ["t1"] for listen in listens), listens
