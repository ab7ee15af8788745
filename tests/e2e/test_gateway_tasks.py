"""Tasks through `clawai gateway`, in front of server-everything (whose
`simulate-research-query` runs as a task): a task-augmented call answers with a task named
`SERVER__taskId`; `tasks/get`, `tasks/result` and `tasks/cancel` reach the server that holds
it, `tasks/list` lists the session's tasks, its status notifications reach the session;
and another client session can neither see nor touch it."""

import os
import subprocess
import time

import pytest

from conftest import EVERYTHING, clawai_bin
from gateway_support import RawGateway, gateway_args, gateway_missing, has_all, own_state, write_config
from test_conformance import free_port, stop
from test_gateway_conformance import post
from test_http import wait_until_listening

_MISSING = gateway_missing() or (None if EVERYTHING.exists() else "server-everything is not installed")
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=_MISSING or "")

RESEARCH = {"name": "everything__simulate-research-query", "arguments": {"topic": "owls"}, "task": {"ttl": 60000}}


def everything(tmp_path):
    return write_config(tmp_path / "gateway.json",
                        {"everything": {"command": "node", "args": [str(EVERYTHING)], "internalOnly": False}})


def test_a_task_is_created_polled_listed_and_its_result_fetched_through_the_gateway(tmp_path):
    gw = RawGateway(tmp_path, gateway_args(tmp_path, everything(tmp_path)))
    try:
        capabilities = gw.initialize()["result"]["capabilities"]
        assert capabilities["tasks"]["requests"]["tools"]["call"] == {}, capabilities
        gw.wait_listed(has_all("everything__simulate-research-query"), timeout=30)
        task = gw.request("create", "tools/call", RESEARCH)["result"]["task"]
        task_id = task["taskId"]
        assert task_id.startswith("everything__") and task["status"] == "working", task
        assert gw.request("get", "tasks/get", {"taskId": task_id})["result"]["taskId"] == task_id
        listed = gw.request("list", "tasks/list", {})["result"]["tasks"]
        assert [t["taskId"] for t in listed] == [task_id]
        result = gw.request("result", "tasks/result", {"taskId": task_id}, timeout=30)["result"]
        assert "# Research Report: owls" in result["content"][0]["text"]
        assert result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == task_id
        assert gw.request("done", "tasks/get", {"taskId": task_id})["result"]["status"] == "completed"
        statuses = [m["params"] for m in gw.others if m.get("method") == "notifications/tasks/status"]
        assert statuses and all(s["taskId"] == task_id for s in statuses), statuses
        # A second task, cancelled.
        second = gw.request("create-2", "tools/call", RESEARCH)["result"]["task"]["taskId"]
        cancelled = gw.request("cancel", "tasks/cancel", {"taskId": second})
        assert cancelled["result"]["status"] == "cancelled", cancelled
        unknown = gw.request("unknown", "tasks/get", {"taskId": "everything__no-such-task"})
        assert unknown["error"]["code"] == -32602, unknown
    finally:
        gw.kill()


def test_another_client_session_can_neither_see_nor_touch_a_task(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with open(tmp_path / "gateway.err", "wb") as err:
        proc = subprocess.Popen([clawai_bin(), *gateway_args(tmp_path, everything(tmp_path)), "--listen",
                                 f"127.0.0.1:{port}"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True, env=own_state(tmp_path, dict(os.environ)), cwd=tmp_path)
    try:
        wait_until_listening(port, proc)

        def session() -> str:
            sid, _ = post(url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
            post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
            return sid

        alice, bob = session(), session()
        deadline = time.monotonic() + 30
        while True:
            _, answer = post(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": RESEARCH}, alice)
            if "result" in answer and "task" in answer["result"]:
                break
            assert time.monotonic() < deadline, answer
            time.sleep(0.2)
        task_id = answer["result"]["task"]["taskId"]
        _, listed = post(url, {"jsonrpc": "2.0", "id": 2, "method": "tasks/list", "params": {}}, bob)
        assert listed["result"]["tasks"] == [], listed
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            _, refused = post(url, {"jsonrpc": "2.0", "id": 3, "method": method, "params": {"taskId": task_id}}, bob)
            assert refused["error"]["code"] == -32602, (method, refused)
        _, own = post(url, {"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"taskId": task_id}}, alice)
        assert own["result"]["taskId"] == task_id and own["result"]["status"] in ("working", "completed"), own
    finally:
        stop(proc)
