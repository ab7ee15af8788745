"""A `prompt` rule asks a person, with the official Python `mcp` client on the other side:
clawai's own question to a client that shows forms (legacy sessions), the question as an
`input_required` result for 2026-07-28 requests (auto mode, in front of an SDK server), both
over stdio and through `clawai proxy --listen`; out of band through `clawai ui` and
`clawai approve` for a client that cannot show forms; and allowed calls that keep flowing
while one call waits for a person."""

import contextlib
import json
import os
import pathlib
import subprocess
import time

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from conftest import EVERYTHING, clawai_bin, read_audit, write_policy
from test_conformance import free_port, stop
from test_http import wait_until_listening
from test_sdk import example

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


EVERYTHING_STDIO = ("node", str(EVERYTHING), "stdio")

# server-everything's `echo` asks a person; everything else is allowed.
ASK_ECHO = """
[[rule]]
id = "ask-echo"
action = "prompt"
tool = "echo"
description = "Echoing needs a person"

[[rule]]
id = "rest"
action = "allow"
method = "**"
"""

# The SDK calculator's `calculator` tool asks a person; everything else is allowed.
ASK_CALCULATOR = """
[[rule]]
id = "ask-arithmetic"
action = "prompt"
tool = "calculator"
description = "Arithmetic needs a person"

[[rule]]
id = "rest"
action = "allow"
method = "**"
"""


def home_env(tmp_path: pathlib.Path) -> dict:
    """An environment whose XDG directories are the test's own, so that neither the user's
    approval broker nor the user's approvals.toml can answer for the test."""
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items()
           if k not in ("CLAWAI_BROKER_SOCKET", "CLAWAI_APPROVALS", "CLAWAI_AUDIT", "CLAWAI_POLICY",
                        "CLAWAI_GRANT_WINDOW_MS")}
    for name, sub in (("XDG_RUNTIME_DIR", "run"), ("XDG_STATE_HOME", "state"), ("XDG_CONFIG_HOME", "config")):
        path = home / sub
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        env[name] = str(path)
    env["HOME"] = str(home)
    return env


def proxy_args(tmp_path: pathlib.Path, policy: pathlib.Path, server: str, extra: tuple[str, ...]) -> list[str]:
    return ["--policy", str(policy), "--audit", str(tmp_path / "audit.jsonl"),
            "--approvals", str(tmp_path / "no-approvals.toml"), "--server", server, *extra]


@contextlib.asynccontextmanager
async def through_clawai(tmp_path, policy: pathlib.Path, front: str, target: tuple[str, ...], mode: str, *, server: str,
                         extra: tuple[str, ...] = (), **callbacks):
    """The official client connected to `target` through `clawai proxy`: over stdio
    (front="stdio") or over Streamable HTTP to `clawai proxy --listen` (front="listen")."""
    env = home_env(tmp_path)
    args = proxy_args(tmp_path, policy, server, extra)
    if front == "stdio":
        params = StdioServerParameters(command=clawai_bin(), args=["proxy", *args, "--", *target], env=env)
        async with Client(params, mode=mode, **callbacks) as client:
            yield client
        return
    port = free_port()
    with open(tmp_path / "listen.stderr", "wb") as stderr:
        proc = subprocess.Popen([clawai_bin(), "proxy", "--listen", f"127.0.0.1:{port}", *args, "--", *target],
                                env=env, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
    try:
        wait_until_listening(port, proc)
        async with Client(f"http://localhost:{port}/mcp", mode=mode, **callbacks) as client:
            yield client
    finally:
        stop(proc)


class Person:
    """An elicitation callback standing in for a person: records each question and gives
    `answer` (an ElicitResult, or a coroutine function returning one)."""

    def __init__(self, answer):
        self.answer = answer
        self.questions: list[types.ElicitRequestFormParams] = []

    async def __call__(self, context, params):
        self.questions.append(params)
        if callable(self.answer):
            return await self.answer()
        return self.answer


def decide(decision: str) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"decision": decision})


def text(result) -> str:
    return "\n".join(block.text for block in result.content)


# A legacy session may allow a call for the rest of the session; a 2026-07-28 request has
# no session, so its question offers only once or no.
LEGACY_CHOICES = ["allow_once", "allow_session", "deny"]
STATELESS_CHOICES = ["allow_once", "deny"]


