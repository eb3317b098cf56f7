"""What several route test modules share: the session requests (tests/routes/test_sessions.py,
test_session_fork.py), a run started and followed to its end (test_runs.py, test_run_approval.py) and a
chat completion, streamed or not (test_chat_stream.py, test_chat_continuity.py, test_chat_turn_taking.py) — each
checking what every reply of its kind must hold.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp.test_utils import TestClient
from multidict import CIMultiDictProxy

from tests.helpers import (
    CHAT,
    JSON_TYPE,
    PROGRESS,
    RUN_ID,
    RUN_TERMINALS,
    RUNS,
    Reply,
    chat_body,
    fetch,
    wait_for_async,
)

SESSIONS = "/api/sessions"
APPROVAL_EVENTS = ("hermes.approval.request", "hermes.approval.responded")  # WIRE.md §14.2
SESSION_KEYS = {
    "id",
    "source",
    "title",
    "model",
    "started_at",
    "ended_at",
    "last_active",
    "message_count",
    "tool_call_count",
    "input_tokens",
    "output_tokens",
    "parent_session_id",
    "pinned",
    "archived",
    "preview",
}
MESSAGE_KEYS = {
    "id",
    "role",
    "content",
    "reasoning",
    "tool_calls",
    "tool_call_id",
    "tool_name",
    "timestamp",
    "compacted",
}
SESSION_NOT_FOUND = {
    "error": {
        "message": "No session with that id",
        "type": "not_found_error",
        "param": None,
        "code": "session_not_found",
    }
}
RUN_KEYS = {
    "object",
    "run_id",
    "status",
    "created_at",
    "updated_at",
    "session_id",
    "model",
    "last_event",
    "output",
    "usage",
    "error",
    "turn_exit_reason",
}


# -- sessions ---------------------------------------------------------------------------------------------------------


async def call(
    api: TestClient,
    auth: dict[str, str],
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    reply = await fetch(api, method, path, json=body, headers={**auth, **(headers or {})})
    assert reply.headers["Content-Type"] == JSON_TYPE, reply.headers
    return reply.status, reply.json()


async def get_session(api: TestClient, auth: dict[str, str], session_id: str) -> dict[str, Any]:
    status, body = await call(api, auth, "GET", f"{SESSIONS}/{session_id}")
    assert status == 200, body
    assert body["object"] == "hermes.session" and set(body) == {"object", "session"}
    assert set(body["session"]) == SESSION_KEYS
    return body["session"]  # type: ignore[no-any-return]


async def create_session(api: TestClient, auth: dict[str, str], **body: Any) -> dict[str, Any]:
    status, reply = await call(api, auth, "POST", SESSIONS, body)
    assert status == 201, reply
    assert reply["object"] == "hermes.session" and set(reply["session"]) == SESSION_KEYS
    return reply["session"]  # type: ignore[no-any-return]


async def list_sessions(api: TestClient, auth: dict[str, str], query: str = "") -> dict[str, Any]:
    status, body = await call(api, auth, "GET", f"{SESSIONS}{query}")
    assert status == 200, body
    assert set(body) == {"object", "data", "limit", "offset", "has_more"} and body["object"] == "list"
    return body


async def messages(api: TestClient, auth: dict[str, str], session_id: str, query: str = "") -> dict[str, Any]:
    status, body = await call(api, auth, "GET", f"{SESSIONS}/{session_id}/messages{query}")
    assert status == 200, body
    assert set(body) == {"object", "session_id", "data", "pagination"} and body["object"] == "list"
    for row in body["data"]:
        assert set(row) == MESSAGE_KEYS, row
    assert body["pagination"]["returned"] == len(body["data"])
    return body


async def chat(
    api: TestClient,
    auth: dict[str, str],
    session_id: str,
    message: Any,
    headers: dict[str, str] | None = None,
    **body: Any,
) -> tuple[CIMultiDictProxy[str], dict[str, Any]]:
    async with api.post(
        f"{SESSIONS}/{session_id}/chat", json={"message": message, **body}, headers={**auth, **(headers or {})}
    ) as resp:
        assert resp.status == 200, await resp.text()
        assert resp.headers["Content-Type"] == "application/json; charset=utf-8"
        reply = json.loads(await asyncio.wait_for(resp.text(), 30))
        return resp.headers, reply


# -- runs ------------------------------------------------------------------------------------------------------------


class RunEvents(Reply):
    """A complete `/v1/runs/{id}/events` stream."""

    @property
    def payloads(self) -> list[dict[str, Any]]:
        return [r.json() for r in self.records]

    @property
    def names(self) -> list[str]:
        return [p["event"] for p in self.payloads]

    @property
    def ids(self) -> list[int]:
        return [int(r.id) for r in self.records]  # type: ignore[arg-type]

    @property
    def terminal(self) -> dict[str, Any]:
        return self.payloads[-1]

    def view(self) -> list[tuple[str | None, str]]:
        return [(r.id, r.data) for r in self.records]


def check_run_events(stream: RunEvents, run_id: str, *, first_id: int = 1) -> None:
    """W-6.3, §2.2, §2.3: id: lines counting up, no event: lines, {event, run_id, timestamp} payloads, exactly one
    terminal run.* event and it is the last record (the server closed the stream right after it)."""
    assert stream.headers["Content-Type"].startswith("text/event-stream")
    assert stream.headers["Cache-Control"] == "no-cache"
    assert b"retry:" not in stream.raw and b"event:" not in stream.raw
    assert stream.records, stream.raw
    assert all(r.event is None for r in stream.records)
    assert stream.ids == list(range(first_id, first_id + len(stream.records)))
    for payload in stream.payloads:
        assert payload["run_id"] == run_id
        assert isinstance(payload["event"], str)
        assert isinstance(payload["timestamp"], float)
    assert sum(1 for name in stream.names if name in RUN_TERMINALS) == 1
    assert stream.names[-1] in RUN_TERMINALS
    assert stream.raw.endswith(b"\n\n")


async def post_run(
    api: TestClient, auth: dict[str, str], text: Any, *, headers: dict[str, str] | None = None, **body: Any
) -> tuple[int, CIMultiDictProxy[str], dict[str, Any]]:
    payload = {"input": text, **body} if text is not None else body
    async with api.post(RUNS, json=payload, headers={**auth, **(headers or {})}) as resp:
        return resp.status, resp.headers, await resp.json()


async def start_run(api: TestClient, auth: dict[str, str], text: Any, **kwargs: Any) -> str:
    status, _, body = await post_run(api, auth, text, **kwargs)
    assert status == 202, body
    assert body == {"run_id": body["run_id"], "status": "started"}
    return body["run_id"]  # type: ignore[no-any-return]


async def read_events(
    api: TestClient, auth: dict[str, str], run_id: str, last_event_id: str | None = None, timeout: float = 30.0
) -> RunEvents:
    headers = dict(auth)
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    async with api.get(f"{RUNS}/{run_id}/events", headers=headers) as resp:
        assert resp.status == 200, await resp.text()
        return RunEvents(resp.status, resp.headers, await asyncio.wait_for(resp.read(), timeout))


async def get_run(api: TestClient, auth: dict[str, str], run_id: str) -> dict[str, Any]:
    async with api.get(f"{RUNS}/{run_id}", headers=auth) as resp:
        assert resp.status == 200, await resp.text()
        assert resp.headers["Content-Type"] == "application/json; charset=utf-8"
        body = await resp.json()
    # `required_action` is there exactly while the run is suspended (WIRE.md §15.1)
    assert set(body) == RUN_KEYS | ({"required_action"} if body["status"] == "requires_action" else set()), body
    return body  # type: ignore[no-any-return]


async def suspended(api: TestClient, auth: dict[str, str], run_id: str) -> dict[str, Any]:
    """The run once it reports `requires_action` (its GET object, WIRE.md §15.1)."""
    return await wait_for_async(  # type: ignore[no-any-return]
        lambda: get_run(api, auth, run_id),
        until=lambda run: run["status"] == "requires_action",
        what="the run to suspend",
    )


async def tool_call_waiting(api: TestClient, auth: dict[str, str], run_id: str) -> dict[str, Any]:
    """The client tool call a run waits for (its `required_action`, WIRE.md §15.4), checked for its shape."""
    action: dict[str, Any] = (await suspended(api, auth, run_id))["required_action"]
    assert set(action) == {"type", "call_id", "name", "arguments"} and action["type"] == "client_tool", action
    assert action["call_id"].startswith("call_") and isinstance(action["arguments"], str)
    return action


async def post_tool_outputs(
    api: TestClient, auth: dict[str, str], run_id: str, outputs: list[tuple[str, Any]], key: str | None = None
) -> Reply:
    """POST /v1/runs/{run_id}/tool_outputs with (call_id, output) pairs, keyed when `key` is given."""
    headers = {**auth, "Idempotency-Key": key} if key is not None else auth
    body = {"outputs": [{"call_id": call_id, "output": output} for call_id, output in outputs]}
    return await fetch(api, "POST", f"{RUNS}/{run_id}/tool_outputs", json=body, headers=headers)


def terminal_results(payloads: list[dict[str, Any]]) -> list[bool]:
    """The `error` flags of the run's terminal tool completions: False is a command that ran."""
    return [p["error"] for p in payloads if p["event"] == "tool.completed" and p["tool"] == "terminal"]


