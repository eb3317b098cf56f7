"""Sessions: list, get, create, update, delete, messages and session chat (JSON and stream) (WIRE.md §7; W-7.x).

Real app in-process through the plugin's startup hook, real middlewares, SQLite store and the scripted runtime
(tests/scripts/chat.yaml; tests/scripts/sessions.yaml for context compaction); nothing on the server side is mocked.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient

from tests.helpers import (
    DEFAULT_ANSWER,
    NEW_SESSION,
    PNG,
    RUN_ID,
    RUN_TERMINALS,
    RUNS,
    USE_TOOL_ANSWER,
    USE_TOOL_REASONING,
    Reply,
    assert_error_envelope,
    complete_records,
    execution_for,
    fetch,
    history_texts,
    read_until,
)
from tests.live import executions

from .support import (
    SESSION_KEYS,
    SESSION_NOT_FOUND,
    SESSIONS,
    call,
    chat,
    create_session,
    get_session,
    list_sessions,
    messages,
)

DEFAULT_REASONING = "Thinking it through."


# -- helpers ------------------------------------------------------------------------------------------------------


class SessionStream(Reply):
    """A session chat stream: named events carrying seq, session and run ids."""

    @property
    def names(self) -> list[str]:
        return [r.event or "" for r in self.records]

    @property
    def payloads(self) -> list[dict[str, Any]]:
        return [r.json() for r in self.records]

    def named(self, name: str) -> list[dict[str, Any]]:
        return [r.json() for r in self.records if r.event == name]

    def view(self) -> list[tuple[str | None, str | None, dict[str, Any]]]:
        return [(r.id, r.event, r.json()) for r in self.records]


def check_session_stream(stream: SessionStream, session_id: str, *, first_seq: int = 1) -> None:
    """W-7.3, §7.4, §2.2: named events with `id:` = seq counting up; every payload carries event, session_id,
    run_id, seq and ts; exactly one terminal run.* event, followed only by `done`, which is last."""
    assert stream.headers["Content-Type"].startswith("text/event-stream")
    assert b"retry:" not in stream.raw
    run_id = stream.headers["X-Hermes-Run-Id"]
    assert RUN_ID.match(run_id)
    assert stream.headers["X-Hermes-Session-Id"] == session_id
    assert stream.records, stream.raw
    for offset, record in enumerate(stream.records):
        payload = record.json()
        assert record.event is not None and payload["event"] == record.event
        assert record.id == str(payload["seq"]) == str(first_seq + offset)
        assert payload["session_id"] == session_id and payload["run_id"] == run_id
        assert isinstance(payload["ts"], float)
    names = stream.names
    assert sum(1 for n in names if n in RUN_TERMINALS) == 1
    assert names[-1] == "done" and names[-2] in RUN_TERMINALS
    assert names.count("done") == 1


async def read_session_stream(resp: ClientResponse) -> SessionStream:
    assert resp.status == 200, await resp.text()
    return SessionStream(resp.status, resp.headers, await asyncio.wait_for(resp.read(), 30))


async def stream_chat(
    api: TestClient,
    auth: dict[str, str],
    session_id: str,
    message: Any,
    headers: dict[str, str] | None = None,
    **body: Any,
) -> SessionStream:
    async with api.post(
        f"{SESSIONS}/{session_id}/chat/stream", json={"message": message, **body}, headers={**auth, **(headers or {})}
    ) as resp:
        return await read_session_stream(resp)


async def run_of(api: TestClient, auth: dict[str, str], run_id: str) -> tuple[dict[str, Any], str]:
    """The settled run behind a turn: GET /v1/runs/{id} and the terminal event of its /events stream."""
    async with api.get(f"{RUNS}/{run_id}/events", headers=auth) as resp:
        assert resp.status == 200
        stream = Reply(resp.status, resp.headers, await asyncio.wait_for(resp.read(), 10))
    status, run = await call(api, auth, "GET", f"{RUNS}/{run_id}")
    assert status == 200, run
    return run, stream.events[-1]["event"]


async def stop_run(api: TestClient, auth: dict[str, str], run_id: str) -> None:
    status, body = await call(api, auth, "POST", f"{RUNS}/{run_id}/stop")
    assert (status, body) == (200, {"run_id": run_id, "status": "stopping"})


def rows(body: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(m["role"], m["content"]) for m in body["data"]]


# -- W-7.1 (§7.1): create ------------------------------------------------------------------------------------------


async def test_create_session_generates_an_api_id(api: TestClient, auth: dict[str, str]) -> None:
    """§7.1: POST without an id → 201 with a generated `api_<unix>_<8 hex>` id and an empty session object."""
    before = time.time()
    session = await create_session(api, auth)
    match = NEW_SESSION.match(session["id"])
    assert match and abs(int(match.group(1)) - before) <= 2
    assert session == {
        "id": session["id"],
        "source": "api_server",
        "title": None,
        "model": None,
        "started_at": session["started_at"],
        "ended_at": None,
        "last_active": session["last_active"],
        "message_count": 0,
        "tool_call_count": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "parent_session_id": None,
        "pinned": False,
        "archived": False,
        "preview": None,
    }
    assert isinstance(session["started_at"], float) and isinstance(session["last_active"], float)
    assert await get_session(api, auth, session["id"]) == session
    assert (await create_session(api, auth))["id"] != session["id"]


async def test_create_session_with_id_and_title_then_existing_id_is_409(api: TestClient, auth: dict[str, str]) -> None:
    """§7.1, §1.7: a given id and title are kept; POSTing the same id again → 409 session_exists (conflict_error)."""
    session = await create_session(api, auth, id="team-build", title="Team build")
    assert (session["id"], session["title"]) == ("team-build", "Team build")
    refused = await fetch(api, "POST", SESSIONS, json={"id": "team-build"}, headers=auth)
    error = assert_error_envelope(refused, 409, "session_exists")
    assert error["type"] == "conflict_error"
    assert (await get_session(api, auth, "team-build"))["title"] == "Team build"


@pytest.mark.parametrize("bad", ["a/b", "a\\b", ".", "..", " lead", "trail ", "x" * 257, ""])
async def test_create_session_with_an_invalid_id_is_400(api: TestClient, auth: dict[str, str], bad: str) -> None:
    """§7.1, §1.6: the id follows the X-Hermes-Session-Id rules, else 400 invalid_session_id."""
    assert_error_envelope(await fetch(api, "POST", SESSIONS, json={"id": bad}, headers=auth), 400, "invalid_session_id")
    assert (await list_sessions(api, auth))["data"] == []


async def test_create_session_rejects_an_overlong_title(api: TestClient, auth: dict[str, str]) -> None:
    """§7.1: `title` is a string of at most 200 characters."""
    refused = await fetch(api, "POST", SESSIONS, json={"title": "t" * 201}, headers=auth)
    assert_error_envelope(refused, 400, "invalid_parameter")
    assert (await create_session(api, auth, title="t" * 200))["title"] == "t" * 200


# -- list and get ---------------------------------------------------------------------------------------------------


async def test_list_sessions_most_recent_first_with_paging(api: TestClient, auth: dict[str, str]) -> None:
    """§7.1: most recently active first; `limit`/`offset` page it with `has_more`; a turn makes a session the most
    recent."""
    for name in ("first", "second", "third"):
        await create_session(api, auth, id=name)
    page = await list_sessions(api, auth)
    assert [s["id"] for s in page["data"]] == ["third", "second", "first"]
    assert (page["limit"], page["offset"], page["has_more"]) == (50, 0, False)
    await chat(api, auth, "first", "hello")
    assert [s["id"] for s in (await list_sessions(api, auth))["data"]] == ["first", "third", "second"]
    head = await list_sessions(api, auth, "?limit=2")
    assert [s["id"] for s in head["data"]] == ["first", "third"]
    assert (head["limit"], head["offset"], head["has_more"]) == (2, 0, True)
    tail = await list_sessions(api, auth, "?limit=2&offset=2")
    assert [s["id"] for s in tail["data"]] == ["second"]
    assert (tail["limit"], tail["offset"], tail["has_more"]) == (2, 2, False)
    assert (await list_sessions(api, auth, "?offset=5"))["data"] == []
    for session in page["data"]:
        assert set(session) == SESSION_KEYS


async def test_list_sessions_filters_by_source(api: TestClient, auth: dict[str, str]) -> None:
    """§7.1: `source=api_server` lists this platform's sessions; another source lists none of them."""
    await create_session(api, auth, id="mine")
    assert [s["id"] for s in (await list_sessions(api, auth, "?source=api_server"))["data"]] == ["mine"]
    assert (await list_sessions(api, auth, "?source=cli"))["data"] == []


