"""Sandboxed servers (`clawai proxy --sandbox auto`, a gateway server's "sandbox"): real
servers start and work under the `auto` profile; what the profile does not grant is
refused by the kernel, inside the server, even with a policy that allows everything;
the network is none unless granted; nothing a sandboxed server starts outlives it;
`require` refuses what the kernel cannot enforce, and `auto` says what it does not.

The machine has Landlock (ABI 4 or later) and user namespaces; the missing-feature
cases use clawai's test hook, CLAWAI_SANDBOX_TEST_WITHOUT, which only takes features
away (the kernel cannot be made to lack them from here)."""

import http.server
import json
import os
import subprocess
import sys
import threading
import time

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from conftest import ALLOW_ALL, EVERYTHING, FILESYSTEM, PEERS, ROOT, clawai_bin, read_audit, write_policy
from gateway_support import (RawGateway, alive, gateway_args, has_all, kill_leftovers, run_gateway_to_failure,
                             write_config)

pytestmark = pytest.mark.anyio

SECRET = "SSH-PRIVATE-KEY-5b1e"
FETCH = ROOT / "tests" / "e2e" / "servers" / "fetch_server.py"
STATEFUL = ROOT / "tests" / "e2e" / "servers" / "stateful_server.py"
MEMORY = PEERS / "server-memory" / "dist" / "index.js"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def home(tmp_path):
    """A home with an SSH key, and a project in it with a link to the key."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET)
    project = home / "project"
    project.mkdir()
    (project / "notes.txt").write_text("project notes")
    (project / "key").symlink_to(home / ".ssh" / "id_rsa")
    return home


def proxy(tmp_path, command, *flags, home=None, env=None, name="server"):
    policy = write_policy(tmp_path, ALLOW_ALL)
    environment = {"PATH": os.environ["PATH"], "HOME": str(home or tmp_path), "CLAWAI_PINS": str(tmp_path / "pins"),
                   "XDG_STATE_HOME": str(tmp_path / "state"), **(env or {})}
    return StdioServerParameters(
        command=clawai_bin(),
        args=["proxy", "--policy", str(policy), "--audit", str(tmp_path / "audit.jsonl"), "--server", name,
              *flags, "--", *command],
        env=environment, cwd=str(tmp_path))


def roots_of(*paths):
    async def list_roots(context):
        return types.ListRootsResult(roots=[types.Root(uri=f"file://{path}", name=path.name) for path in paths])
    return list_roots


async def wait_for_roots(client, path):
    """server-filesystem asks the client for its roots once initialized, and then serves
    those instead of the directories on its command line."""
    for _ in range(100):
        listed = await client.call_tool("list_allowed_directories", {})
        if str(path) in listed.content[0].text:
            return
        await anyio.sleep(0.05)
    raise AssertionError(f"server-filesystem never took the root {path}: {listed.content[0].text}")


async def test_filesystem_under_auto_works_in_its_project_and_the_kernel_refuses_the_key(tmp_path, home):
    # The client gives server-filesystem the project and ~/.ssh as its roots, and the
    # policy allows everything: server-filesystem's own checks pass and clawai's policy
    # allows the call. Only the sandbox, which granted the project given on the command
    # line, stands between the server and the key.
    project = home / "project"
    params = proxy(tmp_path, ["node", str(FILESYSTEM), str(project)], "--sandbox", "auto", home=home, name="files")
    with anyio.fail_after(60):
        async with Client(params, mode="legacy", list_roots_callback=roots_of(home / "project", home / ".ssh")) as client:
            await wait_for_roots(client, home / ".ssh")
            listing = await client.call_tool("list_directory", {"path": str(project)})
            assert "notes.txt" in listing.content[0].text
            notes = await client.call_tool("read_text_file", {"path": str(project / "notes.txt")})
            assert notes.content[0].text == "project notes"
            written = await client.call_tool("write_file", {"path": str(project / "new.txt"), "content": "written"})
            assert not written.is_error, written
            assert (project / "new.txt").read_text() == "written"
            refused = []
            for path in [home / ".ssh" / "id_rsa", project / "key"]:
                result = await client.call_tool("read_text_file", {"path": str(path)})
                assert result.is_error, f"{path} was read under the sandbox"
                assert SECRET not in str(result.model_dump())
                # The error the kernel gave the server, as the server reports it.
                assert "EACCES" in result.content[0].text or "permission denied" in result.content[0].text.lower()
                refused.append(result.content[0].text)
    events = read_audit(tmp_path / "audit.jsonl")
    start = [e for e in events if e["kind"] == "sandbox"]
    assert len(start) == 1 and start[0]["server"] == "files"
    assert start[0]["sandbox"] == "landlock-files,landlock-tcp,landlock-scopes,user-ns,pid-ns,net-ns,no-new-privs"
    failed = [e for e in events if e["kind"] == "response" and e.get("method") == "tools/call" and e.get("is_error")]
    assert len(failed) == 2 and all("landlock-files" in e["sandbox"] for e in failed), failed
    tail = subprocess.run([clawai_bin(), "audit", "tail", "--audit", str(tmp_path / "audit.jsonl"), "-n", "100"],
                          capture_output=True, text=True, check=True).stdout
    assert "files    started: sandbox (auto): landlock-files," in tail, tail
    assert tail.count(" error (in sandbox: landlock-files,") == 2, tail


async def test_without_the_sandbox_the_same_setup_reads_the_key(tmp_path, home):
    # The control of the test above: the roots and the policy let the key through; what
    # refused it there was the sandbox.
    params = proxy(tmp_path, ["node", str(FILESYSTEM), str(home / "project")], home=home)
    with anyio.fail_after(60):
        async with Client(params, mode="legacy", list_roots_callback=roots_of(home / "project", home / ".ssh")) as client:
            await wait_for_roots(client, home / ".ssh")
            key = await client.call_tool("read_text_file", {"path": str(home / "project" / "key")})
    assert key.content[0].text == SECRET
    assert not any(e["kind"] == "sandbox" for e in read_audit(tmp_path / "audit.jsonl"))


@pytest.fixture
def local_site():
    """An HTTP server on the host's loopback."""
    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"hello from the host"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.mark.parametrize("network", ["none", "default"])