async def settled(api: TestClient, auth: dict[str, str], run_id: str) -> dict[str, Any]:
    """Follow the run's events to its terminal event, then GET it."""
    events = await read_events(api, auth, run_id)
    check_run_events(events, run_id)
    return await get_run(api, auth, run_id)


# -- chat completions -------------------------------------------------------------------------------------------------


async def json_chat(
    api: TestClient,
    auth: dict[str, str],
    text: str | None = None,
    *,
    headers: dict[str, str] | None = None,
    **body: Any,
) -> tuple[CIMultiDictProxy[str], dict[str, Any]]:
    async with api.post(CHAT, json=chat_body(text, stream=False, **body), headers={**auth, **(headers or {})}) as resp:
        assert resp.status == 200, await resp.text()
        assert resp.headers["Content-Type"] == "application/json; charset=utf-8"
        reply = json.loads(await asyncio.wait_for(resp.text(), 30))
        response_headers = resp.headers
    assert RUN_ID.match(response_headers["X-Hermes-Run-Id"])
    return response_headers, reply


class ChatStream(Reply):
    """A chat completion stream: its chunks, the progress records, the finish chunk and the concatenated text."""

    @property
    def plain(self) -> list[dict[str, Any]]:
        """Data chunks without an `event:` name (role, reasoning, text, finish)."""
        return [r.json() for r in self.records if r.event is None and r.data != "[DONE]"]

    @property
    def progress(self) -> list[dict[str, Any]]:
        return [r.json() for r in self.records if r.event == PROGRESS]

    @property
    def finish(self) -> dict[str, Any]:
        return self.chunks[-1]

    @property
    def reasoning(self) -> str:
        return "".join(c["choices"][0]["delta"].get("reasoning_content", "") for c in self.plain)

    @property
    def content(self) -> str:
        return "".join(c["choices"][0]["delta"].get("content", "") for c in self.plain)


