"""Idempotent admissions on chat completions and Responses against the real app in-process (WIRE.md §5, §3.5,
§1.8; checklist W-5.x, W-1.9).

Every request goes through the plugin's startup hook, the real middlewares, the SQLite store and the scripted
runtime; nothing on the server side is mocked. Executions are counted in the scripted runtime's execution log
(one JSON line per executed turn); every request puts its idempotency key into the user text, so each line
names the key it ran for.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp.test_utils import TestClient

from hermes_api_plugin.core.events import TurnStatus
from hermes_api_plugin.http.app_keys import IDEMPOTENCY, STORE, TURNS
from hermes_api_plugin.turns import Turn
from tests.helpers import (
    CHAT,
    COMPLETION_ID,
    CONFLICT,
    DEFAULT_ANSWER,
    JSON_TYPE,
    PATHS,
    RESPONSE_ID,
    RESPONSES,
    RUN_ID,
    RUNNING_MARKER,
    SURFACES,
    USE_TOOL_ANSWER,
    Reply,
    assert_error_envelope,
    complete_records,
    fetch,
    read_reply,
    read_until,
    serve_app,
    wait_for_async,
)
from tests.live import SCRIPTS, executions, write_home

from .support import check_refusal_stream

SLOW_REASONING = "Taking my time."
SLOW_ANSWER = "Slow and steady."
SLOW_SECONDS = 1.0
ROTATED_KEY = "another-key-0123456789"

EXPIRED = {
    "error": {"message": "admission_expired", "type": "conflict_error", "param": None, "code": "admission_expired"}
}
# The admitting routes in the §8.3 order; capabilities list those this build serves.
ADMITTING_PATHS = (
    "/v1/chat/completions",
    "/v1/responses",
    "/v1/runs",
    "/api/sessions/{session_id}/chat",
    "/api/sessions/{session_id}/chat/stream",
)


# -- homes and apps -----------------------------------------------------------------------------------------


def slow_home(root: Path, *, config: dict[str, Any] | None = None, env: dict[str, str] | None = None) -> Path:
    """A Hermes home whose script is tests/scripts/chat.yaml plus a first turn "slow": reasoning, a
    SLOW_SECONDS sleep, then text — a turn that is reliably still running for a while, yet finite."""
    root.mkdir(parents=True, exist_ok=True)
    home = root / "home"
    script = yaml.safe_load((SCRIPTS / "chat.yaml").read_text(encoding="utf-8"))
    script["turns"].insert(
        0,
        {
            "match": "slow",
            "steps": [
                {"reasoning": SLOW_REASONING},
                {"sleep": SLOW_SECONDS},
                {"text": SLOW_ANSWER},
                {"usage": {"prompt_tokens": 5, "completion_tokens": 3}},
            ],
        },
    )
    script.setdefault("options", {})["execution_log"] = str(home / "executions.jsonl")
    path = root / "slow.yaml"
    path.write_text(yaml.safe_dump(script, sort_keys=False), encoding="utf-8")
    return write_home(home, env=env, script=None, config={**(config or {}), "agent": {"script": str(path)}})


SlowFactory = Callable[..., Awaitable[TestClient]]


@pytest.fixture
def make_slow_api(aiohttp_client: Any, tmp_path: Path) -> SlowFactory:
    counter = 0

    async def make(*, config: dict[str, Any] | None = None) -> TestClient:
        nonlocal counter
        counter += 1
        return await serve_app(aiohttp_client, slow_home(tmp_path / f"slow{counter}", config=config))

    return make


@pytest.fixture
async def slow_api(make_slow_api: SlowFactory) -> TestClient:
    return await make_slow_api()


# -- requests and replies -----------------------------------------------------------------------------------


def new_key() -> str:
    """A fresh key; hex only, so no scripted turn pattern ("fail", "hang", "slow", …) can match inside it."""
    return "k-" + secrets.token_hex(8)


def payload(surface: str, text: Any, *, stream: bool, **extra: Any) -> dict[str, Any]:
    if surface == "chat":
        return {"model": "hermes-agent", "stream": stream, "messages": [{"role": "user", "content": text}], **extra}
    return {"model": "hermes-agent", "stream": stream, "input": text, **extra}


async def post(
    api: TestClient,
    auth: dict[str, str],
    path: str,
    body: dict[str, Any],
    *,
    key: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    sent = {**auth, **(headers or {})}
    if key is not None:
        sent["Idempotency-Key"] = key
    return await fetch(api, "POST", path, json=body, headers=sent)


async def send(
    api: TestClient,
    auth: dict[str, str],
    surface: str,
    text: Any,
    *,
    stream: bool,
    key: str | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> Reply:
    return await post(
        api, auth, PATHS[surface], payload(surface, text, stream=stream, **extra), key=key, headers=headers
    )


def runs_of(home: Path, key: str) -> list[dict[str, Any]]:
    """Execution-log lines of turns whose input names `key`."""
    return [e for e in executions(home) if key in json.dumps(e["input"], ensure_ascii=False)]


def runs(api: TestClient, key: str) -> int:
    return len(runs_of(api.home, key))  # type: ignore[attr-defined]


def check_first(reply: Reply) -> None:
    assert reply.status == 200, reply.raw
    assert not reply.replayed and "Idempotency-Replayed" not in reply.headers
    assert reply.run_id is not None and RUN_ID.match(reply.run_id)


def check_replay_of(reply: Reply, original: Reply) -> None:
    """§5.3: a replay or attach carries Idempotency-Replayed: true and every id of the original."""
    assert reply.status == 200, reply.raw
    assert reply.replayed, dict(reply.headers)
    assert reply.run_id == original.run_id
    assert reply.headers["X-Hermes-Session-Id"] == original.headers["X-Hermes-Session-Id"]


def check_refused(surface: str, stream: bool, reply: Reply, code: str) -> None:
    """§5.3 table: chat streams report in-stream; chat JSON and both Responses modes answer 409 before any head."""
    if surface == "chat" and stream:
        check_refusal_stream(reply, code)
        assert reply.run_id is None, "§3.1: a chat stream ending in an admission chunk admitted nothing"
    else:
        assert_error_envelope(
            reply,
            409,
            code,
            message=code,
            type="invalid_request_error" if code == "admission_conflict" else "conflict_error",
            param=None,
        )


def check_same_turn(surface: str, json_reply: Reply, sse_reply: Reply) -> None:
    """§5.2/§5.3: the JSON and the stream rendering of one recorded turn agree, ids included."""
    body = json_reply.json()
    if surface == "chat":
        chunks = sse_reply.chunks
        assert {c["id"] for c in chunks} == {body["id"]}
        assert {c["created"] for c in chunks} == {body["created"]}
        content, reasoning = sse_reply.chat_text()
        message = body["choices"][0]["message"]
        assert content == message["content"]
        assert reasoning == message.get("reasoning_content", "")
        assert chunks[-1]["choices"][0]["finish_reason"] == body["choices"][0]["finish_reason"]
        assert chunks[-1]["usage"] == body["usage"]
    else:
        events = sse_reply.events
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
        assert events[0]["response"]["id"] == body["id"]
        assert events[-1]["response"] == body


async def wait_settled(turn: Turn, timeout: float = 15.0) -> TurnStatus:
    return (await asyncio.wait_for(turn.wait(), timeout)).status


async def get_response(api: TestClient, auth: dict[str, str], response_id: str) -> tuple[int, Any]:
    async with api.get(f"{RESPONSES}/{response_id}", headers=auth) as resp:
        return resp.status, await resp.json()


# -- W-5.1: the key itself ----------------------------------------------------------------------------------


MALFORMED_KEYS = {
    "empty": "",
    "blank-after-trim": "   ",
    "256-chars": "k" * 256,
    "space-inside": "two words",
    "non-ascii": "clé-française",
    "tab-inside": "tab\there",
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("raw_key", list(MALFORMED_KEYS.values()), ids=list(MALFORMED_KEYS))
async def test_malformed_idempotency_key_is_rejected_before_anything_runs(
    api: TestClient, auth: dict[str, str], surface: str, stream: bool, raw_key: str
) -> None:
    """W-5.1, §1.6, §5.1: empty after trimming, over 255 characters, or any character outside 0x21–0x7E →
    400 invalid_idempotency_key with param Idempotency-Key (also for a chat stream); nothing executes."""
    reply = await send(api, auth, surface, "hello malformed", stream=stream, key=raw_key)
    assert_error_envelope(reply, 400, "invalid_idempotency_key", type="invalid_request_error", param="Idempotency-Key")
    assert executions(api.home) == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("surface", SURFACES)
async def test_255_visible_ascii_key_is_accepted_and_trimmed(
    api: TestClient, auth: dict[str, str], surface: str
) -> None:
    """W-5.1, §5.1: 255 visible ASCII characters (the whole 0x21–0x7E range) form a valid key; surrounding
    whitespace is trimmed, so the padded spelling is the same key and replays."""
    key = "".join(chr(0x21 + i % 94) for i in range(255))
    assert len(key) == 255
    marker = new_key()
    first = await send(api, auth, surface, f"hello {marker}", stream=False, key=key)
    check_first(first)
    retry = await send(api, auth, surface, f"hello {marker}", stream=False, key=f"  {key}  ")
    check_replay_of(retry, first)
    assert retry.answer() == first.answer()
    assert runs(api, marker) == 1


# -- W-5.2: simultaneous first requests ---------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("surface", SURFACES)
async def test_twenty_simultaneous_identical_keyed_requests_execute_once(
    api: TestClient, auth: dict[str, str], surface: str, stream: bool
) -> None:
    """W-5.2, §5.3: twenty simultaneous identical requests with one key → one admission, one execution, and
    twenty identical answers: the same chatcmpl id / Response object / event list with item ids and sequence
    numbers, the same run id; all but the admitted one carry Idempotency-Replayed: true."""
    key = new_key()
    text = f"use tool {key}"
    replies = await asyncio.gather(*(send(api, auth, surface, text, stream=stream, key=key) for _ in range(20)))
    assert [r.status for r in replies] == [200] * 20, [r.raw[:200] for r in replies if r.status != 200]
    assert runs(api, key) == 1
    answers = [r.answer() for r in replies]
    assert all(a == answers[0] for a in answers[1:])
    assert len({r.run_id for r in replies}) == 1 and RUN_ID.match(replies[0].run_id or "")
    assert len({r.headers["X-Hermes-Session-Id"] for r in replies}) == 1
    assert sorted(r.replayed for r in replies) == [False] + [True] * 19
    assert replies[0].answer_text(surface).endswith(USE_TOOL_ANSWER)
    if surface == "chat" and stream:
        assert COMPLETION_ID.match(replies[0].chunks[0]["id"])
        assert replies[0].chunks[-1]["choices"][0]["finish_reason"] == "stop"
    elif surface == "chat":
        assert COMPLETION_ID.match(replies[0].json()["id"])
    elif stream:
        events = replies[0].events
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
        assert events[-1]["type"] == "response.completed"
        assert RESPONSE_ID.match(events[0]["response"]["id"])
    else:
        assert replies[0].json()["status"] == "completed"


# -- W-5.3, W-5.4: the acceptance matrix --------------------------------------------------------------------


@pytest.mark.parametrize("first_stream", [False, True], ids=["json-first", "sse-first"])
@pytest.mark.parametrize("surface", SURFACES)
async def test_keyed_retry_matrix_replays_switches_mode_and_conflicts(
    api: TestClient, auth: dict[str, str], surface: str, first_stream: bool
) -> None:
    """W-5.3, W-5.4, §5.3: the first keyed request executes once; an exact retry after it settled gets the same
    answer and ids with Idempotency-Replayed: true and the original X-Hermes-Run-Id; a retry in the other mode
    (JSON ↔ SSE) renders the same recorded turn; a changed input under the key executes nothing and gets 409
    admission_conflict — except on a chat stream: 200, role chunk, the §3.5 admission_conflict chunk, [DONE]."""
    key = new_key()
    text = f"use tool {key}"
    first = await send(api, auth, surface, text, stream=first_stream, key=key)
    check_first(first)
    assert first.answer_text(surface).endswith(USE_TOOL_ANSWER)
    assert runs(api, key) == 1

    same = await send(api, auth, surface, text, stream=first_stream, key=key)
    check_replay_of(same, first)
    assert same.answer() == first.answer()
    if not first_stream:
        assert same.headers["Content-Type"] == JSON_TYPE

    switched = await send(api, auth, surface, text, stream=not first_stream, key=key)
    check_replay_of(switched, first)
    assert switched.is_stream is (not first_stream)
    json_reply, sse_reply = (switched, first) if first_stream else (first, switched)
    check_same_turn(surface, json_reply, sse_reply)

    for stream in (False, True):
        conflict = await send(api, auth, surface, f"use tool {key} but changed", stream=stream, key=key)
        check_refused(surface, stream, conflict, "admission_conflict")
        assert not conflict.replayed
    assert runs(api, key) == 1, "nothing executes for a conflict"


# -- W-5.5, W-5.13, §5.2: what is (not) identity -------------------------------------------------------------


def chat_messages(key: str, *, system: str = "Be brief.") -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": f"hello {key}"},
    ]


TOOL_CALL = {"id": "call_client_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}]


def _with_tool_message(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        *messages[:2],
        {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
        {"role": "tool", "tool_call_id": TOOL_CALL["id"], "content": "client tool output"},
        *messages[2:],
    ]


def _with_assistant_tool_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [*messages[:2], {**messages[2], "tool_calls": [TOOL_CALL]}, *messages[3:]]


def _with_history_reasoning(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [*messages[:2], {**messages[2], "reasoning_content": "I thought about it."}, *messages[3:]]


REPLAYING_CHAT_CHANGES: dict[
    str, tuple[Callable[[list[dict[str, Any]]], list[dict[str, Any]]], dict[str, Any], dict[str, str]]
] = {
    "tools": (lambda m: m, {"tools": TOOLS}, {}),
    "tool_choice": (lambda m: m, {"tools": TOOLS, "tool_choice": "required"}, {}),
    "tool-message-in-history": (_with_tool_message, {}, {}),
    "assistant-tool-calls": (_with_assistant_tool_calls, {}, {}),
    "reasoning-content-on-history": (_with_history_reasoning, {}, {}),
    "sampling-metadata-stream-options": (
        lambda m: m,
        {"temperature": 0.1, "metadata": {"tag": "x"}, "stream_options": {"include_usage": True}},
        {},
    ),
    "tool-progress-header": (lambda m: m, {}, {"X-Hermes-Tool-Progress": "off"}),
}


@pytest.mark.parametrize("change", list(REPLAYING_CHAT_CHANGES))
async def test_chat_retry_changing_only_non_identity_fields_replays(
    api: TestClient, auth: dict[str, str], change: str
) -> None:
    """W-5.5, W-5.13, §5.2: a chat retry that changes only tools/tool_choice, only what §3.1 drops (a tool message,
    assistant tool_calls, reasoning_content on a history message) or other non-identity fields replays the
    original answer; nothing runs again."""
    key = new_key()
    messages = chat_messages(key)
    first = await post(api, auth, CHAT, {"model": "hermes-agent", "stream": False, "messages": messages}, key=key)
    check_first(first)
    rewrite, extra, headers = REPLAYING_CHAT_CHANGES[change]
    retry = await post(
        api,
        auth,
        CHAT,
        {"model": "hermes-agent", "stream": False, "messages": rewrite(messages), **extra},
        key=key,
        headers=headers,
    )
    check_replay_of(retry, first)
    assert retry.json() == first.json()
    assert runs(api, key) == 1


async def test_reasoning_effort_spellings_fold_into_one_identity(api: TestClient, auth: dict[str, str]) -> None:
    """§5.2: `reasoning_effort` folds into model_options.reasoning.effort (chat), Responses `reasoning.effort`
    likewise, and a string `input` folds into a one-item message list — equivalent spellings replay."""
    key = new_key()
    body = {"model": "hermes-agent", "stream": False, "messages": [{"role": "user", "content": f"hello {key}"}]}
    first = await post(api, auth, CHAT, {**body, "reasoning_effort": "high"}, key=key)
    check_first(first)
    retry = await post(api, auth, CHAT, {**body, "model_options": {"reasoning": {"effort": "high"}}}, key=key)
    check_replay_of(retry, first)
    assert retry.json() == first.json()

    rkey = new_key()
    rfirst = await send(api, auth, "responses", f"hello {rkey}", stream=False, key=rkey, reasoning={"effort": "low"})
    check_first(rfirst)
    rretry = await send(
        api,
        auth,
        "responses",
        [{"role": "user", "content": f"hello {rkey}"}],
        stream=False,
        key=rkey,
        model_options={"reasoning": {"effort": "low"}},
    )
    check_replay_of(rretry, rfirst)
    assert rretry.json() == rfirst.json()
    assert runs(api, key) == 1 and runs(api, rkey) == 1


CONFLICTING_CHAT_CHANGES: dict[str, tuple[dict[str, Any], dict[str, str], bool]] = {
    # name: (body changes, headers, whether the original request carried X-Hermes-Session-Key: alpha)
    "model_options": ({"model_options": {"fast": True}}, {}, False),
    "reasoning-effort": ({"reasoning_effort": "low"}, {}, False),
    "system-prompt": ({"system": "Be verbose."}, {}, False),
    "earlier-message": ({"earlier": "another first question"}, {}, False),
    "model": ({"model": "another-model"}, {}, False),
    "session-key-added": ({}, {"X-Hermes-Session-Key": "beta"}, False),
    "session-key-changed": ({}, {"X-Hermes-Session-Key": "beta"}, True),
    "session-id-added": ({}, {"X-Hermes-Session-Id": "explicit-session"}, False),
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("change", list(CONFLICTING_CHAT_CHANGES))
async def test_chat_retry_changing_identity_or_target_conflicts(
    api: TestClient, auth: dict[str, str], change: str, stream: bool
) -> None:
    """W-5.4, W-5.13, W-8.5, §5.2: changing model_options (unknown keys included), the reasoning effort, the system
    prompt, an earlier message or the model conflicts; so does another target session (another or an added
    X-Hermes-Session-Key, an explicit X-Hermes-Session-Id). Nothing executes."""
    key = new_key()
    changes, headers, keyed_session = CONFLICTING_CHAT_CHANGES[change]
    original_headers = {"X-Hermes-Session-Key": "alpha"} if keyed_session else {}
    first = await post(
        api,
        auth,
        CHAT,
        {"model": "hermes-agent", "stream": False, "messages": chat_messages(key)},
        key=key,
        headers=original_headers,
    )
    check_first(first)
    messages = chat_messages(key, system=changes.get("system", "Be brief."))
    if "earlier" in changes:
        messages[1] = {"role": "user", "content": changes["earlier"]}
    body = {
        "model": changes.get("model", "hermes-agent"),
        "stream": stream,
        "messages": messages,
        **{k: v for k, v in changes.items() if k not in ("system", "earlier", "model")},
    }
    retry = await post(api, auth, CHAT, body, key=key, headers={**original_headers, **headers})
    check_refused("chat", stream, retry, "admission_conflict")
    assert runs(api, key) == 1


RESPONSES_CHANGES: dict[str, tuple[dict[str, Any], dict[str, str], bool]] = {
    # name: (body changes, headers, replays?)
    "non-identity-fields": (
        {"metadata": {"tag": "x"}, "tool_choice": "none", "parallel_tool_calls": False, "temperature": 0.3},
        {},
        True,
    ),
    "store-false": ({"store": False}, {}, True),
    "instructions": ({"instructions": "Answer in French."}, {}, False),
    "model_options": ({"model_options": {"fast": True}}, {}, False),
    "tools": ({"tools": [{"type": "function", "name": "lookup", "parameters": {}}]}, {}, False),
    "truncation": ({"truncation": "disabled"}, {}, False),
    "conversation": ({"conversation": "some-conversation"}, {}, False),
    "session-key": ({}, {"X-Hermes-Session-Key": "beta"}, False),
}


@pytest.mark.parametrize("change", list(RESPONSES_CHANGES))
async def test_responses_retry_identity_and_target(api: TestClient, auth: dict[str, str], change: str) -> None:
    """W-5.4, §5.2: on Responses, stream/background/store/metadata/tool_choice/parallel_tool_calls and sampling
    fields are not identity (replay); instructions, model_options, tools, truncation (when sent), conversation and
    the X-Hermes-Session-Key target are (409 admission_conflict, nothing executes)."""
    key = new_key()
    first = await send(api, auth, "responses", f"hello {key}", stream=False, key=key)
    check_first(first)
    extra, headers, replays = RESPONSES_CHANGES[change]
    retry = await send(api, auth, "responses", f"hello {key}", stream=False, key=key, headers=headers, **extra)
    if replays:
        check_replay_of(retry, first)
        assert retry.json() == first.json()
    else:
        assert_error_envelope(retry, 409, **CONFLICT["error"])
    assert runs(api, key) == 1


# -- attach: a retry while the turn runs ---------------------------------------------------------------------


@pytest.mark.slow  # waits out the 1 s scripted "slow" turn
@pytest.mark.parametrize("surface", SURFACES)
async def test_keyed_stream_retry_while_running_attaches_from_the_start(
    slow_api: TestClient, auth: dict[str, str], surface: str
) -> None:
    """§5.3 attach, W-5.2: a keyed SSE retry while the first request's turn still runs gets its head at once
    (Idempotency-Replayed: true, the same run id) while the turn is still running, then the journal from the
    start — the same chatcmpl id / the same response id and sequence numbers from 0 — and then live events to
    the end; the turn executes once."""
    api = slow_api
    registry = api.server.app[TURNS]
    key = new_key()
    body = payload(surface, f"slow {key}", stream=True)
    headers = {**auth, "Idempotency-Key": key}
    async with api.post(PATHS[surface], json=body, headers=headers) as first:
        assert first.status == 200
        run_id = first.headers["X-Hermes-Run-Id"]
        raw = await read_until(first, RUNNING_MARKER[surface])
        assert registry.get(run_id) is not None, "the first turn is running"
        async with api.post(PATHS[surface], json=body, headers=headers) as retry:
            head_while_running = registry.get(run_id) is not None
            retry_reply = await read_reply(retry)
        raw += await asyncio.wait_for(first.read(), 30)
        first_reply = Reply(first.status, first.headers, raw)
    assert head_while_running, "the retry was answered only after the turn settled: a replay, not an attach"
    check_replay_of(retry_reply, first_reply)
    assert retry_reply.answer() == first_reply.answer()
    assert retry_reply.answer_text(surface) == SLOW_ANSWER
    if surface == "responses":
        events = retry_reply.events
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert runs(api, key) == 1


@pytest.mark.slow  # waits out the 1 s scripted "slow" turn
@pytest.mark.parametrize("surface", SURFACES)
async def test_keyed_json_retry_while_running_gets_its_head_at_once(
    slow_api: TestClient, auth: dict[str, str], surface: str
) -> None:
    """§5.3 attach, §1.11: a keyed JSON retry while the turn runs gets the 200 head at once (while the turn is
    still running), then the same body as the first request."""
    api = slow_api
    registry = api.server.app[TURNS]
    key = new_key()
    body = payload(surface, f"slow {key}", stream=False)
    headers = {**auth, "Idempotency-Key": key}
    async with api.post(PATHS[surface], json=body, headers=headers) as first:
        assert first.status == 200
        run_id = first.headers["X-Hermes-Run-Id"]
        turn = registry.get(run_id)
        assert turn is not None
        await wait_for_async(lambda: turn.journal.events, what="the agent's first event")  # the agent has started
        async with api.post(PATHS[surface], json=body, headers=headers) as retry:
            head_while_running = registry.get(run_id) is not None
            retry_reply = await read_reply(retry)
        first_reply = await read_reply(first)
    assert head_while_running, "the retry was answered only after the turn settled"
    check_replay_of(retry_reply, first_reply)
    assert retry_reply.headers["Content-Type"] == JSON_TYPE
    assert retry_reply.json() == first_reply.json()
    assert retry_reply.answer_text(surface) == SLOW_ANSWER
    assert runs(api, key) == 1


# -- W-1.9: the cap ------------------------------------------------------------------------------------------


@pytest.mark.slow  # waits out the 1 s scripted "slow" turn
@pytest.mark.parametrize("surface", SURFACES)
async def test_at_the_cap_new_turns_get_429_while_an_exact_keyed_retry_is_served(
    make_slow_api: SlowFactory, auth: dict[str, str], surface: str
) -> None:
    """W-1.9, §1.8, §5.3: with max_concurrent_runs 1 and one keyed turn running, a new unkeyed request and a new
    key get 429 rate_limit_exceeded with Retry-After: 1, while the exact keyed retry (the key lookup comes
    before the cap check) is served at the cap: head while the turn runs, the same answer, nothing re-run."""
    api = await make_slow_api(config={"api_server": {"max_concurrent_runs": 1}})
    registry = api.server.app[TURNS]
    key = new_key()
    body = payload(surface, f"slow {key}", stream=True)
    async with api.post(PATHS[surface], json=body, headers={**auth, "Idempotency-Key": key}) as first:
        assert first.status == 200
        run_id = first.headers["X-Hermes-Run-Id"]
        raw = await read_until(first, RUNNING_MARKER[surface])
        for other_key in (None, new_key()):
            for stream in (False, True):
                refused = await send(api, auth, surface, "hello at the cap", stream=stream, key=other_key)
                assert refused.status == 429, refused.raw
                assert refused.headers["Retry-After"] == "1"
                assert_error_envelope(
                    refused,
                    429,
                    "rate_limit_exceeded",
                    message="Too many concurrent runs (max 1)",
                    type="rate_limit_error",
                    param=None,
                )
        async with api.post(
            PATHS[surface], json={**body, "stream": False}, headers={**auth, "Idempotency-Key": key}
        ) as retry:
            served_at_cap = registry.active == 1 and registry.get(run_id) is not None
            retry_reply = await read_reply(retry)
        first_reply = Reply(first.status, first.headers, raw + await asyncio.wait_for(first.read(), 30))
    assert retry_reply.status == 200, retry_reply.raw
    assert served_at_cap, "the exact retry was only served after the turn settled and the cap was free"
    check_replay_of(retry_reply, first_reply)
    check_same_turn(surface, retry_reply, first_reply)
    assert runs(api, key) == 1
    assert len(executions(api.home)) == 1  # type: ignore[attr-defined]


# -- W-5.6: credential scope ---------------------------------------------------------------------------------


async def test_same_key_after_rotating_the_api_key_is_a_new_admission(
    make_api: Any, aiohttp_client: Any, auth: dict[str, str]
) -> None:
    """W-5.6, §1.3, §5.1: keys live in the credential scope; after rotating API_SERVER_KEY (same home, same
    store) the same key and body is a new admission: it executes again and is not Idempotency-Replayed."""
    api = await make_api()
    home: Path = api.home  # type: ignore[attr-defined]
    keys = {surface: new_key() for surface in SURFACES}
    originals = {}
    for surface, key in keys.items():
        originals[surface] = await send(api, auth, surface, f"hello {key}", stream=False, key=key)
        check_first(originals[surface])
    await api.close()  # shutdown: drain, close the store

    rotated = await serve_app(aiohttp_client, home, environ={"API_SERVER_KEY": ROTATED_KEY})
    new_auth = {"Authorization": f"Bearer {ROTATED_KEY}"}
    for surface, key in keys.items():
        again = await send(rotated, new_auth, surface, f"hello {key}", stream=False, key=key)
        check_first(again)
        assert again.run_id != originals[surface].run_id
        assert len(runs_of(home, key)) == 2
        replay = await send(rotated, new_auth, surface, f"hello {key}", stream=False, key=key)
        check_replay_of(replay, again)
        assert len(runs_of(home, key)) == 2


# -- W-5.8, W-5.11: client disconnect ------------------------------------------------------------------------


async def disconnect_mid_turn(
    api: TestClient,
    auth: dict[str, str],
    surface: str,
    text: str,
    *,
    stream: bool,
    key: str | None = None,
    **extra: Any,
) -> tuple[Turn, str | None]:
    """POST, wait until the turn runs, drop the connection; the Turn and (Responses streams) the response id."""
    registry = api.server.app[TURNS]
    headers = {**auth, **({"Idempotency-Key": key} if key else {})}
    response_id = None
    async with api.post(PATHS[surface], json=payload(surface, text, stream=stream, **extra), headers=headers) as resp:
        assert resp.status == 200
        turn = registry.get(resp.headers["X-Hermes-Run-Id"])
        assert turn is not None
        if stream:
            raw = await read_until(resp, RUNNING_MARKER[surface])
            if surface == "responses":
                response_id = complete_records(raw)[0].json()["response"]["id"]
        else:
            await wait_for_async(lambda: turn.journal.events, what="the agent's first event")
        resp.close()
    return turn, response_id


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("surface", SURFACES)
async def test_disconnect_without_key_cancels_the_turn(
    slow_api: TestClient, auth: dict[str, str], surface: str, stream: bool
) -> None:
    """W-5.8, §5.5 (on_disconnect auto): an unkeyed, non-background request whose client leaves is cancelled; a
    stored Response shows `cancelled`."""
    turn, response_id = await disconnect_mid_turn(slow_api, auth, surface, f"slow {new_key()}", stream=stream)
    assert await wait_settled(turn) is TurnStatus.CANCELLED
    if response_id is not None:
        status, stored = await get_response(slow_api, auth, response_id)
        assert status == 200 and stored["status"] == "cancelled"


@pytest.mark.slow  # waits out the 1 s scripted "slow" turn
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("surface", SURFACES)
async def test_disconnect_with_key_keeps_running_and_retry_replays(
    slow_api: TestClient, auth: dict[str, str], surface: str, stream: bool
) -> None:
    """W-5.8, §5.5: with an Idempotency-Key the turn keeps running after its client left, settles completed, and a
    keyed retry replays the completed answer (Idempotency-Replayed, the original run id); it ran once."""
    key = new_key()
    turn, response_id = await disconnect_mid_turn(slow_api, auth, surface, f"slow {key}", stream=stream, key=key)
    assert await wait_settled(turn) is TurnStatus.COMPLETED
    for retry_stream in (False, True):
        retry = await send(slow_api, auth, surface, f"slow {key}", stream=retry_stream, key=key)
        assert retry.status == 200 and retry.replayed
        assert retry.run_id == turn.run_id
        assert retry.answer_text(surface) == SLOW_ANSWER
    if response_id is not None:
        status, stored = await get_response(slow_api, auth, response_id)
        assert status == 200 and stored["status"] == "completed"
    assert runs(slow_api, key) == 1


@pytest.mark.slow  # waits out the 1 s scripted "slow" turn
async def test_background_response_survives_disconnect_and_keyed_retry_attaches_then_replays(
    slow_api: TestClient, auth: dict[str, str]
) -> None:
    """W-5.8, §5.3, §5.5, §4.9: an unkeyed background stream keeps running after a disconnect; a keyed background
    request answers at once, its retry while running attaches with the current snapshot at once
    (Idempotency-Replayed, same id), and after it settled a retry replays the completed object, equal to GET."""
    api = slow_api
    turn, response_id = await disconnect_mid_turn(
        api, auth, "responses", f"slow {new_key()}", stream=True, background=True
    )
    assert await wait_settled(turn) is TurnStatus.COMPLETED
    assert response_id is not None
    assert (await get_response(api, auth, response_id))[1]["status"] == "completed"

    key = new_key()
    first = await send(api, auth, "responses", f"slow {key}", stream=False, key=key, background=True)
    check_first(first)
    assert first.json()["status"] in ("queued", "in_progress")
    attached = await send(api, auth, "responses", f"slow {key}", stream=False, key=key, background=True)
    check_replay_of(attached, first)
    assert attached.json()["id"] == first.json()["id"]
    assert attached.json()["status"] in ("queued", "in_progress"), "attach while running: the current snapshot"
    live = api.server.app[TURNS].get(first.run_id or "")
    assert live is not None
    assert await wait_settled(live) is TurnStatus.COMPLETED
    replay = await send(api, auth, "responses", f"slow {key}", stream=False, key=key, background=True)
    check_replay_of(replay, first)
    status, stored = await get_response(api, auth, first.json()["id"])
    assert status == 200 and stored["status"] == "completed"
    assert replay.json() == stored
    assert runs(api, key) == 1


@pytest.mark.parametrize("surface", SURFACES)
async def test_on_disconnect_cancel_cancels_keyed_and_background_turns(
    make_slow_api: SlowFactory, auth: dict[str, str], surface: str
) -> None:
    """W-5.11, §5.5: with on_disconnect: cancel a keyed turn (and a background Response) is cancelled when its
    client leaves; a keyed retry replays the cancelled outcome."""
    api = await make_slow_api(config={"api_server": {"on_disconnect": "cancel"}})
    key = new_key()
    turn, _ = await disconnect_mid_turn(api, auth, surface, f"slow {key}", stream=True, key=key)
    assert await wait_settled(turn) is TurnStatus.CANCELLED
    retry = await send(api, auth, surface, f"slow {key}", stream=False, key=key)
    assert retry.status == 200 and retry.replayed and retry.run_id == turn.run_id
    if surface == "chat":
        assert retry.json()["choices"][0]["finish_reason"] == "cancelled"
    else:
        assert retry.json()["status"] == "cancelled"
        background, response_id = await disconnect_mid_turn(
            api, auth, surface, f"slow {new_key()}", stream=True, background=True
        )
        assert await wait_settled(background) is TurnStatus.CANCELLED
        assert (await get_response(api, auth, response_id or ""))[1]["status"] == "cancelled"
    assert runs(api, key) == 1


@pytest.mark.slow  # waits out the 1 s scripted "slow" turn
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("surface", SURFACES)
async def test_on_disconnect_continue_lets_an_unkeyed_turn_complete(
    make_slow_api: SlowFactory, auth: dict[str, str], surface: str, stream: bool
) -> None:
    """W-5.11, §5.5: with on_disconnect: continue a disconnect never cancels: an unkeyed turn settles completed."""
    api = await make_slow_api(config={"api_server": {"on_disconnect": "continue"}})
    turn, response_id = await disconnect_mid_turn(api, auth, surface, f"slow {new_key()}", stream=stream)
    assert await wait_settled(turn) is TurnStatus.COMPLETED
    if response_id is not None:
        assert (await get_response(api, auth, response_id))[1]["status"] == "completed"


# -- W-5.9: retention, tombstones, DELETE --------------------------------------------------------------------


def advance_clock(api: TestClient, seconds: float) -> None:
    """Let the idempotency decisions of `api` see the time `seconds` from now (their clock is injectable): expiry tests
    need no sleeps."""
    api.server.app[IDEMPOTENCY].clock = lambda: time.time() + seconds


async def test_retry_after_retention_is_admission_expired_and_key_stays_consumed(
    make_api: Any, auth: dict[str, str]
) -> None:
    """W-5.9, §5.4: once the answer's retention (1 s) has passed, an exact retry gets 409 admission_expired — on a
    chat stream the §3.5 admission_expired chunk — and a different request under the key 409 admission_conflict
    (chat stream: the conflict chunk); the tombstone keeps the key consumed, nothing executes."""
    api = await make_api(config={"api_server": {"idempotency": {"retention_seconds": 1, "tombstone_seconds": 3600}}})
    keys = {surface: new_key() for surface in SURFACES}
    for surface, key in keys.items():
        check_first(await send(api, auth, surface, f"hello {key}", stream=False, key=key))
    advance_clock(api, 1.3)
    for surface, key in keys.items():
        for stream in (False, True):
            exact = await send(api, auth, surface, f"hello {key}", stream=stream, key=key)
            check_refused(surface, stream, exact, "admission_expired")
            other = await send(api, auth, surface, f"hello {key} again", stream=stream, key=key)
            check_refused(surface, stream, other, "admission_conflict")
        assert runs(api, key) == 1


async def test_key_is_free_again_after_the_tombstone_expires(make_api: Any, auth: dict[str, str]) -> None:
    """W-5.9, §5.4: only when the tombstone (here 1 s after the 1 s retention) has expired is the key free again:
    the same request executes anew, unreplayed, with a new run id."""
    api = await make_api(config={"api_server": {"idempotency": {"retention_seconds": 1, "tombstone_seconds": 1}}})
    keys = {surface: new_key() for surface in SURFACES}
    originals = {}
    for surface, key in keys.items():
        originals[surface] = await send(api, auth, surface, f"hello {key}", stream=False, key=key)
        check_first(originals[surface])
    advance_clock(api, 2.4)
    for surface, key in keys.items():
        again = await send(api, auth, surface, f"hello {key}", stream=False, key=key)
        check_first(again)
        assert again.run_id != originals[surface].run_id
        assert runs(api, key) == 2


async def test_retry_after_delete_is_admission_expired(api: TestClient, auth: dict[str, str]) -> None:
    """W-5.9, §4.8, §5.4: DELETE /v1/responses/{id} removes the admission's answer and leaves its tombstone: an
    exact keyed retry (JSON or stream) gets 409 admission_expired, a changed one 409 admission_conflict."""
    key = new_key()
    first = await send(api, auth, "responses", f"hello {key}", stream=False, key=key)
    check_first(first)
    response_id = first.json()["id"]
    async with api.delete(f"{RESPONSES}/{response_id}", headers=auth) as resp:
        assert resp.status == 200
        assert await resp.json() == {"id": response_id, "object": "response", "deleted": True}
    for stream in (False, True):
        assert_error_envelope(
            await send(api, auth, "responses", f"hello {key}", stream=stream, key=key), 409, **EXPIRED["error"]
        )
        assert_error_envelope(
            await send(api, auth, "responses", f"hello {key} changed", stream=stream, key=key), 409, **CONFLICT["error"]
        )
    assert runs(api, key) == 1


async def test_store_false_keyed_response_replays_though_get_is_404(api: TestClient, auth: dict[str, str]) -> None:
    """§5.4: the admission references the turn and its journal, so a keyed store:false Response replays (JSON and
    stream) although GET says 404."""
    key = new_key()
    first = await send(api, auth, "responses", f"hello {key}", stream=False, key=key, store=False)
    check_first(first)
    assert (await get_response(api, auth, first.json()["id"]))[0] == 404
    replay = await send(api, auth, "responses", f"hello {key}", stream=False, key=key, store=False)
    check_replay_of(replay, first)
    assert replay.json() == first.json()
    streamed = await send(api, auth, "responses", f"hello {key}", stream=True, key=key, store=False)
    check_replay_of(streamed, first)
    check_same_turn("responses", first, streamed)
    assert runs(api, key) == 1


# -- W-5.10: store failures ----------------------------------------------------------------------------------


async def test_store_failure_while_admitting_fails_closed(api: TestClient, auth: dict[str, str]) -> None:
    """W-5.10, §5.4, §3.5: when the durable store fails while admitting a keyed request nothing executes: keyed
    chat JSON and Responses (JSON and stream) get 503 storage_unavailable with Retry-After: 1; a keyed chat
    stream gets 200 ending in the storage_unavailable chunk (type server_error)."""
    await api.server.app[STORE].close()
    key = new_key()
    for surface, stream in (("chat", False), ("responses", False), ("responses", True)):
        reply = await send(api, auth, surface, f"hello {key}", stream=stream, key=key)
        assert_error_envelope(reply, 503, "storage_unavailable", type="server_error", param=None)
        assert reply.headers["Retry-After"] == "1"
    streamed = await send(api, auth, "chat", f"hello {key}", stream=True, key=key)
    check_refusal_stream(streamed, "storage_unavailable")
    if streamed.run_id is not None:  # §3.1: after storage_unavailable the header names no run
        assert api.server.app[TURNS].get(streamed.run_id) is None
    await asyncio.sleep(0.2)
    assert executions(api.home) == []  # type: ignore[attr-defined]


async def test_store_failure_on_any_route_is_503_storage_unavailable(api: TestClient, auth: dict[str, str]) -> None:
    """Issue 15: a failing store (a database restart) on a route that reads it is 503 storage_unavailable with
    Retry-After: 1, never a 500: the client retries when the database answers again."""
    await api.server.app[STORE].close()
    for path in (f"{RESPONSES}/resp_missing", "/api/sessions", "/api/sessions/s1/messages"):
        async with api.get(path, headers=auth) as resp:
            reply = Reply(resp.status, resp.headers, await resp.read())
        assert_error_envelope(reply, 503, "storage_unavailable", type="server_error", param=None)
        assert reply.headers["Retry-After"] == "1"


async def test_store_that_cannot_be_opened_falls_back_to_memory(
    aiohttp_client: Any, tmp_path: Path, auth: dict[str, str]
) -> None:
    """W-5.10, §5.4, §8.3: a store that cannot be opened at startup leaves the server running in memory:
    capabilities report idempotency.durable, runs_idempotency.durable and responses_durable false, and keyed
    requests still admit, replay and conflict."""
    home = write_home(tmp_path / "home")
    (home / "hermes_api.sqlite3").mkdir()  # the store path is a directory: it cannot be opened
    api = await serve_app(aiohttp_client, home)
    async with api.get("/v1/capabilities", headers=auth) as resp:
        assert resp.status == 200
        features = (await resp.json())["features"]
    assert features["idempotency"]["supported"] is True
    assert features["idempotency"]["durable"] is False
    assert features["runs_idempotency"]["durable"] is False
    assert features["responses_durable"] is False
    assert features["store"] == {"kind": "memory", "durable": False}
    for surface in SURFACES:
        key = new_key()
        first = await send(api, auth, surface, f"hello {key}", stream=False, key=key)
        check_first(first)
        assert first.answer_text(surface) == DEFAULT_ANSWER
        replay = await send(api, auth, surface, f"hello {key}", stream=False, key=key)
        check_replay_of(replay, first)
        assert replay.json() == first.json()
        check_refused(
            surface,
            False,
            await send(api, auth, surface, f"hello {key} changed", stream=False, key=key),
            "admission_conflict",
        )
        assert len(runs_of(home, key)) == 1


# -- §8.3: capabilities --------------------------------------------------------------------------------------


@pytest.mark.parametrize("retention", [None, 1234])
async def test_capabilities_describe_idempotency(make_api: Any, auth: dict[str, str], retention: int | None) -> None:
    """§8.3, W-8.3: features.idempotency is supported and durable with the configured retention, the header name,
    and the admitting endpoints this server serves."""
    config = {"api_server": {"idempotency": {"retention_seconds": retention}}} if retention else None
    api = await make_api(config=config)
    async with api.get("/v1/capabilities", headers=auth) as resp:
        assert resp.status == 200
        document = await resp.json()
    features = document["features"]
    posts = {e["path"] for e in document["endpoints"].values() if e["method"] == "POST"}
    served = [path for path in ADMITTING_PATHS if path in posts]
    assert served[:2] == ["/v1/chat/completions", "/v1/responses"]
    assert features["idempotency"] == {
        "supported": True,
        "durable": True,
        "retention_seconds": retention or 86400,
        "header": "Idempotency-Key",
        "endpoints": served,
    }
    assert features["runs_idempotency"]["retention_seconds"] == (retention or 86400)
    assert features["runs_idempotency"]["durable"] is ("/v1/runs" in posts)
    assert features["responses_durable"] is True