async def test_list_sessions_accepts_include_children(api: TestClient, auth: dict[str, str]) -> None:
    """§14 (upstream's query): `include_children` is a boolean; this store has no hidden children to add."""
    await create_session(api, auth, id="root")
    listed = await list_sessions(api, auth, "?include_children=true")
    assert [s["id"] for s in listed["data"]] == ["root"]
    refused = await fetch(api, "GET", f"{SESSIONS}?include_children=perhaps", headers=auth)
    assert assert_error_envelope(refused, 400, "invalid_parameter")["param"] == "include_children"


@pytest.mark.parametrize("query", ["?limit=0", "?limit=201", "?limit=x", "?offset=-1"])
async def test_list_sessions_rejects_bad_paging(api: TestClient, auth: dict[str, str], query: str) -> None:
    """§7.1: `limit` is 1–200 and `offset` ≥ 0, else 400 invalid_parameter."""
    assert_error_envelope(await fetch(api, "GET", f"{SESSIONS}{query}", headers=auth), 400, "invalid_parameter")


async def test_get_session_reports_counters_after_a_turn(api: TestClient, auth: dict[str, str]) -> None:
    """§7.1: after a tool turn the session counts its messages and tool results, sums tokens, shows the first user
    message as preview and the request's model."""
    await chat(api, auth, "stats", "use tool", model="my-model")
    session = await get_session(api, auth, "stats")
    assert session["id"] == "stats" and session["source"] == "api_server"
    assert (session["message_count"], session["tool_call_count"]) == (4, 1)
    assert (session["input_tokens"], session["output_tokens"]) == (42, 17)
    assert session["preview"] == "use tool"
    assert session["model"] == "my-model"
    assert session["started_at"] <= session["last_active"]
    assert (session["pinned"], session["archived"], session["ended_at"], session["parent_session_id"]) == (
        False,
        False,
        None,
        None,
    )


