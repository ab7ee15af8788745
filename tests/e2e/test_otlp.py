"""`--otlp`: clawai exports a span for each decided message and metrics to an
OpenTelemetry collector over OTLP/HTTP. The collector here is real: an HTTP server on
loopback that decodes the protobuf bodies with the `opentelemetry-proto` package. The
official Python client drives `clawai proxy` over the official server-filesystem, and
`clawai gateway` over a scripted server; a dead collector must not slow the calls."""

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time

import anyio
import pytest
from mcp import Client, StdioServerParameters
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (ExportMetricsServiceRequest,
                                                                          ExportMetricsServiceResponse)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (ExportTraceServiceRequest,
                                                                      ExportTraceServiceResponse)

from conftest import FILESYSTEM, clawai_bin, write_policy
from gateway_support import SCRIPTED, client as gateway_client, gateway_missing, has_all, listed, scripted, text_of, write_config

pytestmark = pytest.mark.anyio

# An argument value: it must appear nowhere in what is exported.
ARGUMENT_MARK = "arg-value-5c1d"


@pytest.fixture
def anyio_backend():
    return "asyncio"


class Collector:
    """An OTLP/HTTP receiver on loopback: keeps every request's path, raw body and decoded message."""

    def __init__(self):
        self.requests: list[tuple[str, bytes, object]] = []
        self.lock = threading.Lock()
        collector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                kinds = {"/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
                         "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse)}
                if self.path not in kinds or self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_error(404)
                    return
                request, response = kinds[self.path]
                with collector.lock:
                    collector.requests.append((self.path, body, request.FromString(body)))
                reply = response().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def of(self, path: str) -> list:
        with self.lock:
            return [message for p, _, message in self.requests if p == path]

    def raw(self) -> bytes:
        with self.lock:
            return b"".join(body for _, body, _ in self.requests)

    def spans(self) -> list[tuple[dict, str, dict]]:
        """(resource attributes, span name, span attributes) of every span received."""
        found = []
        for request in self.of("/v1/traces"):
            for resource_spans in request.resource_spans:
                resource = attributes(resource_spans.resource.attributes)
                for scope in resource_spans.scope_spans:
                    for span in scope.spans:
                        assert span.end_time_unix_nano >= span.start_time_unix_nano > 0
                        found.append((resource, span.name, attributes(span.attributes)))
        return found

    def metrics(self) -> dict[str, list]:
        """Each metric's data points (of every request), by name."""
        found: dict[str, list] = {}
        for request in self.of("/v1/metrics"):
            for resource_metrics in request.resource_metrics:
                for scope in resource_metrics.scope_metrics:
                    for metric in scope.metrics:
                        data = metric.sum if metric.HasField("sum") else metric.histogram
                        found.setdefault(metric.name, []).extend(data.data_points)
        return found

    def wait_for(self, condition, what: str, timeout: float = 10):
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"the collector did not get {what}: {self.requests!r}"[:4000]
            time.sleep(0.05)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def attributes(pairs) -> dict:
    return {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in pairs}


@pytest.fixture
def collector():
    c = Collector()
    yield c
    c.close()


def closed_port_url() -> str:
    """A loopback port nothing listens on: connections to it are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


POLICY = """
[[rule]]
id = "no-ssh"
action = "deny"
tool = "**"
any_arg = "**/.ssh/**"
description = "SSH keys never leave the machine"

[[rule]]
id = "project-reads"
action = "allow"
tools = ["read_text_file"]
any_arg = "{root}/**"

[[rule]]
id = "lists"
action = "allow"
method = ["tools/list", "resources/list", "prompts/list"]
"""

# Spans and metrics leave soon, not only at exit: the test sees them while the session runs.
SOON = {"OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_METRIC_EXPORT_INTERVAL": "300"}


def tool_calls(points) -> list:
    return [(attributes(p.attributes), p) for p in points if attributes(p.attributes).get("mcp.method.name") == "tools/call"]


def metrics_complete(metrics: dict) -> bool:
    """The decision counter has an allowed and a denied call, the latency histogram both,
    the message counter the calls' requests and responses."""
    decisions = {a["clawai.decision"] for a, p in tool_calls(metrics.get("clawai.decisions", [])) if p.as_int >= 1}
    latency = sum(p.count for _, p in tool_calls(metrics.get("clawai.decision.duration", [])))
    kinds = {a.get("clawai.kind") for a, _ in tool_calls(metrics.get("clawai.messages", []))}
    return decisions >= {"allow", "deny"} and latency >= 2 and kinds >= {"request", "response"}


def filesystem_tree(tmp_path):
    root = tmp_path / "root"
    (root / ARGUMENT_MARK).mkdir(parents=True)
    (root / ARGUMENT_MARK / "notes.txt").write_text("public notes")
    (root / ".ssh").mkdir()
    (root / ".ssh" / "id_rsa").write_text("KEY")
    return root


async def test_spans_and_metrics_of_proxied_calls_arrive_with_their_attributes_and_no_arguments(tmp_path, collector):
    root = filesystem_tree(tmp_path)
    policy = write_policy(tmp_path, POLICY.format(root=root))
    params = StdioServerParameters(
        command=clawai_bin(),
        args=["proxy", "--policy", str(policy), "--audit", str(tmp_path / "audit.jsonl"), "--server", "filesystem",
              "--otlp", collector.url, "--", "node", str(FILESYSTEM), str(root)],
        env=SOON,
    )
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            ok = await client.call_tool("read_text_file", {"path": str(root / ARGUMENT_MARK / "notes.txt")})
            assert not ok.is_error and "public notes" in ok.content[0].text
            denied = await client.call_tool("read_text_file", {"path": str(root / ".ssh" / "id_rsa")})
            assert denied.is_error and "no-ssh" in denied.content[0].text

            def both_calls_exported():
                return {span[2].get("clawai.decision") for span in collector.spans()} >= {"allow", "deny"}

            await anyio.to_thread.run_sync(collector.wait_for, both_calls_exported, "the spans of both calls")
            # Metrics are cumulative: a later export holds all an earlier one did.
            await anyio.to_thread.run_sync(collector.wait_for, lambda: metrics_complete(collector.metrics()),
                                           "the metrics of both calls")

    calls = [span for span in collector.spans() if span[2].get("mcp.method.name") == "tools/call"]
    by_decision = {span[2]["clawai.decision"]: span for span in calls}
    resource, name, allowed = by_decision["allow"]
    assert resource["service.name"] == "clawai" and resource["clawai.command"] == "proxy"
    assert name == "clawai.decide tools/call"
    assert allowed["gen_ai.tool.name"] == "read_text_file"
    assert allowed["clawai.server"] == "filesystem"
    assert allowed["clawai.rule"] == "project-reads"
    assert allowed["clawai.direction"] == "client->server"
    assert allowed["clawai.session"]
    denied_span = by_decision["deny"][2]
    assert denied_span["clawai.rule"] == "no-ssh" and denied_span["gen_ai.tool.name"] == "read_text_file"
    assert all(point.sum >= 0 for point in collector.metrics()["clawai.decision.duration"])

    # Arguments never leave: not the path read, not the one denied, not the file's text.
    everything = collector.raw()
    for secret in [ARGUMENT_MARK, ".ssh/id_rsa", "public notes"]:
        assert secret.encode() not in everything, f"{secret} was exported"


def raw_session(args: list[str], env: dict, calls: int) -> tuple[float, float, bytes]:
    """Runs `clawai ARGS` with line-by-line JSON-RPC: the handshake, then `calls` echo calls one
    after another. Returns the seconds the calls took, the seconds from closing stdin to the
    process's exit, and its stderr."""
    proc = subprocess.Popen([clawai_bin(), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    try:
        def send(message):
            proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
            proc.stdin.flush()

        def answer(expected_id):
            while True:
                line = proc.stdout.readline()
                assert line, f"clawai exited: {proc.stderr.read().decode()}"
                message = json.loads(line)
                if message.get("id") == expected_id:
                    return message

        send({"id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                                           "clientInfo": {"name": "otlp-test", "version": "1"}}})
        answer(0)
        send({"method": "notifications/initialized"})
        started = time.monotonic()
        for n in range(1, calls + 1):
            send({"id": n, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": f"call {n}"}}})
            assert "result" in answer(n)
        took = time.monotonic() - started
        proc.stdin.close()
        closed = time.monotonic()
        proc.wait(timeout=30)
        return took, time.monotonic() - closed, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.fixture(params=["refused", "silent"])
def dead_collector(request):
    """A collector URL that is no use: a closed port (connections refused), or one that takes
    connections and never answers (every request waits for its time limit)."""
    if request.param == "refused":
        yield closed_port_url()
        return
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        yield f"http://127.0.0.1:{silent.getsockname()[1]}"


def test_a_dead_collector_does_not_slow_calls_nor_the_exit_and_is_warned_about_once(tmp_path, dead_collector):
    policy = write_policy(tmp_path, '[[rule]]\nid = "all"\naction = "allow"\nmethod = "**"\n')
    server = [sys.executable, str(SCRIPTED), "--name", "s"]
    base = ["proxy", "--policy", str(policy), "--audit", str(tmp_path / "audit.jsonl"), "--server", "s"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    # Exports are attempted during the calls, not only at exit.
    env.update(SOON)
    without_took, without_exit, _ = raw_session([*base, "--", *server], env, 50)
    dead = dead_collector
    with_took, with_exit, stderr = raw_session([*base, "--otlp", dead, "--", *server], env, 50)
    # Generous bounds: the same order of time, not a benchmark.
    assert with_took < max(3 * without_took, without_took + 3), (with_took, without_took)
    assert with_exit < without_exit + 3, (with_exit, without_exit)
    warnings = [line for line in stderr.decode().splitlines() if "OpenTelemetry collector" in line]
    # A collector that never answers may also be named once more, at exit, for what it did not take.
    assert 1 <= len(warnings) <= 2 and all(dead in line for line in warnings), stderr.decode()


def test_the_environment_names_the_collector_when_the_option_does_not(tmp_path, collector):
    policy = write_policy(tmp_path, '[[rule]]\nid = "all"\naction = "allow"\nmethod = "**"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.url
    raw_session(["proxy", "--policy", str(policy), "--audit", str(tmp_path / "audit.jsonl"), "--server", "s", "--",
                 sys.executable, str(SCRIPTED), "--name", "s"], env, 3)
    # Exported at exit (no short intervals here): the flush on the way out sends them.
    calls = [span for span in collector.spans() if span[2].get("gen_ai.tool.name") == "echo"]
    assert len(calls) == 3 and all(span[2]["clawai.rule"] == "all" for span in calls), collector.spans()
    assert "clawai.decision.duration" in collector.metrics()


def test_an_empty_environment_variable_counts_as_unset(tmp_path):
    policy = write_policy(tmp_path, '[[rule]]\nid = "all"\naction = "allow"\nmethod = "**"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = ""
    _, _, stderr = raw_session(["proxy", "--policy", str(policy), "--audit", str(tmp_path / "audit.jsonl"), "--",
                                sys.executable, str(SCRIPTED), "--name", "s"], env, 2)
    assert b"OpenTelemetry" not in stderr and b"otlp" not in stderr, stderr


def test_a_bad_collector_url_stops_the_start_with_what_to_give(tmp_path):
    policy = write_policy(tmp_path, '[[rule]]\nid = "all"\naction = "allow"\nmethod = "**"\n')
    out = subprocess.run([clawai_bin(), "proxy", "--policy", str(policy), "--audit", str(tmp_path / "a.jsonl"),
                          "--otlp", "collector:4318", "--", sys.executable, str(SCRIPTED)],
                         stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    assert out.returncode == 2
    assert "collector:4318" in out.stderr.decode() and "http://127.0.0.1:4318" in out.stderr.decode(), out.stderr


@pytest.mark.skipif(gateway_missing() is not None, reason=gateway_missing() or "")
async def test_the_gateway_exports_its_decisions_as_the_gateway(tmp_path, collector):
    policy = """
[[rule]]
id = "no-forbidden-echo"
action = "deny"
tool = "echo"
args.text = "forbidden*"

[[rule]]
id = "rest"
action = "allow"
method = "**"
"""
    config = write_config(tmp_path / "gateway.json", {"a": scripted("a")})
    with anyio.fail_after(30):
        async with gateway_client(tmp_path, config, "--otlp", collector.url, policy=policy) as c:
            await listed(c, has_all("a__echo"))
            assert text_of(await c.call_tool("a__echo", {"text": ARGUMENT_MARK})) == f"a: {ARGUMENT_MARK}"
            assert (await c.call_tool("a__echo", {"text": f"forbidden {ARGUMENT_MARK}"})).is_error

    # The gateway flushes at exit; the client may have stopped it a moment ago.
    def both():
        decided = {(s[2].get("gen_ai.tool.name"), s[2].get("clawai.decision")) for s in collector.spans()}
        return {("echo", "allow"), ("echo", "deny")} <= decided

    await anyio.to_thread.run_sync(collector.wait_for, both, "the gateway's spans")
    spans = [s for s in collector.spans() if s[2].get("gen_ai.tool.name") == "echo"]
    for resource, name, span in spans:
        assert resource["clawai.command"] == "gateway" and name == "clawai.decide tools/call"
        assert span["clawai.server"] == "a" and span["clawai.listed_as"] == "a__echo"
    assert {(s[2]["clawai.decision"], s[2]["clawai.rule"]) for s in spans} == {("allow", "rest"), ("deny", "no-forbidden-echo")}
    assert ARGUMENT_MARK.encode() not in collector.raw()


async def test_mcp_server_exports_its_builtin_tools_decisions(tmp_path, collector):
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text(ARGUMENT_MARK)
    policy = write_policy(tmp_path, '[[rule]]\nid = "reads"\naction = "allow"\ntool = "read_file"\n\n'
                                    '[[rule]]\nid = "lists"\naction = "allow"\nmethod = "tools/list"\n')
    env = {"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    params = StdioServerParameters(command=clawai_bin(), args=["mcp-server", "--policy", str(policy), "--otlp",
                                                               collector.url], env=env, cwd=project)
    with anyio.fail_after(30):
        async with Client(params, mode="legacy") as c:
            await listed(c, has_all("builtin__read_file"))
            assert text_of(await c.call_tool("builtin__read_file", {"path": "notes.txt"})) == ARGUMENT_MARK

    def read_exported():
        return any(s[2].get("gen_ai.tool.name") == "read_file" for s in collector.spans())

    await anyio.to_thread.run_sync(collector.wait_for, read_exported, "the read's span")
    resource, _, span = next(s for s in collector.spans() if s[2].get("gen_ai.tool.name") == "read_file")
    assert resource["clawai.command"] == "mcp-server"
    assert span["clawai.server"] == "builtin" and span["clawai.decision"] == "allow" and span["clawai.rule"] == "reads"
    assert ARGUMENT_MARK.encode() not in collector.raw() and b"notes.txt" not in collector.raw()
