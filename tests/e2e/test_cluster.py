"""Three clawai replicas in cluster mode (a real redis-server) behind a real HAProxy and
a real nginx (Debian's), configured with the files users paste (deploy/haproxy.cfg,
deploy/nginx.conf): sessions are balanced, every follow-up reaches the replica that
issued its session (by the prefix of its Mcp-Session-Id) on a new TCP connection each,
and a replica that is shutting down gets no new session while the others take them
without an error. test_cluster_shared.py: what the replicas share in Redis."""

import collections
import concurrent.futures
import http.client
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import time

import pytest

from conftest import ALLOW_ALL, EVERYTHING, ROOT, clawai_bin, write_policy
from gateway_support import gateway_args, own_state, scripted, write_config
from test_conformance import free_port

REPLICAS = ("r1", "r2", "r3")
SESSIONS = 150
FOLLOW_UPS = 5
PROTOCOL = "2025-06-18"


def wait_listening(port: int, proc: subprocess.Popen, what: str):
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what}: nothing listening on {port}")


class RedisServer:
    """A redis-server of the test's own on a free loopback port, without persistence."""

    def __init__(self, tmp_path: pathlib.Path):
        self.port = free_port()
        self.dir = tmp_path
        self.proc = None
        self.start()

    def start(self):
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.dir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        wait_listening(self.port, self.proc, "redis-server")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def cli(self, *args: str) -> str:
        return subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True, text=True,
                              check=True).stdout


@pytest.fixture
def redis(tmp_path):
    server = RedisServer(tmp_path)
    yield server
    server.stop()