def check_question(question, tool: str, rule: str, shown: str, choices: list[str] = LEGACY_CHOICES):
    """clawai's question names the tool, the rule and the arguments, and offers `choices`."""
    assert isinstance(question, types.ElicitRequestFormParams), question
    for part in (f"call the tool {tool}", f"Rule {rule}", shown):
        assert part in question.message, f"{part!r} in {question.message!r}"
    schema = question.model_dump(mode="json", by_alias=True, exclude_none=True)["requestedSchema"]
    assert schema["properties"]["decision"]["enum"] == choices
    assert schema["required"] == ["decision"]


def server_answered(events: list[dict], tool_call_ids: set) -> bool:
    """Whether the server answered any of these calls (it never does when clawai denied)."""
    return any(e["kind"] == "response" and e.get("direction") == "server->client" and e.get("method") == "tools/call"
               and e.get("id") in tool_call_ids for e in events)


def prompted_calls(events: list[dict], tool: str) -> list[dict]:
    return [e for e in events if e.get("tool") == tool and e.get("decision") == "prompt"]


FRONTS = ["stdio", "listen"]


# a. Legacy sessions: clawai's own elicitation/create, in front of server-everything.

@pytest.mark.parametrize("front", FRONTS)
async def test_legacy_allow_once_forwards_the_call_and_asks_again_next_time(tmp_path, front):
    policy = write_policy(tmp_path, ASK_ECHO)
    person = Person(decide("allow_once"))
    with anyio.fail_after(60):
        async with through_clawai(tmp_path, policy, front, EVERYTHING_STDIO, "legacy", server="everything",
                                  elicitation_callback=person) as client:
            result = await client.call_tool("echo", {"message": "approved \u202e"})
            assert not result.is_error and text(result) == "Echo: approved \u202e"
            assert len(person.questions) == 1
            check_question(person.questions[0], "echo", "ask-echo: Echoing needs a person", '"approved \\u{202E}"')
            # Once means once: the identical call is asked about again.
            again = await client.call_tool("echo", {"message": "approved \u202e"})
            assert text(again) == "Echo: approved \u202e" and len(person.questions) == 2
            # Allowed tools are not asked about.
            assert text(await client.call_tool("get-sum", {"a": 2, "b": 40})) == "The sum of 2 and 40 is 42."
            assert len(person.questions) == 2
    events = read_audit(tmp_path / "audit.jsonl")
    asked = [e for e in prompted_calls(events, "echo") if e.get("step") == "asked"]
    assert len(asked) == 2 and all(e["channel"] == "client" and e["rule"] == "ask-echo" for e in asked)
    answered = [e for e in events if e["kind"] == "approval" and e.get("step") == "answered"]
    assert len(answered) == 2 and all(e["approved"] is True and e["scope"] == "once" and e["by"] == "client"
                                      for e in answered)
    assert server_answered(events, {e["id"] for e in asked}), "the approved calls reached the server"


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("answer", [types.ElicitResult(action="decline"), types.ElicitResult(action="cancel"),
                                    decide("deny")], ids=["decline", "cancel", "deny"])
async def test_legacy_a_person_who_says_no_denies_the_call(tmp_path, front, answer):
    policy = write_policy(tmp_path, ASK_ECHO)
    person = Person(answer)
    with anyio.fail_after(60):
        async with through_clawai(tmp_path, policy, front, EVERYTHING_STDIO, "legacy", server="everything",
                                  elicitation_callback=person) as client:
            result = await client.call_tool("echo", {"message": "refused"})
            assert result.is_error and "declined" in text(result) and "Echo:" not in text(result), text(result)
            # The session goes on.
            assert text(await client.call_tool("get-sum", {"a": 1, "b": 1})) == "The sum of 1 and 1 is 2."
    assert len(person.questions) == 1
    events = read_audit(tmp_path / "audit.jsonl")
    asked = [e for e in prompted_calls(events, "echo") if e.get("step") == "asked"]
    assert len(asked) == 1
    assert not server_answered(events, {asked[0]["id"]}), "the server never got the call"
    assert any(e["kind"] == "approval" and e.get("step") == "answered" and e["approved"] is False for e in events)