async def test_preview_is_the_first_user_message_cut_to_200(api: TestClient, auth: dict[str, str]) -> None:
    """§7.1: `preview` is the first user message, at most 200 characters."""
    text = "hello " + "x" * 300
    await chat(api, auth, "long-preview", text)
    await chat(api, auth, "long-preview", "second message")
    assert (await get_session(api, auth, "long-preview"))["preview"] == text[:200]


async def test_unknown_session_is_404_on_every_session_route(api: TestClient, auth: dict[str, str]) -> None:
    """§7.1, §7.2, §1.7: an unknown id → 404 session_not_found with the exact envelope."""
    for method, path, body in (
        ("GET", f"{SESSIONS}/nope", None),
        ("PATCH", f"{SESSIONS}/nope", {"title": "x"}),
        ("DELETE", f"{SESSIONS}/nope", None),
        ("GET", f"{SESSIONS}/nope/messages", None),
    ):
        status, reply = await call(api, auth, method, path, body)
        assert (status, reply) == (404, SESSION_NOT_FOUND), (method, path)


async def test_session_routes_need_the_key(api: TestClient) -> None:
    """W-1.3: every session route answers 401 without the Bearer key."""
    for method, path in (
        ("GET", SESSIONS),
        ("POST", SESSIONS),
        ("GET", f"{SESSIONS}/x"),
        ("PATCH", f"{SESSIONS}/x"),
        ("DELETE", f"{SESSIONS}/x"),
        ("GET", f"{SESSIONS}/x/messages"),
        ("POST", f"{SESSIONS}/x/chat"),
        ("POST", f"{SESSIONS}/x/chat/stream"),
    ):
        async with api.request(method, path, json={"message": "hi"}) as resp:
            assert resp.status == 401, (method, path)
            assert (await resp.json())["error"]["code"] == "gateway_auth_failed"
    assert executions(api.home) == []  # type: ignore[attr-defined]


# -- W-7.6: PATCH ----------------------------------------------------------------------------------------------------


async def test_patch_sets_title_pinned_and_archived(api: TestClient, auth: dict[str, str]) -> None:
    """W-7.6, §7.1: PATCH sets title, pinned and archived and returns the session object with them; fields not sent
    keep their values."""
    await create_session(api, auth, id="patch-me", title="Old")
    status, body = await call(
        api, auth, "PATCH", f"{SESSIONS}/patch-me", {"title": "Renamed", "pinned": True, "archived": True}
    )
    assert status == 200 and body["object"] == "hermes.session"
    session = body["session"]
    assert (session["id"], session["title"], session["pinned"], session["archived"]) == (
        "patch-me",
        "Renamed",
        True,
        True,
    )
    assert await get_session(api, auth, "patch-me") == session
    status, body = await call(api, auth, "PATCH", f"{SESSIONS}/patch-me", {"pinned": False})
    assert status == 200
    assert (body["session"]["title"], body["session"]["pinned"], body["session"]["archived"]) == (
        "Renamed",
        False,
        True,
    )


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"message_count": 3}, "message_count"),
        ({"id": "other"}, "id"),
        ({"title": "ok", "source": "cli"}, "source"),
        ({"title": 5}, "title"),
        ({"title": "t" * 201}, "title"),
        ({"pinned": "maybe"}, "pinned"),
        ({"archived": 2}, "archived"),
        ({"end_reason": 1}, "end_reason"),
        ({"end_reason": "r" * 65}, "end_reason"),
    ],
    ids=[
        "counter",
        "id",
        "extra-key",
        "title-type",
        "title-length",
        "pinned-type",
        "archived-type",
        "end-reason-type",
        "end-reason-length",
    ],
)
async def test_patch_rejects_other_keys_and_bad_values(
    api: TestClient, auth: dict[str, str], body: dict[str, Any], param: str
) -> None:
    """W-7.6, §7.1: any key other than title/pinned/archived, or a bad value → 400 invalid_parameter naming it; the
    session is unchanged."""
    before = await create_session(api, auth, id="patch-strict", title="Kept")
    refused = await fetch(api, "PATCH", f"{SESSIONS}/patch-strict", json=body, headers=auth)
    error = assert_error_envelope(refused, 400, "invalid_parameter")
    assert error["param"] == param
    assert await get_session(api, auth, "patch-strict") == before


async def test_patch_end_reason_ends_the_session(api: TestClient, auth: dict[str, str]) -> None:
    """§14 (upstream's PATCH field): `end_reason` sets `ended_at`; an empty one changes nothing."""
    await create_session(api, auth, id="patch-end")
    status, body = await call(api, auth, "PATCH", f"{SESSIONS}/patch-end", {"end_reason": ""})
    assert status == 200 and body["session"]["ended_at"] is None
    status, body = await call(api, auth, "PATCH", f"{SESSIONS}/patch-end", {"end_reason": "user_exit"})
    assert status == 200 and isinstance(body["session"]["ended_at"], float)
    assert (await get_session(api, auth, "patch-end"))["ended_at"] == body["session"]["ended_at"]


