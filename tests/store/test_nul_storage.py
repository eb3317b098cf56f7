"""Issue 20, defect 7: a NUL character gets the same answer on SQLite and PostgreSQL, and never a 503.

PostgreSQL answered an escaped NUL (`"\\u0000"`) in `conversation`, `instructions`, `model` or a session title with
503 `storage_unavailable` and Retry-After — clients retried forever — where SQLite took it. Now identifiers refuse
NUL at parse time (400 on both stores, protocol/limits.py) and free text — instructions, message content, and what the
agent produces (reasoning, tool output, its reply) — is stored on both and reads back equal (store/postgres/text.py).
The real app in-process over a real SQLite file or a real PostgreSQL server (tests/pg.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from ..conftest import ApiFactory
from ..helpers import assert_error_envelope, fetch
from ..live import executions

NUL = "\x00"


@pytest.fixture(params=["sqlite", "postgres"])
def store_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """The .env of each store: SQLite (the default), or a new database of the test server (tests/pg.py)."""
    if request.param == "postgres":
        return {"API_SERVER_STORE_URL": request.getfixturevalue("postgres_databases")()}
    return {}


@pytest.fixture
async def api_on(store_env: dict[str, str], make_api: ApiFactory) -> AsyncIterator[TestClient]:
    """The app on each store, with the script whose agent replies with NUL (tests/scripts/nul.yaml). The database
    comes first, so that the app is closed before the database is dropped."""
    yield await make_api(env=store_env, script="nul.yaml")


CHAT = {"messages": [{"role": "user", "content": "hi"}]}
# An identifier with NUL in it, per field: where it is sent, and the param of the 400.
IDENTIFIERS: dict[str, tuple[str, str, Any, str]] = {
    "chat model": ("POST", "/v1/chat/completions", {**CHAT, "model": f"m{NUL}"}, "model"),
    "chat provider": ("POST", "/v1/chat/completions", {**CHAT, "provider": f"p{NUL}"}, "provider"),
    "responses model": ("POST", "/v1/responses", {"input": "hi", "model": f"m{NUL}"}, "model"),
    "responses conversation": ("POST", "/v1/responses", {"input": "hi", "conversation": f"c{NUL}"}, "conversation"),
    "responses conversation id": (
        "POST",
        "/v1/responses",
        {"input": "hi", "conversation": {"id": f"c{NUL}"}},
        "conversation.id",
    ),
    "responses previous_response_id": (
        "POST",
        "/v1/responses",
        {"input": "hi", "previous_response_id": f"resp_{NUL}"},
        "previous_response_id",
    ),
    "responses item_reference": (
        "POST",
        "/v1/responses",
        {"input": [{"type": "item_reference", "id": f"msg_{NUL}"}, {"role": "user", "content": "hi"}]},
        "input[0].id",
    ),
    "responses function_call_output call_id": (
        "POST",
        "/v1/responses",
        {"input": [{"type": "function_call_output", "call_id": NUL, "output": "x"}, {"role": "user", "content": "hi"}]},
        "input[0].call_id",
    ),
    "responses metadata key": ("POST", "/v1/responses", {"input": "hi", "metadata": {NUL: "v"}}, "metadata"),
    "runs model": ("POST", "/v1/runs", {"input": "hi", "model": f"m{NUL}"}, "model"),
    "session title": ("POST", "/api/sessions", {"id": "titled", "title": f"t{NUL}"}, "title"),
    "session chat model": ("POST", "/api/sessions/nul/chat", {"message": "hi", "model": f"m{NUL}"}, "model"),
    "response path id": ("GET", "/v1/responses/resp_%00", None, "response_id"),
    "response input items path id": ("GET", "/v1/responses/resp_%00/input_items", None, "response_id"),
    "run path id": ("GET", "/v1/runs/run_%00", None, "run_id"),
    "run events path id": ("GET", "/v1/runs/run_%00/events", None, "run_id"),
    "sessions source": ("GET", "/api/sessions?source=a%00", None, "source"),
}


@pytest.mark.parametrize("name", sorted(IDENTIFIERS))
async def test_issue_20_defect_7_nul_in_an_identifier_is_the_same_400_on_both_stores(
    api_on: TestClient, auth: dict[str, str], name: str
) -> None:
    method, path, body, param = IDENTIFIERS[name]
    reply = await fetch(api_on, method, path, json=body, headers=auth)
    assert_error_envelope(reply, 400, "invalid_parameter", param=param)
    assert "Retry-After" not in reply.headers
    assert executions(api_on.home) == []  # type: ignore[attr-defined]
    listing = await fetch(api_on, "GET", "/api/sessions", headers=auth)
    assert listing.status == 200 and listing.json()["data"] == []


async def test_issue_20_defect_7_a_session_title_with_nul_changes_nothing_on_both_stores(
    api_on: TestClient, auth: dict[str, str]
) -> None:
    created = await fetch(api_on, "POST", "/api/sessions", json={"id": "titled", "title": "kept"}, headers=auth)
    assert created.status == 201, created.raw
    patched = await fetch(api_on, "PATCH", "/api/sessions/titled", json={"title": f"a{NUL}b"}, headers=auth)
    assert_error_envelope(patched, 400, "invalid_parameter", param="title")
    forked = await fetch(api_on, "POST", "/api/sessions/titled/fork", json={"title": NUL}, headers=auth)
    assert_error_envelope(forked, 400, "invalid_parameter", param="title")
    got = await fetch(api_on, "GET", "/api/sessions/titled", headers=auth)
    assert got.json()["session"]["title"] == "kept"


def _texts(content: Any) -> list[str]:
    return [part["text"] for part in content if "text" in part]


async def test_issue_20_defect_7_free_text_with_nul_is_stored_and_read_back_equal_on_both_stores(
    api_on: TestClient, auth: dict[str, str]
) -> None:
    """Instructions, input content and the agent's reasoning, tool output and reply: taken, stored, read back."""
    instructions = f"be{NUL}brief"
    body = {"input": f"nul reply {NUL} one", "instructions": instructions, "store": True}
    created = await fetch(api_on, "POST", "/v1/responses", json=body, headers=auth)
    assert created.status == 200, created.raw[:500]
    response = created.json()
    assert response["instructions"] == instructions and response["status"] == "completed"
    stored = await fetch(api_on, "GET", f"/v1/responses/{response['id']}", headers=auth)
    assert stored.status == 200 and stored.json() == response
    kinds = {item["type"]: item for item in response["output"]}
    assert kinds["function_call_output"]["output"] == f"a{NUL}b"
    assert _texts(kinds["message"]["content"]) == [f"ans{NUL}wer"]
    items = await fetch(api_on, "GET", f"/v1/responses/{response['id']}/input_items", headers=auth)
    assert items.status == 200 and _texts(items.json()["data"][0]["content"]) == [f"nul reply {NUL} one"]

    # The chain's instructions come back from the store's own column: the next turn is given them.
    follow = {"input": "again", "previous_response_id": response["id"]}
    chained = await fetch(api_on, "POST", "/v1/responses", json=follow, headers=auth)
    assert chained.status == 200, chained.raw[:500]
    assert [e["system_prompt"] for e in executions(api_on.home)] == [instructions, instructions]  # type: ignore[attr-defined]


