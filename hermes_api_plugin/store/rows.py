"""Row ↔ value mappings shared by the two SQL backends: both schemas name their columns alike, and a row is anything
indexable by column name (`sqlite3.Row`, psycopg's dict rows), so one mapping serves SQLite and PostgreSQL.

Values stored as JSON text are written with `json_text` and read with `json.loads`; booleans come back as 0/1 from
SQLite and as bool from PostgreSQL, counts as int or int-like: each is normalised here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from ..core.content import Message
from ..core.json_text import compact
from .base import IdempotencyRecord, SessionInfo, StoredResponse


def json_text(value: Any) -> str:
    """A value as the compact UTF-8 JSON text stored in a column."""
    return compact(value)


class Row(Protocol):
    """A result row read by column name."""

    def __getitem__(self, key: str) -> Any: ...


def messages_from_json(raw: str) -> list[Message]:
    return [Message.from_json(m) for m in json.loads(raw)]


# -- stored Responses ---------------------------------------------------------------------------------------


def response_from_row(row: Row) -> StoredResponse:
    render = json.loads(row["render"])
    return StoredResponse(
        id=row["id"],
        scope=row["scope"],
        turn_id=row["turn_id"],
        session_id=row["session_id"],
        previous_response_id=row["previous_response_id"],
        conversation=row["conversation"],
        status=row["status"],
        snapshot=json.loads(row["snapshot"]),
        input_items=json.loads(row["input_items"]),
        instructions=row["instructions"],
        messages=messages_from_json(row["messages"]),
        queued=bool(render.get("queued")),
        commentary=bool(render.get("commentary", True)),
        hosted=bool(render.get("hosted", False)),
        created_at=row["created_at"],
        owner=row["owner"],
        start=int(render.get("start", 0)),
    )


def _render(response: StoredResponse) -> dict[str, Any]:
    """How the journal renders again. `hosted` and `start` are written only when set: a default row stays as before."""
    render: dict[str, Any] = {"queued": response.queued, "commentary": response.commentary}
    if response.hosted:
        render["hosted"] = True
    if response.start:
        render["start"] = response.start
    return render


def response_rows(
    response: StoredResponse, items: Sequence[Mapping[str, Any]], now: float
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The `responses` row of a response and the `response_items` rows of its items (those with an id)."""
    row = {
        "id": response.id,
        "scope": response.scope,
        "turn_id": response.turn_id,
        "session_id": response.session_id,
        "previous_response_id": response.previous_response_id,
        "conversation": response.conversation,
        "status": response.status,
        "snapshot": json_text(response.snapshot),
        "input_items": json_text(response.input_items),
        "instructions": response.instructions,
        "messages": json_text([m.to_json() for m in response.messages]),
        "render": json_text(_render(response)),
        "created_at": response.created_at or now,
        "accessed_at": now,
        "owner": response.owner,
    }
    # Only outputs of tools this server ran are indexed by call_id: a client's own
    # function_call_output for that call (sent back as input) must never replace the real one.
    input_ids = {item.get("id") for item in response.input_items}
    item_rows = [
        {
            "item_id": item["id"],
            "scope": response.scope,
            "response_id": response.id,
            "item": json_text(item),
            "call_id": item.get("call_id")
            if item.get("type") == "function_call_output" and item["id"] not in input_ids
            else None,
        }
        for item in items
        if isinstance(item.get("id"), str)
    ]
    return row, item_rows


# -- idempotency records (the `admissions` table) -----------------------------------------------------------


def idempotency_record_from_row(row: Row | None) -> IdempotencyRecord | None:
    if row is None:
        return None
    return IdempotencyRecord(
        scope=row["scope"],
        surface=row["surface"],
        key=row["key"],
        identity=row["identity"],
        target=row["target"],
        state=row["state"],
        turn_id=row["turn_id"],
        reply=json.loads(row["reply"]),
        owner=row["owner"],
        created_at=row["created_at"],
        settled_at=row["settled_at"],
    )


def idempotency_record_row(r: IdempotencyRecord) -> dict[str, Any]:
    return {
        "scope": r.scope,
        "surface": r.surface,
        "key": r.key,
        "identity": r.identity,
        "target": r.target,
        "state": r.state,
        "turn_id": r.turn_id,
        "reply": json_text(r.reply),
        "owner": r.owner,
        "created_at": r.created_at or time.time(),
        "settled_at": r.settled_at,
    }


# -- the plugin's sessions ----------------------------------------------------------------------------------


def session_from_row(row: Row | None) -> SessionInfo | None:
    """A session row selected with its counts and first user message (`first_user_content`)."""
    if row is None:
        return None
    preview = None
    if row["first_user_content"] is not None:
        parts = json.loads(row["first_user_content"])
        preview = "".join(p.get("text", "") for p in parts if p.get("type") == "text")[:200]
    return {
        "id": row["id"],
        "source": row["source"],
        "title": row["title"],
        "model": row["model"],
        "started_at": row["created_at"],
        "ended_at": row["ended_at"],
        "last_active": row["updated_at"],
        "message_count": int(row["message_count"]),
        "tool_call_count": int(row["tool_call_count"]),
        "input_tokens": int(row["input_tokens"]),
        "output_tokens": int(row["output_tokens"]),
        "parent_session_id": row["parent_session_id"],
        "pinned": bool(row["pinned"]),
        "archived": bool(row["archived"]),
        "preview": preview,
    }


def message_rows(
    session_id: str, messages: Sequence[Message], now: float, reasoning: Callable[[str | None], str | None]
) -> list[tuple[Any, ...]]:
    """A turn's messages as `messages` rows (session, role, content, reasoning, extra, created_at), both backends;
    `reasoning` writes the free-text column as the backend stores it."""
    rows = []
    for m in messages:
        body = m.to_json()
        extra = {k: body[k] for k in ("tool_calls", "tool_call_id") if k in body}
        rows.append(
            (
                session_id,
                m.role,
                json_text(body["content"]),
                reasoning(m.reasoning),
                json_text(extra) if extra else None,
                now,
            )
        )
    return rows