# -- W-7.4: DELETE ---------------------------------------------------------------------------------------------------


async def test_delete_session_then_it_is_gone(api: TestClient, auth: dict[str, str]) -> None:
    """W-7.4, §7.1: DELETE → 200 {"object":"hermes.session.deleted","id","deleted":true}; afterwards GET, messages
    and a second DELETE are 404 session_not_found."""
    await chat(api, auth, "doomed", "hello")
    status, body = await call(api, auth, "DELETE", f"{SESSIONS}/doomed")
    assert (status, body) == (200, {"object": "hermes.session.deleted", "id": "doomed", "deleted": True})
    for method, path in (
        ("GET", f"{SESSIONS}/doomed"),
        ("GET", f"{SESSIONS}/doomed/messages"),
        ("DELETE", f"{SESSIONS}/doomed"),
    ):
        assert await call(api, auth, method, path) == (404, SESSION_NOT_FOUND)
    assert [s["id"] for s in (await list_sessions(api, auth))["data"]] == []


async def test_delete_session_with_a_running_turn_is_409(api: TestClient, auth: dict[str, str]) -> None:
    """W-7.4, §7.1, §6.4: DELETE while a turn runs on the session → 409 session_active_turn (conflict_error); once the
    turn is stopped through its run the stream ends run.cancelled + done, and DELETE succeeds."""
    async with api.post(f"{SESSIONS}/busy/chat/stream", json={"message": "hang"}, headers=auth) as resp:
        run_id = resp.headers["X-Hermes-Run-Id"]
        raw = await read_until(resp, b"event: tool.started")
        refused = await fetch(api, "DELETE", f"{SESSIONS}/busy", headers=auth)
        error = assert_error_envelope(refused, 409, "session_active_turn")
        assert error["type"] == "conflict_error"
        await stop_run(api, auth, run_id)
        raw += await asyncio.wait_for(resp.content.read(), 10)
        headers = resp.headers
    stream = SessionStream(200, headers, raw)
    check_session_stream(stream, "busy")
    assert stream.names[-2:] == ["run.cancelled", "done"]
    status, body = await call(api, auth, "DELETE", f"{SESSIONS}/busy")
    assert (status, body) == (200, {"object": "hermes.session.deleted", "id": "busy", "deleted": True})


async def test_delete_session_removes_session_key_bindings(api: TestClient, auth: dict[str, str]) -> None:
    """§7.1: bindings of `X-Hermes-Session-Key` to a deleted session are removed: the key's next run starts a new
    session with no history."""
    key = {"X-Hermes-Session-Key": "desk"}

    async def run(text: str) -> str:
        status, body = await call(api, auth, "POST", RUNS, {"input": text}, key)
        assert status == 202, body
        run, _ = await run_of(api, auth, body["run_id"])
        return run["session_id"]  # type: ignore[no-any-return]

    bound = await run("keyed before delete")
    assert (await call(api, auth, "DELETE", f"{SESSIONS}/{bound}"))[0] == 200
    fresh = await run("keyed after delete")
    assert fresh != bound
    assert history_texts(execution_for(api, "keyed after delete")) == []


# -- W-7.1 (§7.2): messages ---------------------------------------------------------------------------------------------


async def test_messages_are_the_chronological_transcript_with_tools(api: TestClient, auth: dict[str, str]) -> None:
    """§7.2: the transcript in chronological order: user input, the assistant's tool call, the tool result with
    tool_call_id and tool_name, the answer with its reasoning; rows are never compacted by default."""
    await chat(api, auth, "transcript", "use tool")
    await chat(api, auth, "transcript", "hello")
    body = await messages(api, auth, "transcript")
    assert body["session_id"] == "transcript"
    assert body["pagination"] == {"limit": 500, "offset": 0, "order": "latest", "returned": 6}
    data = body["data"]
    assert rows(body) == [
        ("user", "use tool"),
        ("assistant", ""),
        ("tool", "README.md\nsrc/"),
        ("assistant", USE_TOOL_ANSWER),
        ("user", "hello"),
        ("assistant", DEFAULT_ANSWER),
    ]
    call_id = data[1]["tool_calls"][0]["id"]
    assert data[1]["tool_calls"] == [
        {"id": call_id, "type": "function", "function": {"name": "terminal", "arguments": '{"command":"ls -la"}'}}
    ]
    assert (data[2]["tool_call_id"], data[2]["tool_name"], data[2]["tool_calls"]) == (call_id, "terminal", None)
    assert [m["reasoning"] for m in data] == [None, None, None, USE_TOOL_REASONING, None, DEFAULT_REASONING]
    for message in (data[0], data[3], data[4], data[5]):
        assert (message["tool_calls"], message["tool_call_id"], message["tool_name"]) == (None, None, None)
    assert all(m["compacted"] is False for m in data)
    assert len({m["id"] for m in data}) == 6
    stamps = [m["timestamp"] for m in data]
    assert all(isinstance(s, float) for s in stamps) and stamps == sorted(stamps)