def start_replicas(tmp_path: pathlib.Path, redis: RedisServer) -> dict:
    policy = write_policy(tmp_path, ALLOW_ALL)
    replicas = {}
    for name in REPLICAS:
        port = free_port()
        proc = subprocess.Popen(
            [clawai_bin(), "proxy", "--listen", f"127.0.0.1:{port}", "--replica-id", name, "--cluster", redis.url,
             "--shutdown-drain", "4", "--policy", str(policy), "--audit", str(tmp_path / f"audit-{name}.jsonl"),
             "--server", "everything", "--", "node", str(EVERYTHING), "stdio"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        wait_listening(port, proc, f"replica {name}")
        replicas[name] = (proc, port)
    return replicas


def deployed(config: str, front: int, replicas: dict) -> str:
    """The shipped configuration, its example ports (8080 in front, 8081-8083 for the
    replicas) replaced by the test's free ones."""
    text = (ROOT / "deploy" / config).read_text()
    assert "127.0.0.1:8080" in text
    text = text.replace("127.0.0.1:8080", f"127.0.0.1:{front}")
    for index, name in enumerate(REPLICAS):
        example = f"127.0.0.1:{8081 + index}"
        assert example in text, f"{config} names no {example}"
        text = text.replace(example, f"127.0.0.1:{replicas[name][1]}")
    return text


def start_haproxy(tmp_path: pathlib.Path, replicas: dict) -> tuple[subprocess.Popen, int]:
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    front = free_port()
    config = tmp_path / "haproxy.cfg"
    config.write_text(deployed("haproxy.cfg", front, replicas))
    subprocess.run([haproxy, "-c", "-q", "-f", str(config)], check=True)
    proc = subprocess.Popen([haproxy, "-db", "-f", str(config)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    wait_listening(front, proc, "haproxy")
    return proc, front


def start_nginx(tmp_path: pathlib.Path, replicas: dict) -> tuple[subprocess.Popen, int]:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    front = free_port()
    (tmp_path / "clawai.conf").write_text(deployed("nginx.conf", front, replicas))
    temp = tmp_path / "nginx-temp"
    temp.mkdir()
    # What Debian's /etc/nginx/nginx.conf provides around conf.d/, in the test's directory.
    main = f"""
daemon off;
master_process off;
pid {tmp_path}/nginx.pid;
error_log {tmp_path}/nginx-error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    include {tmp_path}/clawai.conf;
}}
"""
    (tmp_path / "nginx.conf").write_text(main)
    args = [nginx, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")]
    subprocess.run([*args, "-t", "-q"], check=True)
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    wait_listening(front, proc, "nginx")
    return proc, front


def stop(proc: subprocess.Popen):
    stop_all([proc])


def stop_all(procs: list[subprocess.Popen]):
    """SIGTERM to each at once (replicas drain 4 s each), then wait for all."""
    for proc in procs:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for proc in procs:
        proc.wait(timeout=20)


@pytest.fixture(params=["haproxy", "nginx"])
def cluster(request, tmp_path, redis):
    replicas = start_replicas(tmp_path, redis)
    starter = start_haproxy if request.param == "haproxy" else start_nginx
    balancer, front = starter(tmp_path, replicas)
    yield replicas, front
    stop(balancer)
    stop_all([proc for proc, _ in replicas.values()])


def post(port: int, message: dict, session: str | None = None) -> tuple[int, dict, dict | None]:
    """One POST on a new TCP connection: status, headers, and the JSON-RPC response
    (read from the JSON body or the event stream)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session:
        headers["Mcp-Session-Id"] = session
        headers["MCP-Protocol-Version"] = PROTOCOL
    try:
        connection.request("POST", "/mcp", body=json.dumps(message), headers=headers)
        response = connection.getresponse()
        body = response.read().decode()
        found = {name.lower(): value for name, value in response.getheaders()}
        return response.status, found, response_in(body, found.get("content-type", ""), message.get("id"))
    finally:
        connection.close()


def response_in(body: str, content_type: str, id_) -> dict | None:
    if id_ is None or not body.strip():
        return None
    if content_type.startswith("application/json"):
        return json.loads(body)
    for line in body.splitlines():
        if line.startswith("data:"):
            message = json.loads(line[5:].strip())
            if message.get("id") == id_ and ("result" in message or "error" in message):
                return message
    return None


def delete(port: int, session: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("DELETE", "/mcp", headers={"Mcp-Session-Id": session, "MCP-Protocol-Version": PROTOCOL})
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


FOLLOW_UP_CALLS = [
    ("tools/list", {}),
    ("tools/call", {"name": "echo", "arguments": {"message": "one"}}),
    ("ping", {}),
    ("tools/call", {"name": "echo", "arguments": {"message": "two"}}),
    ("prompts/list", {}),
]


def one_session(port: int) -> tuple[str | None, list[str]]:
    """A session through the balancer: initialize, initialized, five follow-ups, DELETE;
    each on a new connection. Returns the session id and what went wrong."""
    errors = []
    status, headers, reply = post(port, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "cluster-test", "version": "1"}}})
    session = headers.get("mcp-session-id")
    if status != 200 or not session or not reply or "result" not in reply:
        return None, [f"initialize: {status} {reply}"]
    status, _, _ = post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    if status != 202:
        errors.append(f"{session} initialized: {status}")
    assert len(FOLLOW_UP_CALLS) == FOLLOW_UPS
    for number, (method, params) in enumerate(FOLLOW_UP_CALLS, start=1):
        status, _, reply = post(port, {"jsonrpc": "2.0", "id": number, "method": method, "params": params}, session)
        if status != 200 or not reply or "result" not in reply or reply["result"].get("isError"):
            errors.append(f"{session} {method}: {status} {reply}")
        elif method == "tools/call" and params["arguments"]["message"] not in json.dumps(reply["result"]):
            errors.append(f"{session}: the echo of {params['arguments']['message']} did not come back: {reply}")
    status = delete(port, session)
    if status != 200:
        errors.append(f"{session} DELETE: {status}")
    return session, errors


def run_sessions(port: int, count: int, workers: int) -> tuple[list[str], list[str]]:
    sessions, errors = [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for session, problems in pool.map(lambda _: one_session(port), range(count)):
            errors.extend(problems)
            if session:
                sessions.append(session)
    return sessions, errors


def test_sessions_are_balanced_and_every_follow_up_reaches_its_replica(cluster):
    replicas, front = cluster
    sessions, errors = run_sessions(front, SESSIONS, workers=8)
    assert errors == [], f"{len(errors)} errors, first: {errors[:5]}"
    assert len(sessions) == SESSIONS and len(set(sessions)) == SESSIONS
    per_replica = collections.Counter(session.split(".", 1)[0] for session in sessions)
    assert set(per_replica) == set(REPLICAS), f"new sessions were not balanced: {per_replica}"
    for session in sessions:
        prefix, random = session.split(".", 1)
        assert len(random) == 32 and int(random, 16) >= 0, session


def health(port: int) -> tuple[int, dict] | None:
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    except OSError:
        return None


def test_a_draining_replica_gets_no_new_sessions(cluster):
    replicas, front = cluster
    proc, port = replicas["r3"]
    assert health(port) == (200, {"status": "serving", "replica": "r3", "sessions": 0, "cluster": "connected"})
    _, errors = run_sessions(front, 12, workers=4)
    assert errors == []

    os.kill(proc.pid, signal.SIGTERM)
    draining = None
    deadline = time.time() + 3
    while draining is None and time.time() < deadline:
        answer = health(port)
        if answer and answer[0] == 503:
            draining = answer
    assert draining is not None and draining[1]["status"] == "draining", "no 503 from /healthz while draining"
    # Asked directly, the draining replica refuses a new session, for the balancer to retry.
    status, headers, reply = post(port, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "cluster-test", "version": "1"}}})
    assert (status, headers.get("retry-after")) == (503, "1") and "shutting down" in reply["error"]["message"], reply

    # While it drains (4 s) and after it is gone: every new session elsewhere, none lost.
    sessions, errors = run_sessions(front, 40, workers=4)
    assert errors == [], f"{len(errors)} errors, first: {errors[:5]}"
    per_replica = collections.Counter(session.split(".", 1)[0] for session in sessions)
    assert per_replica["r3"] == 0 and len(sessions) == 40, per_replica
    assert proc.wait(timeout=20) == 0


def test_a_gateway_replica_issues_routable_session_ids_and_answers_health_checks(tmp_path):
    config = write_config(tmp_path / "gateway.json", {"alpha": scripted("alpha")})
    port = free_port()
    proc = subprocess.Popen(
        [clawai_bin(), *gateway_args(tmp_path, config), "--listen", f"127.0.0.1:{port}", "--replica-id", "gw-2",
         "--shutdown-drain", "2"],
        env=own_state(tmp_path, dict(os.environ)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        wait_listening(port, proc, "gateway")
        assert health(port) == (200, {"status": "serving", "replica": "gw-2", "sessions": 0, "cluster": None})
        status, headers, reply = post(port, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "cluster-test", "version": "1"}}})
        session = headers.get("mcp-session-id", "")
        assert status == 200 and "result" in reply, reply
        prefix, _, random = session.partition(".")
        assert prefix == "gw-2" and len(random) == 32 and int(random, 16) >= 0, session
        assert post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
        status, _, reply = post(port, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, session)
        assert status == 200 and "alpha__echo" in {tool["name"] for tool in reply["result"]["tools"]}, reply
        assert delete(port, session) == 200
        os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.time() + 2
        answer = None
        while time.time() < deadline and not (answer and answer[0] == 503):
            answer = health(port)
        assert answer and answer == (503, {"status": "draining", "replica": "gw-2", "sessions": 0, "cluster": None})
        assert proc.wait(timeout=20) == 0
    finally:
        stop(proc)