async def test_without_network_a_server_cannot_reach_the_hosts_loopback(tmp_path, local_site, network):
    flags = ["--sandbox", "auto"] + (["--sandbox-network", "none"] if network == "none" else [])
    with anyio.fail_after(60):
        async with Client(proxy(tmp_path, [sys.executable, str(FETCH)], *flags), mode="legacy") as client:
            result = await client.call_tool("fetch", {"url": local_site})
    assert result.is_error, result
    assert "hello" not in result.content[0].text
    # The system's own error, seen by the server.
    assert "Errno" in result.content[0].text, result.content[0].text


async def test_with_network_loopback_the_server_reaches_the_hosts_loopback(tmp_path, local_site):
    flags = ["--sandbox", "auto", "--sandbox-network", "loopback"]
    with anyio.fail_after(60):
        async with Client(proxy(tmp_path, [sys.executable, str(FETCH)], *flags), mode="legacy") as client:
            result = await client.call_tool("fetch", {"url": local_site})
    assert result.content[0].text == "hello from the host", result


async def test_server_memory_starts_lists_and_keeps_a_graph_where_it_may_write(tmp_path):
    store = tmp_path / "memory"
    store.mkdir()
    params = proxy(tmp_path, ["node", str(MEMORY)], "--sandbox", "auto", "--sandbox-write", str(store),
                   env={"MEMORY_FILE_PATH": str(store / "memory.jsonl")})
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert {"create_entities", "read_graph"} <= tools
            created = await client.call_tool("create_entities", {"entities": [
                {"name": "clawai", "entityType": "project", "observations": ["sandboxed"]}]})
            assert not created.is_error, created
            graph = await client.call_tool("read_graph", {})
    assert "sandboxed" in graph.content[0].text
    assert "clawai" in (store / "memory.jsonl").read_text()