async def test_tool_message_names_its_tool_on_every_page(api: TestClient, auth: dict[str, str]) -> None:
    """§7.2: a tool message carries `tool_call_id` and `tool_name` whichever page it is on — also when the assistant
    message that called the tool is not part of the page."""
    await chat(api, auth, "tool-pages", "use tool")
    full = (await messages(api, auth, "tool-pages"))["data"]
    tool = full[2]
    assert (tool["role"], tool["tool_name"]) == ("tool", "terminal")
    for query in ("?limit=2", "?order=oldest&offset=2&limit=1", "?offset=1&limit=2"):
        page = (await messages(api, auth, "tool-pages", query))["data"]
        (found,) = [m for m in page if m["role"] == "tool"]
        assert (found["tool_call_id"], found["tool_name"]) == (tool["tool_call_id"], "terminal"), query


@pytest.mark.parametrize(
    ("query", "window", "pagination"),
    [
        ("?limit=2", slice(4, 6), {"limit": 2, "offset": 0, "order": "latest"}),
        ("?limit=2&offset=2", slice(2, 4), {"limit": 2, "offset": 2, "order": "latest"}),
        ("?limit=4&order=latest", slice(2, 6), {"limit": 4, "offset": 0, "order": "latest"}),
        ("?limit=2&order=oldest", slice(0, 2), {"limit": 2, "offset": 0, "order": "oldest"}),
        ("?limit=3&offset=2&order=oldest", slice(2, 5), {"limit": 3, "offset": 2, "order": "oldest"}),
        ("?offset=10", slice(0, 0), {"limit": 500, "offset": 10, "order": "latest"}),
    ],
)
async def test_messages_paging_counts_from_the_chosen_end_and_stays_chronological(
    api: TestClient, auth: dict[str, str], query: str, window: slice, pagination: dict[str, Any]
) -> None:
    """§7.2: `order=latest` (default) counts the page from the newest message, `oldest` from the first; either way
    the page is in chronological order and `pagination` echoes limit/offset/order/returned."""
    await chat(api, auth, "paged", "use tool")
    await chat(api, auth, "paged", "hello")
    full = (await messages(api, auth, "paged"))["data"]
    page = await messages(api, auth, "paged", query)
    assert page["data"] == full[window]
    assert page["pagination"] == {**pagination, "returned": len(full[window])}


@pytest.mark.parametrize("query", ["?order=newest", "?limit=0", "?limit=501", "?offset=-1", "?include_compacted=maybe"])
async def test_messages_reject_bad_query_values(api: TestClient, auth: dict[str, str], query: str) -> None:
    """§7.2: limit 1–500, offset ≥ 0, order latest|oldest, boolean flags; else 400 invalid_parameter."""
    await chat(api, auth, "strict-query", "hello")
    refused = await fetch(api, "GET", f"{SESSIONS}/strict-query/messages{query}", headers=auth)
    assert_error_envelope(refused, 400, "invalid_parameter")


async def test_messages_inline_images_false_replaces_images_by_text(api: TestClient, auth: dict[str, str]) -> None:
    """W-7.1, §7.2, §9: a message with an image reads back as a part list with the image_url part; with
    inline_images=false every image part becomes {"type":"text","text":"[image]"}; text-only messages stay strings."""
    await chat(
        api,
        auth,
        "pictures",
        [{"type": "text", "text": "What is on this screenshot?"}, {"type": "image_url", "image_url": {"url": PNG}}],
    )
    inline = (await messages(api, auth, "pictures"))["data"]
    assert inline[0]["role"] == "user"
    assert inline[0]["content"] == [
        {"type": "text", "text": "What is on this screenshot?"},
        {"type": "image_url", "image_url": {"url": PNG}},
    ]
    assert inline[1]["content"] == DEFAULT_ANSWER
    plain = await messages(api, auth, "pictures", "?inline_images=false")
    assert plain["data"][0]["content"] == [
        {"type": "text", "text": "What is on this screenshot?"},
        {"type": "text", "text": "[image]"},
    ]
    assert plain["data"][1:] == inline[1:]
    assert PNG[20:60] not in json.dumps(plain)


async def test_messages_reasoning_is_null_when_reasoning_was_off(api: TestClient, auth: dict[str, str]) -> None:
    """W-10.1, §7.2, §7.3: with model_options.reasoning.enabled false the reply has no reasoning_content, the stream
    no reasoning.delta, and the stored answer's `reasoning` is null; the default turn keeps its reasoning."""
    off = {"model_options": {"reasoning": {"enabled": False}}}
    _, reply = await chat(api, auth, "no-thinking", "use tool", **off)
    assert reply["message"] == {"role": "assistant", "content": USE_TOOL_ANSWER}
    stream = await stream_chat(api, auth, "no-thinking", "hello", **off)
    assert "reasoning.delta" not in stream.names
    assert "reasoning_content" not in stream.named("assistant.completed")[0]
    await chat(api, auth, "no-thinking", "hello again")
    data = (await messages(api, auth, "no-thinking"))["data"]
    answers = [m for m in data if m["role"] == "assistant" and m["content"]]
    assert [m["reasoning"] for m in answers] == [None, None, DEFAULT_REASONING]