@pytest.mark.parametrize("front", FRONTS)
async def test_legacy_nobody_answers_in_time(tmp_path, front):
    policy = write_policy(tmp_path, ASK_ECHO)

    async def never():
        await anyio.sleep(3600)

    person = Person(never)
    with anyio.fail_after(60):
        async with through_clawai(tmp_path, policy, front, EVERYTHING_STDIO, "legacy", server="everything",
                                  extra=("--ask-timeout", "1"), elicitation_callback=person) as client:
            started = time.monotonic()
            result = await client.call_tool("echo", {"message": "too late"})
            waited = time.monotonic() - started
            assert result.is_error and "nobody answered within 1 s" in text(result), text(result)
            assert 0.9 <= waited < 10, waited
            assert text(await client.call_tool("get-sum", {"a": 1, "b": 2})) == "The sum of 1 and 2 is 3."
    assert len(person.questions) == 1
    events = read_audit(tmp_path / "audit.jsonl")
    asked = [e for e in prompted_calls(events, "echo") if e.get("step") == "asked"]
    assert not server_answered(events, {asked[0]["id"]})
    assert any(e["kind"] == "approval" and e.get("step") == "timed_out" and e["approved"] is False for e in events)


@pytest.mark.parametrize("front", FRONTS)
async def test_legacy_allow_for_the_session_covers_the_identical_call_only(tmp_path, front):
    policy = write_policy(tmp_path, ASK_ECHO)
    person = Person(decide("allow_session"))
    with anyio.fail_after(60):
        async with through_clawai(tmp_path, policy, front, EVERYTHING_STDIO, "legacy", server="everything",
                                  elicitation_callback=person) as client:
            assert text(await client.call_tool("echo", {"message": "same"})) == "Echo: same"
            assert len(person.questions) == 1
            assert text(await client.call_tool("echo", {"message": "same"})) == "Echo: same"
            assert len(person.questions) == 1, "the identical call is not asked about again"
            assert text(await client.call_tool("echo", {"message": "other"})) == "Echo: other"
            assert len(person.questions) == 2, "another argument is asked about"
    events = read_audit(tmp_path / "audit.jsonl")
    steps = [e.get("step") for e in prompted_calls(events, "echo")]
    assert steps == ["asked", "allowed_without_asking", "asked"], steps
    assert any(e.get("channel") == "session_grant" and e.get("scope") == "session" for e in events)


# b. 2026-07-28 requests (auto mode against an SDK server that answers server/discover):
# the question travels as an input_required result, the client retries with the answer.

@pytest.mark.parametrize("front", FRONTS)
async def test_auto_mode_accept_completes_the_call(tmp_path, front):
    policy = write_policy(tmp_path, ASK_CALCULATOR)
    person = Person(decide("allow_once"))
    with anyio.fail_after(60):
        async with through_clawai(tmp_path, policy, front, (example("calculator"),), "auto", server="math",
                                  elicitation_callback=person) as client:
            assert client.session.protocol_version == "2026-07-28"
            result = await client.call_tool("calculator", {"operation": "add", "a": 2, "b": 3})
            assert not result.is_error and text(result) == "Result: 5"
            assert text(await client.call_tool("echo", {"text": "not asked"})) == "not asked"
    assert len(person.questions) == 1
    check_question(person.questions[0], "calculator", "ask-arithmetic: Arithmetic needs a person", 'operation: "add"',
                   STATELESS_CHOICES)
    calls = prompted_calls(read_audit(tmp_path / "audit.jsonl"), "calculator")
    assert [(e.get("step"), e.get("channel")) for e in calls] == [("asked", "client"), ("answered", "client_retry")]
    assert calls[1]["approved"] is True and calls[1]["scope"] == "once"


@pytest.mark.parametrize("front", FRONTS)
async def test_auto_mode_decline_denies(tmp_path, front):
    policy = write_policy(tmp_path, ASK_CALCULATOR)
    person = Person(types.ElicitResult(action="decline"))
    with anyio.fail_after(60):
        async with through_clawai(tmp_path, policy, front, (example("calculator"),), "auto", server="math",
                                  elicitation_callback=person) as client:
            assert client.session.protocol_version == "2026-07-28"
            result = await client.call_tool("calculator", {"operation": "multiply", "a": 6, "b": 7})
    assert result.is_error and "declined" in text(result) and "42" not in text(result), text(result)
    assert len(person.questions) == 1
    events = read_audit(tmp_path / "audit.jsonl")
    calls = prompted_calls(events, "calculator")
    assert [(e.get("step"), e.get("approved")) for e in calls] == [("asked", None), ("answered", False)]
    assert not server_answered(events, {e["id"] for e in calls}), "the server never got the call"


