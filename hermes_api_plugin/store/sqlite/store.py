"""SqliteStore: the plugin-owned state (stored Responses, conversation names, session keys, session placement,
idempotency records, turn journals, leases and run records) in SQLite, and MemoryStore, the same in memory.

The store owns its `SqliteDatabase` (opens and closes it); `sessions` is the session store over the same
connection, so one file holds both and one thread serialises every statement: a read-then-write inside one
`transaction()` is safe on its own. Nothing here reads or writes the `sessions`/`messages` tables.

SQLite is one file on one host, so the gateways that can share it are processes of that host; they judge each
other's leases as PostgreSQL gateways do, but cannot follow each other's turns (no feed: that would take polling).
The statements both backends say alike are `sql/statements.py`'s; what is SQLite's own is here.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from ...core.content import Message
from ...core.json_text import compact
from ..base import Eviction, Feed, IdempotencyRecord, Lease, RunRecord, StoredResponse
from ..metered import metered
from ..rows import (
    idempotency_record_from_row,
    idempotency_record_row,
    messages_from_json,
    response_from_row,
    response_rows,
)
from ..sql import statements as S
from ..sql.statement import insert
from .db import SqliteDatabase, transaction
from .sessions import SqliteSessionStore

# `t.owner` is one of :dead (a JSON list), in the "owner is gone" test of the shared statements.
_DEAD = "t.owner IN (SELECT value FROM json_each(:dead))"
_UNSETTLED_RESPONSES = S.UNSETTLED_RESPONSES.sqlite.format(dead=_DEAD)
_MARK_UNKNOWN_IDEMPOTENCY_RECORDS = S.MARK_UNKNOWN_IDEMPOTENCY_RECORDS.sqlite.format(dead=_DEAD)
_MARK_FAILED_RUNS = S.MARK_FAILED_RUNS.sqlite.format(dead=_DEAD)
# A group commit's journal rows as one statement over one JSON parameter, in its own implicit transaction: one call
# into SQLite instead of BEGIN, a step per row and COMMIT — each of which lets go of the interpreter lock and takes it
# back, a thread switch with the event loop whenever the loop is busy (a stored Responses stream waits on a commit per
# batch: ~1 100 switches of the store thread per 20 000-delta stream before, ~700 after; issue 25). The turns' own rows
# never hold a raw NUL (encode_events escapes it); a row that does is written row by row, as JSON would cut it short.
_APPEND_JOURNAL = (
    "INSERT INTO journal_events (turn_id, seq, event)"
    " SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?)"
    " WHERE true ON CONFLICT (turn_id, seq) DO UPDATE SET event = excluded.event"
)
# INSERT OR REPLACE gives a rewritten item a new rowid: `find_tool_output` takes the latest write of a call.
_PUT_ITEM = insert("response_items", S.ITEM_COLUMNS, "INSERT OR REPLACE")
_FIND_TOOL_OUTPUT = "SELECT item FROM response_items WHERE scope = ? AND call_id = ? ORDER BY rowid DESC LIMIT 1"
# Unsettled responses are never evicted: their turn is still writing them.
_EVICTION_VICTIMS = (
    "SELECT id, scope FROM responses WHERE status NOT IN ('queued', 'in_progress') ORDER BY accessed_at LIMIT ?"
)
_PURGE_LEASES = "DELETE FROM leases WHERE owner IN (SELECT value FROM json_each(?)) AND expires_at < ?"


def _gone(now: float, dead: Collection[str]) -> dict[str, Any]:
    return {"now": now, "dead": json.dumps(sorted(dead))}


def _lease(row: sqlite3.Row) -> Lease:
    return Lease(**{c: row[c] for c in S.LEASE_COLUMNS})


def _run(row: sqlite3.Row | None) -> RunRecord | None:
    return RunRecord(**{c: row[c] for c in S.RUN_COLUMNS}) if row is not None else None


@metered
class SqliteStore:
    """Every plugin store role on SQLite; `sessions` is the SessionStore over the same database."""

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

    # -- session keys and conversation names ---------------------------------------------------------
    async def session_for_key(self, scope: str, key: str) -> str | None:
        def find(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(S.SESSION_FOR_KEY.sqlite, (scope, key)).fetchone()
            return row["session_id"] if row else None

        return await self.db.call(find)

    async def bind_session_key(self, scope: str, key: str, session_id: str) -> None:
        await self.db.call(lambda c: c.execute(S.BIND_SESSION_KEY.sqlite, (scope, key, session_id, time.time())))

    async def unbind_session(self, session_id: str) -> None:
        def unbind(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute(S.UNBIND_SESSION_KEYS.sqlite, (session_id,))
                conn.execute(S.UNPLACE_SESSION.sqlite, (session_id,))

        await self.db.call(unbind)

    async def conversation_head(self, scope: str, name: str) -> str | None:
        def head(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(S.CONVERSATION_HEAD.sqlite, (scope, name)).fetchone()
            return row["response_id"] if row else None

        return await self.db.call(head)

    # -- session placement ---------------------------------------------------------------------------
    async def session_host(self, session_id: str) -> str | None:
        def find(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(S.SESSION_HOST.sqlite, (session_id,)).fetchone()
            return row["host"] if row else None

        return await self.db.call(find)

    async def set_session_host(self, session_id: str, host: str) -> None:
        row = {"session_id": session_id, "host": host, "updated_at": time.time()}
        await self.db.call(lambda c: c.execute(S.SET_SESSION_HOST.sqlite, row))

    # -- responses -----------------------------------------------------------------------------------
    async def put_response(self, response: StoredResponse, items: Sequence[dict[str, Any]]) -> list[Eviction]:
        now = time.time()

        def put(conn: sqlite3.Connection) -> list[Eviction]:
            # Encoded on the database thread: thousands of input items would hold the event loop (issue 20, defect 3).
            row, item_rows = response_rows(response, items, now)
            conn.execute(S.PUT_RESPONSE.sqlite, row)
            conn.executemany(_PUT_ITEM, item_rows)
            if response.conversation is not None:
                conn.execute(S.NAME_CONVERSATION.sqlite, (response.scope, response.conversation, response.id, now))
            return self._evict(conn)

        # Group-committed with the other stored Responses and transcripts of the moment (db.py): a Response is put
        # twice per turn (admitted, settled), and a commit of its own each was most of what a stored stream cost.
        return await self.db.grouped(put)

    def _evict(self, conn: sqlite3.Connection) -> list[Eviction]:
        excess = conn.execute(S.COUNT_RESPONSES.sqlite).fetchone()["n"] - self.max_responses
        if excess <= 0:
            return []
        evicted = []
        for victim in conn.execute(_EVICTION_VICTIMS, (excess,)).fetchall():
            names = tuple(r["name"] for r in conn.execute(S.CONVERSATIONS_OF.sqlite, (victim["scope"], victim["id"])))
            if self._delete(conn, victim["scope"], victim["id"]):
                evicted.append(Eviction(victim["id"], names))
        return evicted

    @staticmethod
    def _delete(conn: sqlite3.Connection, scope: str, response_id: str) -> bool:
        # fetchall: a RETURNING statement is done (its changes made) once every row is read
        rows = conn.execute(S.DELETE_RESPONSE.sqlite, (response_id, scope)).fetchall()
        if not rows:
            return False
        turn_id = rows[0]["turn_id"]  # its items went with it (ON DELETE CASCADE)
        conn.execute(S.DROP_CONVERSATIONS_OF.sqlite, (scope, response_id))
        conn.execute(S.DROP_JOURNAL.sqlite, (turn_id,))
        conn.execute(S.TOMBSTONE_IDEMPOTENCY_RECORD.sqlite, (time.time(), turn_id))
        return True

    async def get_response(self, scope: str, response_id: str) -> StoredResponse | None:
        def get(conn: sqlite3.Connection) -> sqlite3.Row | None:
            rows = conn.execute(S.GET_RESPONSE.sqlite, (time.time(), response_id, scope)).fetchall()
            return rows[0] if rows else None

        row = await self.db.call(get)
        return response_from_row(row) if row is not None else None

    async def delete_response(self, scope: str, response_id: str) -> bool:
        def delete(conn: sqlite3.Connection) -> bool:
            with transaction(conn):
                return self._delete(conn, scope, response_id)

        return await self.db.call(delete)

    async def chain_messages(self, scope: str, response_id: str) -> list[Message]:
        def chain(conn: sqlite3.Connection) -> list[str]:
            return [r["messages"] for r in conn.execute(S.CHAIN_MESSAGES.sqlite, (response_id, scope, scope))]

        return [m for raw in await self.db.call(chain) for m in messages_from_json(raw)]

    async def find_item(self, scope: str, item_id: str) -> dict[str, Any] | None:
        def find(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(S.FIND_ITEM.sqlite, (item_id, scope)).fetchone()
            return row["item"] if row else None

        raw = await self.db.call(find)
        return json.loads(raw) if raw is not None else None

    async def find_tool_output(self, scope: str, call_id: str) -> str | None:
        def find(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(_FIND_TOOL_OUTPUT, (scope, call_id)).fetchone()
            return row["item"] if row else None

        raw = await self.db.call(find)
        return json.loads(raw).get("output") if raw is not None else None

    async def unsettled_responses(self, now: float, dead: Collection[str] = ()) -> list[StoredResponse]:
        params = _gone(now, dead)
        rows = await self.db.call(lambda c: c.execute(_UNSETTLED_RESPONSES, params).fetchall())
        return [response_from_row(row) for row in rows]

    # -- idempotency records -------------------------------------------------------------------------
    async def get_idempotency_record(self, scope: str, surface: str, key: str) -> IdempotencyRecord | None:
        where = {"scope": scope, "surface": surface, "key": key}
        return await self.db.call(
            lambda c: idempotency_record_from_row(c.execute(S.GET_IDEMPOTENCY_RECORD.sqlite, where).fetchone())
        )

    async def reserve_idempotency_record(self, record: IdempotencyRecord) -> IdempotencyRecord | None:
        row = idempotency_record_row(record)

        def reserve(conn: sqlite3.Connection) -> IdempotencyRecord | None:
            with transaction(conn):  # read and insert under one write lock: one reservation wins
                existing = conn.execute(S.GET_IDEMPOTENCY_RECORD.sqlite, row).fetchone()
                if existing is not None:
                    return idempotency_record_from_row(existing)
                conn.execute(S.INSERT_IDEMPOTENCY_RECORD.sqlite, row)
                return None

        return await self.db.call(reserve)

    async def replace_idempotency_record(self, record: IdempotencyRecord) -> None:
        row = idempotency_record_row(record)
        await self.db.call(lambda c: c.execute(S.REPLACE_IDEMPOTENCY_RECORD.sqlite, row))

    async def settle_idempotency_record(self, turn_id: str) -> None:
        await self.db.call(lambda c: c.execute(S.SETTLE_IDEMPOTENCY_RECORD.sqlite, (time.time(), turn_id)))

    async def mark_unknown_idempotency_records(self, now: float, dead: Collection[str] = ()) -> list[str]:
        return await self._settle_gone(_MARK_UNKNOWN_IDEMPOTENCY_RECORDS, now, dead)

    async def idempotency_record_for_turn(self, scope: str, turn_id: str) -> IdempotencyRecord | None:
        return await self.db.call(
            lambda c: idempotency_record_from_row(
                c.execute(S.IDEMPOTENCY_RECORD_FOR_TURN.sqlite, (turn_id, scope)).fetchone()
            )
        )

    async def _settle_gone(self, statement: str, now: float, dead: Collection[str]) -> list[str]:
        """Run a "mark what gone owners left running" statement in one transaction; the turn ids it marked."""
        params = _gone(now, dead)

        def mark(conn: sqlite3.Connection) -> list[str]:
            with transaction(conn):
                return [r["turn_id"] for r in conn.execute(statement, params).fetchall()]

        return await self.db.call(mark)

    # -- journals ------------------------------------------------------------------------------------
    async def append_journals(
        self, batches: Sequence[tuple[str, int, Sequence[str]]], *, awaited: bool = False
    ) -> None:
        rows = [(turn_id, first + i, event) for turn_id, first, events in batches for i, event in enumerate(events)]

        def append(conn: sqlite3.Connection) -> None:
            if any("\x00" in row[2] for row in rows):  # SQLite's JSON functions end a text at NUL: row by row
                with transaction(conn):
                    conn.executemany(S.APPEND_JOURNAL.sqlite, rows)
            else:
                conn.execute(_APPEND_JOURNAL, (compact(rows),))

        # awaited: the loop holds still for the commit, or a busy loop starves the database thread (db.py)
        await self.db.call(append, handoff=awaited)

    async def load_journal(self, turn_id: str, start: int = 0) -> list[str]:
        return await self.db.call(lambda c: [r["event"] for r in c.execute(S.LOAD_JOURNAL.sqlite, (turn_id, start))])

    # -- leases --------------------------------------------------------------------------------------
    def feed(self) -> Feed | None:
        return None  # one host, no notifications: a turn another process runs cannot be followed

    async def renew_lease(self, lease: Lease) -> None:
        row = {c: getattr(lease, c) for c in S.LEASE_COLUMNS}
        await self.db.call(lambda c: c.execute(S.RENEW_LEASE.sqlite, row))

    async def release_lease(self, owner: str) -> None:
        await self.db.call(lambda c: c.execute(S.RELEASE_LEASE.sqlite, (owner,)))

    async def get_lease(self, owner: str) -> Lease | None:
        def get(conn: sqlite3.Connection) -> Lease | None:
            row = conn.execute(S.GET_LEASE.sqlite, (owner,)).fetchone()
            return _lease(row) if row is not None else None

        return await self.db.call(get)

    async def leases(self) -> list[Lease]:
        return await self.db.call(lambda c: [_lease(r) for r in c.execute(S.ALL_LEASES.sqlite)])

    async def purge_leases(self, owners: Collection[str], expired_before: float) -> None:
        params = (json.dumps(sorted(owners)), expired_before)
        await self.db.call(lambda c: c.execute(_PURGE_LEASES, params))

    # -- runs ----------------------------------------------------------------------------------------
    async def put_run(self, run: RunRecord) -> None:
        row = {c: getattr(run, c) for c in S.RUN_COLUMNS}
        await self.db.call(lambda c: c.execute(S.PUT_RUN.sqlite, row))

    async def settle_run(self, turn_id: str, status: str, settled_at: float) -> None:
        await self.db.call(lambda c: c.execute(S.SETTLE_RUN.sqlite, (status, settled_at, turn_id)))

    async def get_run(self, scope: str, turn_id: str) -> RunRecord | None:
        return await self.db.call(lambda c: _run(c.execute(S.GET_RUN.sqlite, (turn_id, scope)).fetchone()))

    async def mark_unknown_runs(self, now: float, dead: Collection[str] = ()) -> list[str]:
        return await self._settle_gone(_MARK_FAILED_RUNS, now, dead)

    async def owned_unsettled(self, owner: str) -> list[str]:
        return await self.db.call(lambda c: [r["turn_id"] for r in c.execute(S.OWNED_UNSETTLED.sqlite, {"o": owner})])

    async def purge_runs(self, settled_before: float) -> None:
        before = {"before": settled_before}

        def purge(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute(S.PURGE_RUN_JOURNALS.sqlite, before)
                conn.execute(S.PURGE_RUNS.sqlite, before)

        await self.db.call(purge)

    # -- wait keys: a SQLite store is never shared by gateways at once, so every suspended turn is found in the
    # registry of the process that runs it; nothing needs looking up across processes (roles.WaitStore).
    async def put_wait_keys(self, run_id: str, scope: str, keys: Sequence[str]) -> None:
        pass

    async def waiting_runs(self, scope: str, keys: Sequence[str]) -> list[tuple[str, RunRecord]]:
        return []

    async def drop_wait_keys(self, run_id: str) -> None:
        pass


class MemoryStore(SqliteStore):
    """The same schema in memory: nothing survives a restart (`durable` is False)."""

    def __init__(self, *, max_responses: int = 10000) -> None:
        super().__init__(None, max_responses=max_responses)