async def test_include_compacted_returns_archived_turns_before_the_live_ones(
    make_api: Any, auth: dict[str, str]
) -> None:
    """W-7.1, §7.2: after a turn with a compaction, messages show only the live transcript by default; with
    include_compacted=true the archived turns come first, chronologically, each with compacted:true; the session
    counts live messages only, and the next turn's history is the live transcript."""
    api = await make_api(script="sessions.yaml")
    await chat(api, auth, "compacting", "hello there")
    before = (await messages(api, auth, "compacting"))["data"]
    assert rows({"data": before}) == [("user", "hello there"), ("assistant", "Hello from the sessions script.")]
    _, reply = await chat(api, auth, "compacting", "please compact")
    assert reply["status"] == "completed"
    live = (await messages(api, auth, "compacting"))["data"]
    assert all(m["compacted"] is False for m in live)
    assert "hello there" not in json.dumps(live)
    assert rows({"data": live})[-2:] == [("user", "please compact"), ("assistant", "Compacted and continuing.")]
    everything = await messages(api, auth, "compacting", "?include_compacted=true")
    archived = [m for m in everything["data"] if m["compacted"]]
    assert everything["data"][: len(archived)] == archived, "archived rows come first"
    assert [{**m, "compacted": False} for m in archived] == before
    assert everything["data"][len(archived) :] == live
    oldest = await messages(api, auth, "compacting", "?include_compacted=true&order=oldest&limit=1")
    assert oldest["data"] == archived[:1]
    assert (await get_session(api, auth, "compacting"))["message_count"] == len(live)
    await chat(api, auth, "compacting", "after the compaction")
    history = history_texts(execution_for(api, "after the compaction"))
    assert ("user", "hello there") not in history
    assert history[-2:] == [("user", "please compact"), ("assistant", "Compacted and continuing.")]
    assert any("Summary: the user greeted the agent" in text for _, text in history)


# -- W-7.2: session chat (JSON) -----------------------------------------------------------------------------------------


async def test_session_chat_reply_shape_and_run_agree(api: TestClient, auth: dict[str, str]) -> None:
    """W-7.2, §7.3, §6.2: the reply is a hermes.session.chat.completion with status, session_id, run_id (= the
    X-Hermes-Run-Id header), the message with reasoning_content, usage, error, turn_exit_reason; its status equals
    GET /v1/runs/{run_id} and the run's terminal event; an unknown id starts a session with that id."""
    headers, reply = await chat(api, auth, "desk-json", "use tool")
    run_id = headers["X-Hermes-Run-Id"]
    assert headers["X-Hermes-Session-Id"] == "desk-json"
    assert reply == {
        "object": "hermes.session.chat.completion",
        "status": "completed",
        "session_id": "desk-json",
        "run_id": run_id,
        "message": {"role": "assistant", "content": USE_TOOL_ANSWER, "reasoning_content": USE_TOOL_REASONING},
        "usage": {"input_tokens": 42, "output_tokens": 17, "total_tokens": 59},
        "error": None,
        "turn_exit_reason": None,
    }
    assert RUN_ID.match(run_id)
    run, terminal = await run_of(api, auth, run_id)
    assert run["status"] == reply["status"] and terminal == f"run.{reply['status']}"
    assert run["session_id"] == "desk-json"
    assert (await get_session(api, auth, "desk-json"))["message_count"] == 4


@pytest.mark.parametrize(
    ("text", "status", "error", "exit_reason"),
    [
        ("exhaust", "incomplete", None, "iteration_budget_exhausted"),
        ("fail", "failed", {"code": "agent_error", "message": "Provider authentication failed"}, None),
    ],
)
async def test_session_chat_reports_unsuccessful_outcomes_in_a_200(
    api: TestClient, auth: dict[str, str], text: str, status: str, error: Any, exit_reason: Any
) -> None:
    """W-7.2, §7.3, §1.7: the reply is 200 whatever the outcome; `status` (with `turn_exit_reason` or `error`) equals
    GET /v1/runs/{run_id} and its terminal event."""
    headers, reply = await chat(api, auth, f"outcome-{status}", text)
    assert headers["X-Hermes-Run-Id"] == reply["run_id"]
    assert (reply["status"], reply["error"], reply["turn_exit_reason"]) == (status, error, exit_reason)
    run, terminal = await run_of(api, auth, reply["run_id"])
    assert (run["status"], terminal, run["error"], run["turn_exit_reason"]) == (
        status,
        f"run.{status}",
        error,
        exit_reason,
    )


async def test_session_chat_history_comes_from_the_session(api: TestClient, auth: dict[str, str]) -> None:
    """§7.3: history always comes from the session transcript (tool call and result included); `input` and
    `system_message` are accepted aliases; the key header is echoed."""
    await chat(api, auth, "remembering", "use tool")
    async with api.post(
        f"{SESSIONS}/remembering/chat",
        headers={**auth, "X-Hermes-Session-Key": "memo"},
        json={"input": "and now?", "system_message": "Be brief."},
    ) as resp:
        assert resp.status == 200
        assert resp.headers["X-Hermes-Session-Key"] == "memo"
        assert json.loads(await resp.text())["status"] == "completed"
    execution = execution_for(api, "and now?")
    assert history_texts(execution) == [
        ("user", "use tool"),
        ("assistant", ""),
        ("tool", "README.md\nsrc/"),
        ("assistant", USE_TOOL_ANSWER),
    ]
    assert execution["session_id"] == "remembering"
    assert execution["system_prompt"] == "Be brief."


