"""Helpers for the `clawai gateway` end-to-end tests: configs of scripted servers, the
gateway started for the official Python client or driven line by line, and process checks."""

import json
import os
import pathlib
import queue
import signal
import subprocess
import sys
import threading
import time

import anyio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from conftest import ALLOW_ALL, ROOT, clawai_bin, write_policy

SCRIPTED = ROOT / "tests" / "e2e" / "servers" / "scripted_server.py"
# The tools every scripted server has, under its own names (see scripted_server.py).
BASE_TOOLS = {"echo", "whoami", "slow", "sample", "elicit", "roots", "add_tool", "touch", "delete_everything", "link"}
LONG_TOOL_NAME = "very_long_tool_name_" + "0123456789" * 5


def gateway_missing() -> str | None:
    """Why the gateway cannot be tested in this build, or None when it can."""
    try:
        out = subprocess.run([clawai_bin(), "gateway", "--help"], capture_output=True, timeout=30)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        return f"no clawai binary to test: {e}"
    return None if out.returncode == 0 else "this clawai build has no `gateway` command yet"


def scripted(name: str, *flags, internal_only: bool | None = False, **keys) -> dict:
    """A config entry that runs the scripted server as `name`; internal_only=None leaves the key out."""
    entry = {"command": sys.executable, "args": [str(SCRIPTED), "--name", name, *map(str, flags)]}
    if internal_only is not None:
        entry["internalOnly"] = internal_only
    entry.update(keys)
    return entry


def write_config(path: pathlib.Path, servers: dict) -> pathlib.Path:
    path.write_text(json.dumps({"mcpServers": servers}, indent=2))
    return path


def gateway_args(tmp_path: pathlib.Path, config: pathlib.Path, policy: str = ALLOW_ALL) -> list[str]:
    """`gateway --config … --policy … --audit …`, the policy checked and the trail in tmp_path."""
    return ["gateway", "--config", str(config), "--policy", str(write_policy(tmp_path, policy)),
            "--audit", str(tmp_path / "audit.jsonl")]


