"""`POST /api/sessions/{id}/fork` on the reference gateway's own session store (WIRE §14.1, W-14.2).

Real app in-process, SQLite store, scripted runtime (tests/scripts/chat.yaml); the Hermes SessionDB side is in
tests/hermes/test_hermes_sessions.py.
"""

from __future__ import annotations

from aiohttp.test_utils import TestClient

from tests.helpers import NEW_SESSION, USE_TOOL_ANSWER, assert_error_envelope, execution_for, fetch, history_texts

from .support import (
    SESSION_KEYS,
    SESSION_NOT_FOUND,
    SESSIONS,
    call,
    chat,
    create_session,
    get_session,
    messages,
)


async def test_fork_copies_the_transcript_into_a_child_that_continues_on_its_own(
    api: TestClient, auth: dict[str, str]
) -> None:
    """§14.1: 201 with the fork (new id, parent = the original, the messages copied); chat on the fork sees the
    original's history; the original is untouched by the fork's turns."""
    await create_session(api, auth, id="origin", title="Origin")
    await chat(api, auth, "origin", "use tool")
    status, reply = await call(api, auth, "POST", f"{SESSIONS}/origin/fork", {"id": "branch"})
    assert status == 201, reply
    assert reply["object"] == "hermes.session" and set(reply["session"]) == SESSION_KEYS
    fork = reply["session"]
    assert (fork["id"], fork["parent_session_id"], fork["title"]) == ("branch", "origin", "Origin (fork)")
    original = await get_session(api, auth, "origin")
    assert fork["message_count"] == original["message_count"] == 4
    copied = [(m["role"], m["content"]) for m in (await messages(api, auth, "branch"))["data"]]
    assert copied == [(m["role"], m["content"]) for m in (await messages(api, auth, "origin"))["data"]]

    await chat(api, auth, "branch", "and in the branch?")
    assert history_texts(execution_for(api, "and in the branch?"))[-1] == ("assistant", USE_TOOL_ANSWER)
    assert (await get_session(api, auth, "origin"))["message_count"] == 4
    assert (await get_session(api, auth, "branch"))["message_count"] == 6


async def test_fork_generates_an_id_takes_a_title_and_accepts_no_body(api: TestClient, auth: dict[str, str]) -> None:
    """§14.1: without an id the fork gets an `api_<unix>_<8 hex>` id; `title` names it; an empty body is fine."""
    await chat(api, auth, "plain", "hello")
    reply = await fetch(api, "POST", f"{SESSIONS}/plain/fork", headers=auth)
    assert reply.status == 201, reply.text
    assert NEW_SESSION.match(reply.json()["session"]["id"])
    status, named = await call(api, auth, "POST", f"{SESSIONS}/plain/fork", {"title": "Try B"})
    assert status == 201 and named["session"]["title"] == "Try B"


async def test_fork_refusals(api: TestClient, auth: dict[str, str]) -> None:
    """Unknown original → 404 session_not_found; a taken id → 409 session_exists; a bad id → 400."""
    assert await call(api, auth, "POST", f"{SESSIONS}/nope/fork", {}) == (404, SESSION_NOT_FOUND)
    await create_session(api, auth, id="a")
    await create_session(api, auth, id="b")
    assert_error_envelope(
        await fetch(api, "POST", f"{SESSIONS}/a/fork", json={"id": "b"}, headers=auth), 409, "session_exists"
    )
    assert_error_envelope(
        await fetch(api, "POST", f"{SESSIONS}/a/fork", json={"id": "../x"}, headers=auth), 400, "invalid_session_id"
    )