@pytest.mark.parametrize(
    ("path", "body", "code", "param"),
    [
        ("ok", {}, "missing_required_parameter", "message"),
        ("ok", {"message": "   "}, "missing_user_message", "message"),
        ("ok", {"message": [{"type": "input_file", "file_id": "f"}]}, "unsupported_content_type", "message[0]"),
        ("ok", {"message": "hi", "instructions": 3}, "invalid_parameter", "instructions"),
        ("%20lead", {"message": "hi"}, "invalid_session_id", "session_id"),
    ],
    ids=["missing", "blank", "file-part", "instructions-type", "bad-path-id"],
)
@pytest.mark.parametrize("route", ["chat", "chat/stream"])
async def test_session_chat_validation_errors_come_before_the_head(
    api: TestClient, auth: dict[str, str], route: str, path: str, body: dict[str, Any], code: str, param: str
) -> None:
    """§7.3, §7.4, §9: invalid session chat requests get a JSON 400 (on the stream route too); nothing runs."""
    refused = await fetch(api, "POST", f"{SESSIONS}/{path}/{route}", json=body, headers=auth)
    error = assert_error_envelope(refused, 400, code)
    assert error["param"] == param
    assert executions(api.home) == []  # type: ignore[attr-defined]


# -- W-7.3: session chat stream -----------------------------------------------------------------------------------------


async def test_session_stream_named_events_in_order(api: TestClient, auth: dict[str, str]) -> None:
    """W-7.3, §7.4: run.started, message.started once, reasoning, tool started/completed, commentary, answer deltas,
    assistant.completed (content + reasoning_content), then run.completed (status, usage) and done; every
    message_id is the same; the terminal run event matches GET /v1/runs/{run_id}."""
    stream = await stream_chat(api, auth, "desk-stream", "use tool")
    check_session_stream(stream, "desk-stream")
    names = stream.names
    collapsed = [n for i, n in enumerate(names) if i == 0 or n != names[i - 1]]
    assert collapsed == [
        "run.started",
        "message.started",
        "reasoning.delta",
        "tool.started",
        "tool.completed",
        "assistant.commentary",
        "reasoning.delta",
        "assistant.delta",
        "assistant.completed",
        "run.completed",
        "done",
    ]
    (started,) = stream.named("message.started")
    assert started["role"] == "assistant" and started["message_id"]
    assert {p["message_id"] for p in stream.payloads if "message_id" in p} == {started["message_id"]}
    assert "".join(p["delta"] for p in stream.named("reasoning.delta")) == USE_TOOL_REASONING
    assert "".join(p["delta"] for p in stream.named("assistant.delta")) == USE_TOOL_ANSWER
    (tool_started,) = stream.named("tool.started")
    (tool_completed,) = stream.named("tool.completed")
    assert (tool_started["tool_name"], tool_started["preview"]) == ("terminal", "ls -la")
    assert tool_completed["tool_call_id"] == tool_started["tool_call_id"]
    assert isinstance(tool_completed["duration_ms"], int) and tool_completed["duration_ms"] >= 150
    assert tool_completed["is_error"] is False
    assert stream.named("assistant.commentary")[0]["text"] == "Listed the files."
    (closing,) = stream.named("assistant.completed")
    assert (closing["content"], closing["reasoning_content"]) == (USE_TOOL_ANSWER, USE_TOOL_REASONING)
    terminal = stream.payloads[-2]
    assert terminal["status"] == "completed"
    assert terminal["usage"] == {"input_tokens": 42, "output_tokens": 17, "total_tokens": 59}
    assert "error" not in terminal and "turn_exit_reason" not in terminal
    run, run_terminal = await run_of(api, auth, stream.headers["X-Hermes-Run-Id"])
    assert run["status"] == terminal["status"] and run_terminal == terminal["event"]


@pytest.mark.parametrize(
    ("text", "tail", "extra"),
    [
        (
            "fail",
            ["assistant.completed", "run.failed", "done"],
            {"error": {"code": "agent_error", "message": "Provider authentication failed"}},
        ),
        (
            "fail early",
            ["message.started", "run.failed", "done"],
            {"error": {"code": "agent_error", "message": "Provider authentication failed"}},
        ),
        (
            "exhaust",
            ["assistant.completed", "run.incomplete", "done"],
            {"turn_exit_reason": "iteration_budget_exhausted"},
        ),
    ],
    ids=["fail-after-text", "fail-early", "exhaust"],
)
async def test_session_stream_terminal_event_matches_the_outcome(
    api: TestClient, auth: dict[str, str], text: str, tail: list[str], extra: dict[str, Any]
) -> None:
    """W-7.3, §7.4: assistant.completed (present when an assistant message was produced) is followed by the run.*
    event of the real outcome — run.failed after a failure — with its error / turn_exit_reason, then done; the
    reply status of the same turn through /v1/runs agrees."""
    session = f"stream-{text.replace(' ', '-')}"
    stream = await stream_chat(api, auth, session, text)
    check_session_stream(stream, session)
    assert stream.names[-3:] == tail
    terminal = stream.payloads[-2]
    status = terminal["event"].removeprefix("run.")
    assert {k: terminal[k] for k in extra} == extra and terminal["status"] == status
    run, run_terminal = await run_of(api, auth, stream.headers["X-Hermes-Run-Id"])
    assert (run["status"], run_terminal) == (status, terminal["event"])