def own_state(tmp_path: pathlib.Path, env: dict | None = None) -> dict:
    """`env` plus state and config homes in tmp_path: pins, approvals and skills of one test
    never meet another's, nor the user's."""
    return {**(env or {}), "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "xdg-config")}


def client(tmp_path, config, *extra, policy: str = ALLOW_ALL, env: dict | None = None, **options) -> Client:
    """The official client on a stdio gateway (handshake era, no response cache, so every list is asked for).
    The SDK gives the gateway a minimal environment of its own plus `env`."""
    params = StdioServerParameters(command=clawai_bin(), args=[*gateway_args(tmp_path, config, policy), *extra],
                                   env=own_state(tmp_path, env), cwd=tmp_path)
    return Client(params, mode=options.pop("mode", "legacy"), cache=None, **options)


async def all_items(c: Client, kind: str = "tools") -> list:
    """Every item of a list, following nextCursor to the end."""
    method = {"tools": c.list_tools, "prompts": c.list_prompts, "resources": c.list_resources,
              "templates": c.list_resource_templates}[kind]
    field = {"tools": "tools", "prompts": "prompts", "resources": "resources", "templates": "resource_templates"}[kind]
    items, cursor = [], None
    for _ in range(1000):
        try:
            page = await method(cursor=cursor)
        except MCPError as e:
            if cursor is None or e.code != -32602:
                raise
            items, cursor = [], None  # the list changed while we paged: start again, as a client must
            continue
        items += getattr(page, field)
        cursor = page.next_cursor
        if not cursor:
            return items
    raise AssertionError("the list never ended")


async def tool_names(c: Client) -> list[str]:
    return [t.name for t in await all_items(c)]


async def listed(c: Client, until, timeout: float = 5) -> set[str]:
    """Lists the tools until `until(names)` holds: upstreams start concurrently, so a fast
    client may list before a server is up."""
    deadline = time.monotonic() + timeout
    while True:
        names = set(await tool_names(c))
        if until(names):
            return names
        if time.monotonic() > deadline:
            raise AssertionError(f"the tool list never got there: {sorted(names)}")
        await anyio.sleep(0.05)


def has_all(*names):
    """A condition on a set of listed names: all of `names` are in it."""
    return lambda listed_names: set(names) <= listed_names


def text_of(result) -> str:
    """The text of a successful call's first content item."""
    assert not result.is_error, result
    return result.content[0].text


def prefixed(names, server: str) -> set[str]:
    return {n for n in names if n.startswith(server + "__")}


async def error_text(c: Client, name: str, arguments: dict | None = None) -> str:
    """The text of a call that must fail, as an error result or a JSON-RPC error."""
    try:
        result = await c.call_tool(name, arguments or {})
    except MCPError as e:
        return f"{e.code} {e.message}"
    assert result.is_error, f"{name} was expected to fail: {result}"
    return " ".join(getattr(item, "text", "") for item in result.content)


def read_log(path: pathlib.Path) -> tuple[list[dict], list[str]]:
    """A scripted server's --log: the messages it received, and its other lines (`cancelled <id>`)."""
    if not path.exists():
        return [], []
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    return [json.loads(line) for line in lines if line.startswith("{")], [line for line in lines if not line.startswith("{")]


def calls_received(path: pathlib.Path, tool: str) -> list[dict]:
    messages, _ = read_log(path)
    return [m for m in messages if m.get("method") == "tools/call" and m["params"]["name"] == tool]


async def poll(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await anyio.sleep(0.05)
    return value


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def pids_in(files) -> list[int]:
    return [int(line) for f in files if f.exists() for line in f.read_text().split()]


def kill_leftovers(pids) -> None:
    """So that a failing test does not leave `sleep 1000` behind on the machine."""
    for pid in pids:
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class RawGateway:
    """A stdio gateway driven line by line, for what the official client hides: exact bytes of
    a response, pipelined requests, how the process ends."""

    def __init__(self, tmp_path: pathlib.Path, args: list[str]):
        self.proc = subprocess.Popen([clawai_bin(), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=own_state(tmp_path, dict(os.environ)), cwd=tmp_path,
                                     start_new_session=True)
        self.lines: queue.Queue = queue.Queue()
        self.stderr: list[bytes] = []
        self.others: list[dict] = []  # notifications and server requests seen while waiting
        self.early: dict = {}  # responses read while waiting for another one: id -> lines
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr.append), daemon=True).start()

    @staticmethod
    def _pump(stream, sink):
        for line in iter(stream.readline, b""):
            sink(line)
        sink(b"")

    def send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def read_response(self, request_id, timeout: float = 10) -> bytes:
        """The raw line of the response to `request_id` (responses may come in any order)."""
        if self.early.get(request_id):
            return self.early[request_id].pop(0)
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no response to {request_id} in {timeout} s") from None
            if not line:
                raise AssertionError(f"the gateway closed its output: {b''.join(self.stderr).decode()[-2000:]}")
            message = json.loads(line)
            if "method" in message:
                self.others.append(message)
            elif message.get("id") == request_id:
                return line.rstrip(b"\n")
            else:
                self.early.setdefault(message.get("id"), []).append(line.rstrip(b"\n"))

    def request(self, request_id, method: str, params: dict | None = None, timeout: float = 10) -> dict:
        self.send({"id": request_id, "method": method, "params": params or {}})
        return json.loads(self.read_response(request_id, timeout))

    def initialize(self) -> dict:
        result = self.request("init", "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                     "clientInfo": {"name": "raw-test", "version": "1"}})
        self.send({"method": "notifications/initialized"})
        return result

    def tool_names(self) -> set[str]:
        names, cursor, n = set(), None, 0
        while True:
            n += 1
            page = self.request(f"list-{time.monotonic_ns()}-{n}", "tools/list", {"cursor": cursor} if cursor else {})
            if "error" in page and cursor and page["error"]["code"] == -32602:
                names, cursor = set(), None  # the list changed while we paged: start again
                continue
            names |= {t["name"] for t in page["result"]["tools"]}
            cursor = page["result"].get("nextCursor")
            if not cursor:
                return names

    def wait_listed(self, until, timeout: float = 5) -> set[str]:
        deadline = time.monotonic() + timeout
        while not until(names := self.tool_names()):
            if time.monotonic() > deadline:
                raise AssertionError(f"the tool list never got there: {sorted(names)}")
            time.sleep(0.05)
        return names

    def close(self, timeout: float = 10) -> int:
        """Closes stdin (the client's EOF) and waits for the gateway to exit."""
        self.proc.stdin.close()
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def run_gateway_to_failure(tmp_path: pathlib.Path, args: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    """A gateway that should refuse to start: stdin at EOF, so one that starts exits 0 at once."""
    return subprocess.run([clawai_bin(), *args], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=15, env=own_state(tmp_path, env or dict(os.environ)), cwd=tmp_path)
