"""SqliteStore: the plugin-owned state (stored Responses, conversation names, session-key bindings,
admissions, turn journals) in SQLite, and MemoryStore, the same in memory.

The store owns its `SqliteDatabase` (opens and closes it); `sessions` is the session store over the same
connection, so one file holds both and one thread serialises every statement. Nothing here reads or
writes the `sessions`/`messages` tables.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from ..core.content import Message
from .base import Eviction, StoredResponse
from .rows import messages_from_json, response_from_row, response_rows
from .sqlite_admissions import SqliteAdmissions
from .sqlite_db import SqliteDatabase, insert_sql, transaction
from .sqlite_leases import GONE, SqliteLeases, gone_params
from .sqlite_sessions import SqliteSessionStore

_RESPONSE_COLUMNS = (
    "id",
    "scope",
    "turn_id",
    "session_id",
    "previous_response_id",
    "conversation",
    "status",
    "snapshot",
    "input_items",
    "instructions",
    "messages",
    "render",
    "created_at",
    "accessed_at",
    "owner",
)


class SqliteStore(SqliteAdmissions, SqliteLeases):
    """The Store protocol on SQLite; `sessions` is the SessionStore over the same database."""

    def __init__(self, path: Path | None, *, max_responses: int = 10000, fallback_to_memory: bool = False) -> None:
        self.db = SqliteDatabase(path, fallback_to_memory=fallback_to_memory)
        self.sessions = SqliteSessionStore(self.db)
        self.max_responses = max_responses

    @property
    def durable(self) -> bool:
        return self.db.durable

    @property
    def kind(self) -> str:
        return "sqlite" if self.db.durable else "memory"

    async def open(self) -> None:
        await self.db.open()

    async def close(self) -> None:
        await self.db.close()

    # -- session-key bindings ------------------------------------------------------------------------
    async def session_for_key(self, scope: str, key: str) -> str | None:
        def find(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT session_id FROM session_keys WHERE scope = ? AND key = ?", (scope, key)
            ).fetchone()
            return row["session_id"] if row else None

        return await self.db.call(find)

    async def bind_session_key(self, scope: str, key: str, session_id: str) -> None:
        await self.db.call(
            lambda c: c.execute(
                "INSERT INTO session_keys (scope, key, session_id, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(scope, key) DO UPDATE SET session_id = excluded.session_id, "
                "updated_at = excluded.updated_at",
                (scope, key, session_id, time.time()),
            )
        )

    async def unbind_session(self, session_id: str) -> None:
        def unbind(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute("DELETE FROM session_keys WHERE session_id = ?", (session_id,))
                conn.execute("DELETE FROM session_hosts WHERE session_id = ?", (session_id,))

        await self.db.call(unbind)

    async def session_host(self, session_id: str) -> str | None:
        def find(conn: sqlite3.Connection) -> str | None:
            row = conn.execute("SELECT host FROM session_hosts WHERE session_id = ?", (session_id,)).fetchone()
            return row["host"] if row else None

        return await self.db.call(find)

    async def set_session_host(self, session_id: str, host: str) -> None:
        await self.db.call(
            lambda c: c.execute(
                "INSERT OR REPLACE INTO session_hosts (session_id, host, updated_at) VALUES (?, ?, ?)",
                (session_id, host, time.time()),
            )
        )

    # -- responses -----------------------------------------------------------------------------------
    async def put_response(self, response: StoredResponse, items: Sequence[dict[str, Any]]) -> list[Eviction]:
        now = time.time()

        def put(conn: sqlite3.Connection) -> list[Eviction]:
            # Encoded on the database thread: thousands of input items would hold the event loop (issue 20, defect 3).
            row, item_rows = response_rows(response, items, now)
            with transaction(conn):
                # An update keeps what the chain was built from (input, instructions, links) as first stored.
                conn.execute(
                    insert_sql("responses", _RESPONSE_COLUMNS) + " ON CONFLICT(id) DO UPDATE SET "
                    "status = excluded.status, snapshot = excluded.snapshot, messages = excluded.messages, "
                    "accessed_at = excluded.accessed_at",
                    row,
                )
                conn.executemany(
                    insert_sql(
                        "response_items", ("item_id", "scope", "response_id", "call_id", "item"), "INSERT OR REPLACE"
                    ),
                    item_rows,
                )
                if response.conversation is not None:
                    conn.execute(
                        "INSERT INTO conversations (scope, name, response_id, updated_at) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT(scope, name) DO UPDATE SET response_id = excluded.response_id, "
                        "updated_at = excluded.updated_at",
                        (response.scope, response.conversation, response.id, now),
                    )
                return self._evict(conn)

        return await self.db.call(put)

    def _evict(self, conn: sqlite3.Connection) -> list[Eviction]:
        count = conn.execute("SELECT COUNT(*) AS n FROM responses").fetchone()["n"]
        excess = count - self.max_responses
        if excess <= 0:
            return []
        # Unsettled responses are never evicted: their turn is still writing them.
        victims = conn.execute(
            "SELECT id, scope FROM responses WHERE status NOT IN ('queued', 'in_progress') "
            "ORDER BY accessed_at LIMIT ?",
            (excess,),
        ).fetchall()
        evicted = []
        for victim in victims:
            names = tuple(
                r["name"]
                for r in conn.execute(
                    "SELECT name FROM conversations WHERE scope = ? AND response_id = ?",
                    (victim["scope"], victim["id"]),
                )
            )
            self._delete(conn, victim["scope"], victim["id"])
            evicted.append(Eviction(victim["id"], names))
        return evicted

    @staticmethod
    def _delete(conn: sqlite3.Connection, scope: str, response_id: str) -> bool:
        row = conn.execute("SELECT turn_id FROM responses WHERE id = ? AND scope = ?", (response_id, scope)).fetchone()
        if row is None:
            return False
        conn.execute("DELETE FROM conversations WHERE scope = ? AND response_id = ?", (scope, response_id))
        conn.execute("DELETE FROM journal_events WHERE turn_id = ?", (row["turn_id"],))
        # The key stays consumed: a retry answers admission_expired instead of running the turn again.
        conn.execute(
            "UPDATE admissions SET state = 'tombstone', settled_at = ? WHERE turn_id = ?", (time.time(), row["turn_id"])
        )
        conn.execute("DELETE FROM responses WHERE id = ?", (response_id,))  # items go by ON DELETE CASCADE
        return True

    async def get_response(self, scope: str, response_id: str) -> StoredResponse | None:
        def get(conn: sqlite3.Connection) -> StoredResponse | None:
            row = conn.execute("SELECT * FROM responses WHERE id = ? AND scope = ?", (response_id, scope)).fetchone()
            if row is None:
                return None
            conn.execute("UPDATE responses SET accessed_at = ? WHERE id = ?", (time.time(), response_id))
            return response_from_row(row)

        return await self.db.call(get)

    async def delete_response(self, scope: str, response_id: str) -> bool:
        def delete(conn: sqlite3.Connection) -> bool:
            with transaction(conn):
                return self._delete(conn, scope, response_id)

        return await self.db.call(delete)

    async def conversation_head(self, scope: str, name: str) -> str | None:
        def head(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT response_id FROM conversations WHERE scope = ? AND name = ?", (scope, name)
            ).fetchone()
            return row["response_id"] if row else None

        return await self.db.call(head)

    async def chain_messages(self, scope: str, response_id: str) -> list[Message]:
        def chain(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute(
                "WITH RECURSIVE chain(id, prev, messages, depth) AS ("
                " SELECT id, previous_response_id, messages, 0 FROM responses WHERE id = ? AND scope = ?"
                " UNION ALL SELECT r.id, r.previous_response_id, r.messages, chain.depth + 1"
                " FROM responses r JOIN chain ON r.id = chain.prev WHERE r.scope = ?)"
                " SELECT messages FROM chain ORDER BY depth DESC",
                (response_id, scope, scope),
            ).fetchall()
            return [r["messages"] for r in rows]

        return [m for raw in await self.db.call(chain) for m in messages_from_json(raw)]

    async def find_item(self, scope: str, item_id: str) -> dict[str, Any] | None:
        def find(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT item FROM response_items WHERE item_id = ? AND scope = ?", (item_id, scope)
            ).fetchone()
            return row["item"] if row else None

        raw = await self.db.call(find)
        return json.loads(raw) if raw is not None else None

    async def find_tool_output(self, scope: str, call_id: str) -> str | None:
        def find(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT item FROM response_items WHERE scope = ? AND call_id = ? ORDER BY rowid DESC LIMIT 1",
                (scope, call_id),
            ).fetchone()
            return row["item"] if row else None

        raw = await self.db.call(find)
        return json.loads(raw).get("output") if raw is not None else None

    async def unsettled_responses(self, now: float, dead: Collection[str] = ()) -> list[StoredResponse]:
        params = gone_params(now, dead)

        def find(conn: sqlite3.Connection) -> list[sqlite3.Row]:
            return conn.execute(
                f"SELECT * FROM responses AS t WHERE status IN ('queued', 'in_progress') AND {GONE}", params
            ).fetchall()

        return [response_from_row(row) for row in await self.db.call(find)]


class MemoryStore(SqliteStore):
    """The same schema in memory: nothing survives a restart (`durable` is False)."""

    def __init__(self, *, max_responses: int = 10000) -> None:
        super().__init__(None, max_responses=max_responses)