def check_stream_framing(result: ChatStream) -> None:
    """Rules every chat stream obeys (W-2.2, W-2.5, W-3.4 tail, W-3.6 event names)."""
    assert result.raw.endswith(b"data: [DONE]\n\n"), result.raw[-200:]
    assert result.records[-1].data == "[DONE]"
    assert sum(1 for r in result.records if r.data == "[DONE]") == 1
    assert all(r.id is None for r in result.records), "chat streams carry no id: lines"
    assert b"\nid:" not in result.raw and not result.raw.startswith(b"id:")
    assert b"retry:" not in result.raw
    assert {r.event for r in result.records} <= {None, PROGRESS, *APPROVAL_EVENTS}
    finishes = [c for c in result.chunks if c["choices"] and c["choices"][0]["finish_reason"] is not None]
    assert len(finishes) == 1
    assert result.chunks[-1]["choices"][0]["finish_reason"] is not None, "the finish chunk is the last data chunk"
    assert RUN_ID.match(result.headers["X-Hermes-Run-Id"])


async def stream_chat(
    api: TestClient,
    auth: dict[str, str],
    text: str | None = None,
    *,
    headers: dict[str, str] | None = None,
    **body: Any,
) -> ChatStream:
    async with api.post(CHAT, json=chat_body(text, stream=True, **body), headers={**auth, **(headers or {})}) as resp:
        assert resp.status == 200, await resp.text()
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        result = ChatStream(resp.status, resp.headers, await asyncio.wait_for(resp.read(), 30))
    check_stream_framing(result)
    return result
