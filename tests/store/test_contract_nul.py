"""Store contract, issue 20 defect 7: free text holding NUL round-trips on every backend (PostgreSQL `text` cannot
hold NUL: store/postgres/text.py), and a value a backend refuses is StoreRefused — never StoreUnavailable, the
outage that is answered 503 with Retry-After.

Runs once per backend of the `open_backend` fixture (tests/store/conftest.py).
"""

from __future__ import annotations

import json

import psycopg
import pytest

from hermes_api_plugin.core.content import Message, TextPart, ToolCall
from hermes_api_plugin.store import StoredResponse, StoreError, StoreRefused, StoreUnavailable
from hermes_api_plugin.store.postgres.db import PostgresDatabase
from hermes_api_plugin.submission.idempotency import error_for, store_failure

from .conftest import Backend

NUL = "\x00"
SCOPE = "scope-nul"


def _response(rid: str, instructions: str | None) -> StoredResponse:
    said = Message("user", (TextPart(f"q{NUL}{rid}"),))
    answer = Message("assistant", (TextPart(f"a{NUL}"),), reasoning=f"r{NUL}")
    return StoredResponse(
        id=rid,
        scope=SCOPE,
        turn_id=f"run_{rid}",
        session_id=f"api-{rid}",
        status="completed",
        snapshot={"id": rid, "instructions": instructions, "output": [{"text": NUL}]},
        input_items=[{"id": f"msg_{rid}", "type": "message", "content": [{"type": "input_text", "text": NUL}]}],
        instructions=instructions,
        messages=[said, answer],
    )


@pytest.mark.parametrize("instructions", [f"be{NUL}brief", NUL, 'plain "quoted" \\ text', "", None])
async def test_issue_20_defect_7_a_response_with_nul_reads_back_equal(
    backend: Backend, instructions: str | None
) -> None:
    stored = _response("resp_nul", instructions)
    item = {"id": "fco_nul", "type": "function_call_output", "call_id": "call_nul", "output": f"o{NUL}"}
    await backend.store.put_response(stored, [item])
    got = await backend.store.get_response(SCOPE, "resp_nul")
    assert got is not None
    assert (got.instructions, got.snapshot, got.input_items, got.messages) == (
        stored.instructions,
        stored.snapshot,
        stored.input_items,
        stored.messages,
    )
    assert await backend.store.find_item(SCOPE, "fco_nul") == item
    assert await backend.store.find_tool_output(SCOPE, "call_nul") == f"o{NUL}"
    assert await backend.store.chain_messages(SCOPE, "resp_nul") == stored.messages


async def test_issue_20_defect_7_session_messages_with_nul_read_back_equal(backend: Backend) -> None:
    sessions = backend.sessions
    turn = [
        Message("user", (TextPart(f"hi{NUL}"),)),
        Message("assistant", (), reasoning=f"think{NUL}", tool_calls=(ToolCall("call_1", "terminal", f'"{NUL}"'),)),
        Message("tool", (TextPart(f"a{NUL}b"),), tool_call_id="call_1"),
        Message("assistant", (TextPart(f"ans{NUL}wer"),), reasoning=f"done{NUL}"),
    ]
    await sessions.append_session_messages("s-nul", turn, model="m")
    assert await sessions.load_session_messages("s-nul") == turn
    rows = await sessions.session_message_rows("s-nul", limit=10, offset=0, newest_first=False, include_compacted=False)
    assert [r["reasoning"] for r in rows] == [None, f"think{NUL}", None, f"done{NUL}"]
    assert await sessions.fork_session("s-nul", "s-fork", None) == "forked"
    assert await sessions.load_session_messages("s-fork") == turn


async def test_issue_20_defect_7_agent_output_with_nul_in_a_journal_reads_back_equal(backend: Backend) -> None:
    events = [json.dumps({"type": "text", "delta": f"x{NUL}y"}), json.dumps({"type": "reasoning", "delta": NUL})]
    await backend.store.append_journals([("run_nul", 0, events)])
    assert await backend.store.load_journal("run_nul") == events


async def test_issue_20_defect_7_a_lookup_by_an_id_with_nul_is_none_or_refused_never_an_outage(
    backend: Backend,
) -> None:
    """The parsers refuse such ids (400); were one to get through, PostgreSQL refuses the statement: StoreRefused."""
    for lookup in (
        backend.store.get_response(SCOPE, f"resp_{NUL}"),
        backend.store.conversation_head(SCOPE, f"c{NUL}"),
        backend.sessions.get_session(f"s{NUL}"),
    ):
        try:
            assert await lookup is None
        except StoreError as exc:
            assert isinstance(exc, StoreRefused) and not isinstance(exc, StoreUnavailable), repr(exc)
            assert error_for(store_failure(exc)).status == 500


def test_issue_20_defect_7_refused_statements_are_not_outages() -> None:
    """psycopg's DataError (a NUL in text, a bad value) and IntegrityError are StoreRefused: 500 internal_error
    without Retry-After; OperationalError (no connection, shutdown) stays StoreUnavailable: 503 with Retry-After."""
    db = PostgresDatabase("postgresql://u:secret@127.0.0.1:1/db")
    refused = db.error("PostgreSQL store failed", psycopg.DataError("PostgreSQL text fields cannot contain NUL"))
    assert isinstance(refused, StoreRefused)
    assert isinstance(db.error("x", psycopg.IntegrityError("duplicate key")), StoreRefused)
    down = db.error("x", psycopg.OperationalError("connection refused"))
    assert isinstance(down, StoreUnavailable) and not isinstance(down, StoreRefused)
    internal = error_for(store_failure(refused))
    assert (internal.status, internal.code, internal.headers) == (500, "internal_error", {})
    outage = error_for(store_failure(down))
    assert (outage.status, outage.code, outage.headers) == (503, "storage_unavailable", {"Retry-After": "1"})
    assert "secret" not in str(refused)