@pytest.mark.parametrize("front", FRONTS)
async def test_auto_mode_grants_nothing_for_a_session(tmp_path, front):
    """A 2026-07-28 request has no session: an answer that says "for the session" anyway
    allows that call once, and the identical call is asked about again."""
    policy = write_policy(tmp_path, ASK_CALCULATOR)
    person = Person(decide("allow_session"))
    add = {"operation": "add", "a": 2, "b": 3}
    with anyio.fail_after(60):
        async with through_clawai(tmp_path, policy, front, (example("calculator"),), "auto", server="math",
                                  elicitation_callback=person) as client:
            assert text(await client.call_tool("calculator", add)) == "Result: 5"
            assert text(await client.call_tool("calculator", add)) == "Result: 5"
    assert len(person.questions) == 2, "the identical call is asked about again"
    calls = prompted_calls(read_audit(tmp_path / "audit.jsonl"), "calculator")
    assert [(e.get("step"), e.get("scope")) for e in calls] == [("asked", None), ("answered", "once")] * 2


# d. Out of band: a client that cannot show forms, and a person at `clawai approve`.

@contextlib.contextmanager
def approval_broker(env: dict):
    """`clawai ui` in the test's home; yields its URL."""
    proc = subprocess.Popen([clawai_bin(), "ui", "--listen", "127.0.0.1:0"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        url = proc.stdout.readline().decode().strip()
        assert url.startswith("http://127.0.0.1:") and "token=" in url, f"clawai ui printed {url!r}"
        yield url
    finally:
        stop(proc)


def clawai_cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([clawai_bin(), *args], env=env, capture_output=True, text=True, timeout=30)


async def pending_approvals(env: dict, count: int) -> list[dict]:
    """`clawai approvals --json`, polled until it lists `count` approvals."""
    for _ in range(200):
        listed = clawai_cli(env, "approvals", "--json")
        assert listed.returncode == 0, listed.stderr
        items = json.loads(listed.stdout)
        if len(items) >= count:
            return items
        await anyio.sleep(0.05)
    raise AssertionError(f"the broker never listed {count} approvals")


# What each mode asks about out of band: legacy sessions with server-everything's `echo`,
# 2026-07-28 requests (auto mode) with the SDK calculator's `calculator`.
OUT_OF_BAND = {
    "legacy": dict(policy=ASK_ECHO, target=EVERYTHING_STDIO, server="everything", tool="echo", rule="ask-echo",
                   arguments={"message": "out of band"}, approved="Echo: out of band",
                   other=("get-sum", {"a": 20, "b": 22}, "The sum of 20 and 22 is 42.")),
    "auto": dict(policy=ASK_CALCULATOR, target=None, server="math", tool="calculator", rule="ask-arithmetic",
                 arguments={"operation": "add", "a": 20, "b": 22}, approved="Result: 42",
                 other=("echo", {"text": "meanwhile"}, "meanwhile")),
}


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_without_elicitation_or_broker_nobody_can_be_asked(tmp_path, front, mode):
    case = OUT_OF_BAND[mode]
    policy = write_policy(tmp_path, case["policy"])
    target = case["target"] or (example("calculator"),)
    with anyio.fail_after(60):
        async with through_clawai(tmp_path, policy, front, target, mode, server=case["server"]) as client:
            result = await client.call_tool(case["tool"], case["arguments"])
    assert result.is_error and "nobody could be asked" in text(result) and "clawai ui" in text(result), text(result)
    events = read_audit(tmp_path / "audit.jsonl")
    assert [e.get("step") for e in prompted_calls(events, case["tool"])] == ["not_asked"]


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("mode,verdict", [
    ("legacy", "approve"), ("legacy", "deny"), ("auto", "approve"),
    ("auto", "deny")])
async def test_out_of_band_a_person_answers_at_the_terminal(tmp_path, front, mode, verdict):
    case = OUT_OF_BAND[mode]
    policy = write_policy(tmp_path, case["policy"])
    target = case["target"] or (example("calculator"),)
    env = home_env(tmp_path)
    outcome = {}
    with approval_broker(env), anyio.fail_after(60):
        async with through_clawai(tmp_path, policy, front, target, mode, server=case["server"]) as client:
            if mode == "auto":
                assert client.session.protocol_version == "2026-07-28"

            async def held_call():
                outcome["result"] = await client.call_tool(case["tool"], case["arguments"])

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(held_call)
                items = await pending_approvals(env, 1)
                assert len(items) == 1
                item = items[0]
                assert (item["server"], item["method"], item["name"], item["rule"]) == \
                    (case["server"], "tools/call", case["tool"], case["rule"])
                assert item["arguments"] == case["arguments"] and item["state"] == "waiting"
                # Other calls go on while this one waits.
                other_tool, other_arguments, other_text = case["other"]
                assert text(await client.call_tool(other_tool, other_arguments)) == other_text
                assert "result" not in outcome, "the call waits for the person"
                answered = clawai_cli(env, verdict, item["id"])
                assert answered.returncode == 0, answered.stderr
            assert json.loads(clawai_cli(env, "approvals", "--json").stdout) == [], "nothing is left pending"
    result = outcome["result"]
    if verdict == "approve":
        assert not result.is_error and text(result) == case["approved"]
    else:
        assert result.is_error and "declined" in text(result), text(result)
    events = read_audit(tmp_path / "audit.jsonl")
    asked = [e for e in prompted_calls(events, case["tool"]) if e.get("step") == "asked"]
    assert len(asked) == 1 and asked[0]["channel"] == "broker" and asked[0]["approval"] == item["id"]
    assert any(e.get("step") == "answered" and e.get("channel") == "broker" and e.get("by") == "cli"
               and e.get("approved") is (verdict == "approve") for e in events)
    assert server_answered(events, {asked[0]["id"]}) is (verdict == "approve")


@pytest.mark.parametrize("front", FRONTS)
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_out_of_band_past_the_time_out_an_approval_lets_the_retry_through_once(tmp_path, front, mode):
    case = OUT_OF_BAND[mode]
    policy = write_policy(tmp_path, case["policy"])
    target = case["target"] or (example("calculator"),)
    env = home_env(tmp_path)
    with approval_broker(env), anyio.fail_after(60):
        async with through_clawai(tmp_path, policy, front, target, mode, server=case["server"],
                                  extra=("--ask-timeout", "1")) as client:
            late = await client.call_tool(case["tool"], case["arguments"])
            items = await pending_approvals(env, 1)
            assert items[0]["state"] == "expired", items
            approval = items[0]["id"]
            assert late.is_error and f"clawai approve {approval}" in text(late), text(late)
            approved = clawai_cli(env, "approve", approval)
            assert approved.returncode == 0, approved.stderr
            retry = await client.call_tool(case["tool"], case["arguments"])
            assert not retry.is_error and text(retry) == case["approved"]
            # Once: the next identical call is asked about again, and times out again.
            again = await client.call_tool(case["tool"], case["arguments"])
            assert again.is_error and "clawai approve" in text(again), text(again)
    steps = [(e.get("step"), e.get("by")) for e in read_audit(tmp_path / "audit.jsonl")
             if e.get("tool") == case["tool"] and e.get("channel") == "broker"]
    # Asked three times; the retry was answered at once by the broker's grant.
    assert sorted(steps, key=str) == sorted([("asked", None), ("timed_out", "clawai"), ("asked", None),
                                             ("answered", "grant"), ("asked", None), ("timed_out", "clawai")],
                                            key=str), steps


# 3. A call that waits for a person holds up nothing else.

@pytest.mark.parametrize("front", FRONTS)
async def test_a_hundred_allowed_calls_complete_while_one_waits_for_a_person(tmp_path, front):
    policy = write_policy(tmp_path, ASK_ECHO)
    asked = anyio.Event()
    answer_now = anyio.Event()

    async def when_told():
        asked.set()
        await answer_now.wait()
        return decide("allow_once")

    person = Person(when_told)
    held = {}
    with anyio.fail_after(90):
        async with through_clawai(tmp_path, policy, front, EVERYTHING_STDIO, "legacy", server="everything",
                                  elicitation_callback=person) as client:

            async def held_call():
                held["result"] = await client.call_tool("echo", {"message": "held"})

            async def allowed_call(n: int, done: list):
                result = await client.call_tool("get-sum", {"a": n, "b": 1})
                assert text(result) == f"The sum of {n} and 1 is {n + 1}.", text(result)
                done.append(n)

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(held_call)
                await asked.wait()
                done: list[int] = []
                async with anyio.create_task_group() as allowed:
                    for n in range(100):
                        allowed.start_soon(allowed_call, n, done)
                assert sorted(done) == list(range(100))
                assert "result" not in held, "the held call still waits"
                answer_now.set()
    assert text(held["result"]) == "Echo: held"
    assert len(person.questions) == 1