async def test_issue_20_defect_7_session_messages_with_nul_are_stored_and_read_back_equal_on_both_stores(
    api_on: TestClient, auth: dict[str, str]
) -> None:
    """A session turn whose user message and agent reply (reasoning too) hold NUL; then a chat on a session id."""
    reply = await fetch(api_on, "POST", "/api/sessions/nul/chat", json={"message": f"nul reply x{NUL}y"}, headers=auth)
    assert reply.status == 200, reply.raw[:500]
    headers = {**auth, "X-Hermes-Session-Id": "nul-chat"}
    chat = {"messages": [{"role": "user", "content": [{"type": "text", "text": f"nul reply {NUL}"}]}]}
    answered = await fetch(api_on, "POST", "/v1/chat/completions", json=chat, headers=headers)
    assert answered.status == 200, answered.raw[:500]
    message = answered.json()["choices"][0]["message"]
    assert message["content"] == f"ans{NUL}wer" and message["reasoning_content"] == f"think{NUL}ing"
    for session, said in (("nul", f"nul reply x{NUL}y"), ("nul-chat", f"nul reply {NUL}")):
        page = await fetch(api_on, "GET", f"/api/sessions/{session}/messages?order=oldest", headers=auth)
        assert page.status == 200, page.raw[:500]
        rows = page.json()["data"]
        assert [(m["role"], m["content"]) for m in rows if m["role"] != "assistant" or m["content"]] == [
            ("user", said),
            ("tool", f"a{NUL}b"),
            ("assistant", f"ans{NUL}wer"),
        ]
        assert rows[-1]["reasoning"] == f"think{NUL}ing"


async def test_issue_20_defect_7_a_run_with_nul_in_its_input_and_reply_completes_on_both_stores(
    api_on: TestClient, auth: dict[str, str]
) -> None:
    body = {"input": f"nul reply {NUL}", "instructions": f"i{NUL}"}
    accepted = await fetch(api_on, "POST", "/v1/runs", json=body, headers={**auth, "Idempotency-Key": "nul-run"})
    assert accepted.status == 202, accepted.raw[:500]
    run_id = accepted.json()["run_id"]
    for _ in range(200):
        run = await fetch(api_on, "GET", f"/v1/runs/{run_id}", headers=auth)
        assert run.status == 200, run.raw[:500]
        if run.json()["status"] != "running" and run.json()["status"] != "queued":
            break
        await asyncio.sleep(0.02)
    assert run.json()["status"] == "completed", run.raw[:500]
    again = await fetch(api_on, "POST", "/v1/runs", json=body, headers={**auth, "Idempotency-Key": "nul-run"})
    assert again.status == 202 and again.json()["run_id"] == run_id  # the keyed record holds it too