async def test_session_stream_keeps_alive_while_idle_and_carries_cors(make_api: Any, auth: dict[str, str]) -> None:
    """W-2.4, W-1.5, §7.4, §2.2: with a 1 s keepalive an idle session stream writes `: keepalive` comments (never data
    records); for an allowed Origin its head carries the CORS headers."""
    origin = "http://localhost:3000"
    api = await make_api(env={"API_SERVER_CORS_ORIGINS": origin})
    async with api.post(
        f"{SESSIONS}/idle/chat/stream", json={"message": "hang"}, headers={**auth, "Origin": origin}
    ) as resp:
        assert resp.headers["Access-Control-Allow-Origin"] == origin and "Origin" in resp.headers["Vary"]
        assert "x-hermes-run-id" in resp.headers["Access-Control-Expose-Headers"].lower()
        raw = await read_until(resp, b"event: tool.started")
        raw = await read_until(resp, b": keepalive\n\n", raw)
        await stop_run(api, auth, resp.headers["X-Hermes-Run-Id"])
        raw += await asyncio.wait_for(resp.content.read(), 10)
        stream = SessionStream(resp.status, resp.headers, raw)
    check_session_stream(stream, "idle")
    assert b"data: : keepalive" not in raw
    assert stream.names[-2:] == ["run.cancelled", "done"]


# -- W-7.5: resuming a session stream -----------------------------------------------------------------------------------


def without_ts(view: list[tuple[str | None, str | None, dict[str, Any]]]) -> list[tuple[Any, ...]]:
    return [(rid, name, {k: v for k, v in payload.items() if k != "ts"}) for rid, name, payload in view]


async def test_keyed_retry_with_last_event_id_receives_exactly_the_events_after_it(
    api: TestClient, auth: dict[str, str]
) -> None:
    """W-7.5, §7.4, §5.3: repeating the stream POST with the same Idempotency-Key and `Last-Event-ID: N` replays the
    settled turn from N+1 (same ids, events and payloads) ending with run.* and done, with the original run id and
    `Idempotency-Replayed: true`; the turn ran once."""
    key = {"Idempotency-Key": "session-resume-1"}
    first = await stream_chat(api, auth, "resume-settled", "use tool", headers=key)
    check_session_stream(first, "resume-settled")
    run_id = first.headers["X-Hermes-Run-Id"]
    for n in [None, *range(len(first.records) + 1)]:
        headers = {**key} if n is None else {**key, "Last-Event-ID": str(n)}
        again = await stream_chat(api, auth, "resume-settled", "use tool", headers=headers)
        assert again.headers["Idempotency-Replayed"] == "true"
        assert again.headers["X-Hermes-Run-Id"] == run_id
        assert without_ts(again.view()) == without_ts(first.view())[n or 0 :], n
        if (n or 0) < len(first.records) - 1:  # more than `done` is left: a full tail ending run.* + done
            check_session_stream(again, "resume-settled", first_seq=(n or 0) + 1)
    assert len([e for e in executions(api.home) if e["turn_id"] == run_id]) == 1  # type: ignore[attr-defined]


async def test_keyed_retry_attaches_to_a_running_turn_after_last_event_id(
    api: TestClient, auth: dict[str, str]
) -> None:
    """W-7.5, §7.4, §5.5: a keyed stream client that loses the connection mid-turn (the turn keeps running) retries
    with `Last-Event-ID` of the last record it saw: it gets exactly the later events, then live ones, ending with
    run.* and done; together the two parts are one gap-free stream."""
    key = {"Idempotency-Key": "session-resume-2"}
    async with api.post(
        f"{SESSIONS}/resume-live/chat/stream", json={"message": "hang"}, headers={**auth, **key}
    ) as resp:
        run_id = resp.headers["X-Hermes-Run-Id"]
        raw = await read_until(resp, b"event: tool.started")
    seen = complete_records(raw)
    last = seen[-1].id
    assert last is not None and seen[-1].event == "tool.started"
    await asyncio.sleep(0.1)
    status, run = await call(api, auth, "GET", f"{RUNS}/{run_id}")
    assert status == 200 and run["status"] == "running", "a keyed stream's disconnect leaves the turn running"
    async with api.post(
        f"{SESSIONS}/resume-live/chat/stream", json={"message": "hang"}, headers={**auth, **key, "Last-Event-ID": last}
    ) as resp:
        assert resp.status == 200 and resp.headers["Idempotency-Replayed"] == "true"
        assert resp.headers["X-Hermes-Run-Id"] == run_id
        await stop_run(api, auth, run_id)
        rest = await read_session_stream(resp)
    check_session_stream(rest, "resume-live", first_seq=int(last) + 1)
    assert rest.names[-2:] == ["run.cancelled", "done"]
    whole = SessionStream(rest.status, rest.headers, raw[: raw.rfind(b"\n\n") + 2] + rest.raw)
    assert whole.records == seen + rest.records
    check_session_stream(whole, "resume-live")
    assert whole.names.count("message.started") == 1
    assert len([e for e in executions(api.home) if e["turn_id"] == run_id]) == 1  # type: ignore[attr-defined]