async def test_server_memory_through_npx_starts_from_the_projects_packages_without_network(tmp_path):
    # npx in a project that has the package: it runs the project's copy, offline.
    peers = ROOT / "tests" / "peers"
    params = proxy(tmp_path, ["npx", "-y", "@modelcontextprotocol/server-memory"], "--sandbox", "auto",
                   "--sandbox-read", str(peers), "--sandbox-write", str(tmp_path),
                   env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl"), "HOME": os.environ.get("HOME", "/")})
    params.cwd = str(peers)
    with anyio.fail_after(90):
        async with Client(params, mode="legacy") as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            graph = await client.call_tool("read_graph", {})
    assert "read_graph" in tools
    assert not graph.is_error, graph


async def test_server_everything_starts_lists_and_answers_a_call(tmp_path):
    with anyio.fail_after(60):
        async with Client(proxy(tmp_path, ["node", str(EVERYTHING)], "--sandbox", "auto"), mode="legacy") as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            echoed = await client.call_tool("echo", {"message": "inside"})
    assert "echo" in tools
    assert "inside" in echoed.content[0].text


def test_require_refuses_to_start_when_the_kernel_lacks_a_feature(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAWAI_SANDBOX_TEST_WITHOUT", "landlock-tcp")
    pid_file = tmp_path / "pids"
    gw = raw_proxy(tmp_path, [sys.executable, str(STATEFUL), "--pid-file", str(pid_file)], "--sandbox", "require")
    try:
        answer = gw.request("init", "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                   "clientInfo": {"name": "raw-test", "version": "1"}})
        assert gw.close(timeout=10) == 2
    finally:
        gw.kill()
    # The client is told why (a desktop client hides clawai's stderr).
    assert "--sandbox require: this system cannot enforce TCP ports" in answer["error"]["message"], answer
    assert not pid_file.exists(), "the server was started"


def raw_proxy(tmp_path, command, *flags, env=None):
    policy = write_policy(tmp_path, ALLOW_ALL)
    proc = RawGateway(tmp_path, ["proxy", "--policy", str(policy), "--audit", str(tmp_path / "audit.jsonl"),
                                 "--server", "s", *flags, "--", *command])
    return proc


def test_auto_says_at_start_and_in_the_audit_what_it_does_not_enforce(tmp_path, monkeypatch, home):
    monkeypatch.setenv("CLAWAI_SANDBOX_TEST_WITHOUT", "namespaces")
    monkeypatch.setenv("HOME", str(home))
    gw = raw_proxy(tmp_path, [sys.executable, str(STATEFUL)], "--sandbox", "auto")
    try:
        gw.initialize()
        # Landlock still holds without namespaces.
        read = gw.request(2, "tools/call", {"name": "read", "arguments": {"path": str(home / ".ssh" / "id_rsa")}})
        assert SECRET not in json.dumps(read)
        gw.close(timeout=10)
    finally:
        gw.kill()
    stderr = b"".join(gw.stderr).decode()
    assert "s: sandbox (auto): landlock-files,landlock-tcp,landlock-scopes,no-new-privs; NOT enforced: " in stderr
    assert "a PID namespace (what the server starts and detaches may outlive it" in stderr, stderr
    assert "no network (no network namespace" not in stderr, "TCP is still refused by Landlock: said as such"
    assert "no network for UDP and other protocols" in stderr, stderr
    start = [e for e in read_audit(tmp_path / "audit.jsonl") if e["kind"] == "sandbox"]
    assert start[0]["sandbox"] == "landlock-files,landlock-tcp,landlock-scopes,no-new-privs"
    assert "a PID namespace" in start[0]["reason"] and "NOT enforced" in start[0]["reason"]


def host_pids_of_namespace(root_pid: int) -> dict[int, int]:
    """The descendants of `root_pid` by the pid they have in their own namespace (the
    last of /proc/PID/status's NSpid), with their pid on the host."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = open(f"/proc/{entry}/status").read()
        except OSError:
            continue
        nspids = [int(p) for p in status.split("NSpid:")[1].split("\n")[0].split()]
        if len(nspids) > 1 and descends_from(int(entry), root_pid):
            found[nspids[-1]] = int(entry)
    return found


def descends_from(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except OSError:
            return False
    return False


def strays_of(gw, tool):
    answer = gw.request(5, "tools/call", {"name": tool, "arguments": {}})
    strays = json.loads(answer["result"]["content"][0]["text"])
    # The server reports the pids of its own namespace; find them on the host.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        namespace = host_pids_of_namespace(gw.proc.pid)
        if all(pid in namespace for pid in strays.values()):
            return namespace, [namespace[pid] for pid in strays.values()]
        time.sleep(0.05)
    raise AssertionError(f"the strays {strays} are not in the server's namespace: {namespace}")


def assert_nothing_left(namespace: dict[int, int], strays: list[int]):
    assert len(namespace) >= 4, f"the init, the server and two strays: {namespace}"
    assert all(alive(pid) for pid in strays)


def gone_within_a_second(pids) -> bool:
    deadline = time.monotonic() + 1
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_proxy_sandbox_leaves_nothing_after_the_clients_eof(tmp_path):
    gw = raw_proxy(tmp_path, [sys.executable, str(STATEFUL)], "--sandbox", "auto")
    namespace = {}
    try:
        gw.initialize()
        namespace, strays = strays_of(gw, "spawn_strays")
        assert_nothing_left(namespace, strays)
        gw.proc.stdin.close()
        assert gone_within_a_second(namespace.values()), \
            f"alive 1 s after the client left: {[p for p in namespace.values() if alive(p)]}"
    finally:
        gw.kill()
        kill_leftovers(namespace.values())


def test_gateway_sandbox_leaves_nothing_after_the_clients_eof(tmp_path):
    entry = {"command": sys.executable, "args": [str(STATEFUL)], "internalOnly": False, "sandbox": "auto"}
    config = write_config(tmp_path / "gateway.json", {"s": entry})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    namespace = {}
    try:
        gw.initialize()
        gw.wait_listed(has_all("s__spawn_strays"))
        namespace, strays = strays_of(gw, "s__spawn_strays")
        assert_nothing_left(namespace, strays)
        gw.proc.stdin.close()
        assert gone_within_a_second(namespace.values()), \
            f"alive 1 s after the client left: {[p for p in namespace.values() if alive(p)]}"
    finally:
        gw.kill()
        kill_leftovers(namespace.values())
    events = read_audit(tmp_path / "audit.jsonl")
    assert any(e["kind"] == "sandbox" and e["server"] == "s" and "pid-ns" in e["sandbox"] for e in events)
    calls = [e for e in events if e.get("method") == "tools/call" and e.get("tool") == "spawn_strays"]
    assert calls and all("pid-ns" in e["sandbox"] for e in calls), calls


def test_gateway_refuses_a_bad_sandbox_value_with_its_file_and_line(tmp_path):
    config = tmp_path / "gateway.json"
    config.write_text('{"mcpServers": {\n  "s": {"command": "node",\n        "sandbox": "yes"}}}\n')
    refused = run_gateway_to_failure(tmp_path, gateway_args(tmp_path, config))
    assert refused.returncode != 0
    stderr = refused.stderr
    assert f"{config}:3:20: `sandbox` of server `s` is `yes`; use \"auto\", \"require\", \"off\"" in stderr, stderr


def test_proxy_killed_takes_its_sandboxed_server_and_all_it_started_along(tmp_path):
    gw = raw_proxy(tmp_path, [sys.executable, str(STATEFUL)], "--sandbox", "auto")
    namespace = {}
    try:
        gw.initialize()
        namespace, strays = strays_of(gw, "spawn_strays")
        assert_nothing_left(namespace, strays)
        gw.proc.kill()  # SIGKILL: clawai cleans nothing up itself
        gw.proc.wait()
        assert gone_within_a_second(namespace.values()), \
            f"alive 1 s after clawai was killed: {[p for p in namespace.values() if alive(p)]}"
    finally:
        gw.kill()
        kill_leftovers(namespace.values())


def test_gateway_reload_that_removes_a_sandboxed_server_ends_all_it_started(tmp_path):
    entry = {"command": sys.executable, "args": [str(STATEFUL)], "internalOnly": False, "sandbox": "auto"}
    other = {"command": sys.executable, "args": [str(FETCH)], "internalOnly": False}
    config = write_config(tmp_path / "gateway.json", {"s": entry, "f": other})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    namespace = {}
    try:
        gw.initialize()
        gw.wait_listed(has_all("s__spawn_strays", "f__fetch"))
        namespace, strays = strays_of(gw, "s__spawn_strays")
        assert_nothing_left(namespace, strays)
        write_config(config, {"f": other})
        deadline = time.monotonic() + 5
        while any(alive(pid) for pid in namespace.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(pid) for pid in namespace.values()), "left after the server was removed"
        assert gw.proc.poll() is None, "the gateway goes on"
    finally:
        gw.kill()
        kill_leftovers(namespace.values())


async def test_proxy_listen_runs_each_sessions_server_in_the_sandbox(tmp_path, local_site):
    from test_conformance import free_port, stop
    from test_http import wait_until_listening
    policy = write_policy(tmp_path, ALLOW_ALL)
    port = free_port()
    with open(tmp_path / "proxy.err", "wb") as err:
        proc = subprocess.Popen([clawai_bin(), "proxy", "--policy", str(policy), "--audit", str(tmp_path / "audit.jsonl"),
                                 "--server", "fetch", "--listen", f"127.0.0.1:{port}", "--sandbox", "auto", "--",
                                 sys.executable, str(FETCH)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                                env={**os.environ, "CLAWAI_PINS": str(tmp_path / "pins")}, cwd=tmp_path)
    try:
        wait_until_listening(port, proc)
        with anyio.fail_after(30):
            async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy", cache=None) as client:
                result = await client.call_tool("fetch", {"url": local_site})
    finally:
        stop(proc)
    assert result.is_error and "Errno" in result.content[0].text, result
    starts = [e for e in read_audit(tmp_path / "audit.jsonl") if e["kind"] == "sandbox"]
    assert starts and "net-ns" in starts[0]["sandbox"], starts


def test_gateway_killed_leaves_nothing_of_a_sandboxed_server(tmp_path):
    # SIGKILL: the gateway ends nothing itself. The server sees its input end and
    # exits; its namespace's init follows, and the kernel kills what is left in it.
    entry = {"command": sys.executable, "args": [str(STATEFUL)], "internalOnly": False, "sandbox": "auto"}
    config = write_config(tmp_path / "gateway.json", {"s": entry})
    gw = RawGateway(tmp_path, gateway_args(tmp_path, config))
    namespace = {}
    try:
        gw.initialize()
        gw.wait_listed(has_all("s__spawn_strays"))
        namespace, strays = strays_of(gw, "s__spawn_strays")
        assert_nothing_left(namespace, strays)
        gw.proc.kill()
        gw.proc.wait()
        assert gone_within_a_second(namespace.values()), \
            f"alive 1 s after the gateway was killed: {[p for p in namespace.values() if alive(p)]}"
    finally:
        gw.kill()
        kill_leftovers(namespace.values())


@pytest.mark.parametrize("front", ["proxy", "gateway"])
def test_a_server_deaf_to_its_input_dies_with_a_killed_clawai(tmp_path, front):
    # It never reads its input, so it never sees it close: only the sandbox's tie to
    # clawai (the parent-death signal of the namespace's stand-in) ends it.
    deaf = ["sh", "-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 & exec sleep 301"]
    if front == "proxy":
        policy = write_policy(tmp_path, ALLOW_ALL)
        gw = RawGateway(tmp_path, ["proxy", "--policy", str(policy), "--audit", str(tmp_path / "audit.jsonl"),
                                   "--sandbox", "auto", "--", *deaf])
    else:
        entry = {"command": deaf[0], "args": deaf[1:], "internalOnly": False, "sandbox": "auto"}
        gw = RawGateway(tmp_path, gateway_args(tmp_path, write_config(tmp_path / "gateway.json", {"d": entry})))
    namespace = {}
    try:
        deadline = time.monotonic() + 10
        while len(namespace) < 3 and time.monotonic() < deadline:
            namespace = host_pids_of_namespace(gw.proc.pid)
            time.sleep(0.05)
        assert len(namespace) >= 3, f"the init and both sleeps: {namespace}"
        gw.proc.kill()
        gw.proc.wait()
        assert gone_within_a_second(namespace.values()), \
            f"alive 1 s after clawai was killed: {[p for p in namespace.values() if alive(p)]}"
    finally:
        gw.kill()
        kill_leftovers(namespace.values())
