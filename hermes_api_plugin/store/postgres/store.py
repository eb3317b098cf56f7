"""PostgresStore: the plugin-owned state (stored Responses, conversation names, session keys, session placement,
idempotency records, turn journals, leases, run records and the wait keys of suspended turns) in PostgreSQL, for
several gateways sharing one database (`api_server.store.url`); its feed (`feed.py`) carries LISTEN/NOTIFY between them.

The same semantics as SqliteStore, statement for statement where SQLite's single writer thread made a read-then-
write safe on its own: here concurrent requests (and other gateways) run in parallel transactions, so each such
step is one statement (`INSERT … ON CONFLICT`, `UPDATE … RETURNING`) or runs under a lock. A reservation is one
`INSERT … ON CONFLICT DO NOTHING`: of any number of gateways reserving one key at once, exactly one inserts. Marking
what gone owners left is one `UPDATE … RETURNING`: of two gateways sweeping at once, each row goes to one of them.
Journal rows are written together with a NOTIFY per turn, so followers on other gateways wake when they commit.

`sessions` is the session store over the same database. Nothing here reads or writes the `sessions`/`messages`
tables. The statements both backends say alike are `sql/statements.py`'s; what is PostgreSQL's own is here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from ...core.content import Message
from ...core.offload import LARGE_MESSAGES, off_loop
from ..base import Eviction, Feed, IdempotencyRecord, Lease, RunRecord, StoredResponse, StoreError
from ..metered import metered
from ..rows import (
    idempotency_record_from_row,
    idempotency_record_row,
    messages_from_json,
    response_from_row,
    response_rows,
)
from ..sql import statements as S
from ..sql.statement import insert, pyformat
from .db import Connection, PostgresDatabase
from .feed import JOURNAL_CHANNEL, PostgresFeed
from .migrate import MIGRATION_LOCK
from .sessions import PostgresSessionStore
from .text import text_in, text_out

# Serialises LRU eviction across gateways (two evicting at once would each drop the excess); not the migration lock.
EVICTION_LOCK = MIGRATION_LOCK + 1
_RESERVE_ATTEMPTS = 5

# `t.owner` is one of %(dead)s (a text array), in the "owner is gone" test of the shared statements.
_DEAD = "t.owner = ANY(%(dead)s::text[])"
_UNSETTLED_RESPONSES = S.UNSETTLED_RESPONSES.postgres.format(dead=_DEAD)
_MARK_UNKNOWN_IDEMPOTENCY_RECORDS = S.MARK_UNKNOWN_IDEMPOTENCY_RECORDS.postgres.format(dead=_DEAD)
_MARK_FAILED_RUNS = S.MARK_FAILED_RUNS.postgres.format(dead=_DEAD)
# A concurrent insert of the same key makes this one wait for its commit, then do nothing.
_RESERVE = S.INSERT_IDEMPOTENCY_RECORD.postgres + " ON CONFLICT (scope, surface, key) DO NOTHING"
# `written = DEFAULT`: a rewritten item counts as written now, as SQLite's INSERT OR REPLACE gives it a new rowid.
_PUT_ITEM = pyformat(
    insert("response_items", S.ITEM_COLUMNS) + " ON CONFLICT (item_id) DO UPDATE SET scope = excluded.scope, "
    "response_id = excluded.response_id, call_id = excluded.call_id, item = excluded.item, written = DEFAULT"
)
_FIND_TOOL_OUTPUT = "SELECT item FROM response_items WHERE scope = %s AND call_id = %s ORDER BY written DESC LIMIT 1"
# Unsettled responses are never evicted: their turn is still writing them. A row another transaction is writing
# right now (SKIP LOCKED) was just accessed: not the least recent.
_EVICTION_VICTIMS = (
    "SELECT id, scope FROM responses WHERE status NOT IN ('queued', 'in_progress') "
    "ORDER BY accessed_at, id LIMIT %s FOR UPDATE SKIP LOCKED"
)
_PURGE_LEASES = "DELETE FROM leases WHERE owner = ANY(%s::text[]) AND expires_at < %s"
# Wait keys (WIRE.md §15.1): only a run still running waits; its settlement drops its keys.
_PUT_WAIT_KEYS = "INSERT INTO wait_keys (scope, key, run_id) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"
_WAITING_RUNS = (
    "SELECT w.key, r.* FROM wait_keys w JOIN runs r ON r.turn_id = w.run_id AND r.status = 'running' "
    "AND r.scope = w.scope WHERE w.scope = %(scope)s AND w.run_id IN "
    "(SELECT run_id FROM wait_keys WHERE scope = %(scope)s AND key = ANY(%(keys)s::text[])) "
    "ORDER BY r.created_at, w.key"
)
_DROP_WAIT_KEYS = "DELETE FROM wait_keys WHERE run_id = %s"
_PURGE_WAIT_KEYS = (
    "DELETE FROM wait_keys w "
    "WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.turn_id = w.run_id AND r.status = 'running')"
)
# Followers on other gateways wake when the journal rows commit, and find them (feed.py).
_NOTIFY_JOURNALS = (
    "SELECT pg_notify(%s, x.turn_id || ' ' || x.end_seq) FROM unnest(%s::text[], %s::int[]) AS x(turn_id, end_seq)"
)


def _response(row: dict[str, Any]) -> StoredResponse:
    """A `responses` row read back, its free text decoded (text.py)."""
    return response_from_row({**row, "instructions": text_in(row["instructions"])})


def _gone(now: float, dead: Collection[str]) -> dict[str, Any]:
    return {"now": now, "dead": sorted(dead)}


def _lease(row: dict[str, Any]) -> Lease:
    return Lease(**{c: row[c] for c in S.LEASE_COLUMNS})


def _run(row: dict[str, Any] | None) -> RunRecord | None:
    return RunRecord(**{c: row[c] for c in S.RUN_COLUMNS}) if row is not None else None


@metered
class PostgresStore:
    """Every plugin store role on PostgreSQL; `sessions` is the SessionStore over the same database."""

    def __init__(self, url: str, *, max_responses: int = 10000, migrations_dir: Path | None = None) -> None:
        self.db = PostgresDatabase(url, migrations_dir=migrations_dir)
        self.sessions = PostgresSessionStore(self.db)
        self.max_responses = max_responses
        self._feed = PostgresFeed(self.db)

    def __repr__(self) -> str:
        return f"PostgresStore({self.db.where})"

    @property
    def durable(self) -> bool:
        return True  # no in-memory fallback: replicas must never each keep a state of their own

    @property
    def kind(self) -> str:
        return "postgres"

    async def open(self) -> None:
        await self.db.open()

    async def close(self) -> None:
        await self._feed.close()
        await self.db.close()

    async def ping(self) -> None:
        """One round trip (`SELECT 1`) on a pooled connection; StoreError when the database does not answer
        (readiness.py asks it for `/health/detailed`)."""
        async with self.db.connection() as conn:
            await conn.execute("SELECT 1")

    # -- session keys and conversation names ---------------------------------------------------------
    async def session_for_key(self, scope: str, key: str) -> str | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute(S.SESSION_FOR_KEY.postgres, (scope, key))
            row = await cursor.fetchone()
        return row["session_id"] if row else None

    async def bind_session_key(self, scope: str, key: str, session_id: str) -> None:
        async with self.db.connection() as conn:
            await conn.execute(S.BIND_SESSION_KEY.postgres, (scope, key, session_id, time.time()))

    async def unbind_session(self, session_id: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(S.UNBIND_SESSION_KEYS.postgres, (session_id,))
            await conn.execute(S.UNPLACE_SESSION.postgres, (session_id,))

    async def conversation_head(self, scope: str, name: str) -> str | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute(S.CONVERSATION_HEAD.postgres, (scope, name))
            row = await cursor.fetchone()
        return row["response_id"] if row else None

    # -- session placement ---------------------------------------------------------------------------
    async def session_host(self, session_id: str) -> str | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute(S.SESSION_HOST.postgres, (session_id,))
            row = await cursor.fetchone()
        return row["host"] if row else None

    async def set_session_host(self, session_id: str, host: str) -> None:
        async with self.db.connection() as conn:
            await conn.execute(
                S.SET_SESSION_HOST.postgres, {"session_id": session_id, "host": host, "updated_at": time.time()}
            )

    # -- responses -----------------------------------------------------------------------------------
    async def put_response(self, response: StoredResponse, items: Sequence[dict[str, Any]]) -> list[Eviction]:
        now = time.time()
        # thousands of input items are encoded off the event loop (issue 20, defect 3)
        row, item_rows = await off_loop(lambda: response_rows(response, items, now), len(items) > LARGE_MESSAGES)
        row["instructions"] = text_out(row["instructions"])  # free text: may hold NUL (text.py)
        async with self.db.transaction() as conn:
            await conn.execute(S.PUT_RESPONSE.postgres, row)
            if item_rows:
                async with conn.cursor() as cursor:
                    await cursor.executemany(_PUT_ITEM, item_rows)
            if response.conversation is not None:
                await conn.execute(
                    S.NAME_CONVERSATION.postgres, (response.scope, response.conversation, response.id, now)
                )
        # Eviction in a transaction of its own: the put never waits on the eviction lock while holding row locks
        # (a second gateway evicting that very row would then wait on it: a deadlock).
        return await self._evict()

    async def _count(self, conn: Connection) -> int:
        cursor = await conn.execute(S.COUNT_RESPONSES.postgres)
        row = await cursor.fetchone()
        return int(row["n"]) if row else 0

    async def _evict(self) -> list[Eviction]:
        async with self.db.connection() as conn:
            if await self._count(conn) <= self.max_responses:
                return []  # the common case takes no lock
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (EVICTION_LOCK,))
                excess = await self._count(conn) - self.max_responses  # again: another gateway may have evicted
                if excess <= 0:
                    return []
                cursor = await conn.execute(_EVICTION_VICTIMS, (excess,))
                evicted = []
                for victim in await cursor.fetchall():
                    names = await conn.execute(S.CONVERSATIONS_OF.postgres, (victim["scope"], victim["id"]))
                    conversations = tuple(r["name"] for r in await names.fetchall())
                    if await self._delete(conn, victim["scope"], victim["id"]):
                        evicted.append(Eviction(victim["id"], conversations))
                return evicted

    @staticmethod
    async def _delete(conn: Connection, scope: str, response_id: str) -> bool:
        cursor = await conn.execute(S.DELETE_RESPONSE.postgres, (response_id, scope))
        row = await cursor.fetchone()  # its items went with it (ON DELETE CASCADE)
        if row is None:
            return False
        await conn.execute(S.DROP_CONVERSATIONS_OF.postgres, (scope, response_id))
        await conn.execute(S.DROP_JOURNAL.postgres, (row["turn_id"],))
        await conn.execute(S.TOMBSTONE_IDEMPOTENCY_RECORD.postgres, (time.time(), row["turn_id"]))
        return True

    async def get_response(self, scope: str, response_id: str) -> StoredResponse | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute(S.GET_RESPONSE.postgres, (time.time(), response_id, scope))
            row = await cursor.fetchone()
        return _response(row) if row else None

    async def delete_response(self, scope: str, response_id: str) -> bool:
        async with self.db.transaction() as conn:
            return await self._delete(conn, scope, response_id)

    async def chain_messages(self, scope: str, response_id: str) -> list[Message]:
        async with self.db.connection() as conn:
            cursor = await conn.execute(S.CHAIN_MESSAGES.postgres, (response_id, scope, scope))
            rows = await cursor.fetchall()
        return [m for r in rows for m in messages_from_json(r["messages"])]

    async def find_item(self, scope: str, item_id: str) -> dict[str, Any] | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute(S.FIND_ITEM.postgres, (item_id, scope))
            row = await cursor.fetchone()
        return json.loads(row["item"]) if row else None

    async def find_tool_output(self, scope: str, call_id: str) -> str | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute(_FIND_TOOL_OUTPUT, (scope, call_id))
            row = await cursor.fetchone()
        return json.loads(row["item"]).get("output") if row else None

    async def unsettled_responses(self, now: float, dead: Collection[str] = ()) -> list[StoredResponse]:
        async with self.db.connection() as conn:
            cursor = await conn.execute(_UNSETTLED_RESPONSES, _gone(now, dead))
            rows = await cursor.fetchall()
        return [_response(row) for row in rows]

    # -- idempotency records -------------------------------------------------------------------------
    async def get_idempotency_record(self, scope: str, surface: str, key: str) -> IdempotencyRecord | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute(
                S.GET_IDEMPOTENCY_RECORD.postgres, {"scope": scope, "surface": surface, "key": key}
            )
            return idempotency_record_from_row(await cursor.fetchone())

    async def reserve_idempotency_record(self, record: IdempotencyRecord) -> IdempotencyRecord | None:
        row = idempotency_record_row(record)
        async with self.db.connection() as conn:
            for _ in range(_RESERVE_ATTEMPTS):
                cursor = await conn.execute(_RESERVE, row)
                if cursor.rowcount == 1:
                    return None
                held = await conn.execute(S.GET_IDEMPOTENCY_RECORD.postgres, row)
                holder = idempotency_record_from_row(await held.fetchone())
                if holder is not None:
                    return holder
                # The holder went between the two statements (a purge): try to take the key again.
        raise StoreError(f"idempotency key {record.key!r} neither free nor held after {_RESERVE_ATTEMPTS} attempts")

    async def replace_idempotency_record(self, record: IdempotencyRecord) -> None:
        async with self.db.connection() as conn:
            await conn.execute(S.REPLACE_IDEMPOTENCY_RECORD.postgres, idempotency_record_row(record))

    async def settle_idempotency_record(self, turn_id: str) -> None:
        async with self.db.connection() as conn:
            await conn.execute(S.SETTLE_IDEMPOTENCY_RECORD.postgres, (time.time(), turn_id))

    async def mark_unknown_idempotency_records(self, now: float, dead: Collection[str] = ()) -> list[str]:
        return await self._settle_gone(_MARK_UNKNOWN_IDEMPOTENCY_RECORDS, now, dead)

    async def idempotency_record_for_turn(self, scope: str, turn_id: str) -> IdempotencyRecord | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute(S.IDEMPOTENCY_RECORD_FOR_TURN.postgres, (turn_id, scope))
            return idempotency_record_from_row(await cursor.fetchone())

    async def _settle_gone(self, statement: str, now: float, dead: Collection[str]) -> list[str]:
        """Run a "mark what gone owners left running" statement; the turn ids it marked."""
        async with self.db.connection() as conn:
            cursor = await conn.execute(statement, _gone(now, dead))
            return [r["turn_id"] for r in await cursor.fetchall()]

    # -- journals ------------------------------------------------------------------------------------
    async def append_journals(
        self, batches: Sequence[tuple[str, int, Sequence[str]]], *, awaited: bool = False
    ) -> None:
        # awaited changes nothing here: the pool's I/O is the loop's own, no thread to starve
        rows = [(turn_id, first + i, event) for turn_id, first, events in batches for i, event in enumerate(events)]
        if not rows:
            return
        ends: dict[str, int] = {}
        for turn_id, first, events in batches:
            ends[turn_id] = max(ends.get(turn_id, 0), first + len(events))
        async with self.db.transaction() as conn, conn.cursor() as cursor:
            await cursor.executemany(S.APPEND_JOURNAL.postgres, rows)
            await cursor.execute(_NOTIFY_JOURNALS, (JOURNAL_CHANNEL, list(ends), list(ends.values())))

    async def load_journal(self, turn_id: str, start: int = 0) -> list[str]:
        async with self.db.connection() as conn:
            cursor = await conn.execute(S.LOAD_JOURNAL.postgres, (turn_id, start))
            return [r["event"] for r in await cursor.fetchall()]

    # -- leases --------------------------------------------------------------------------------------
    def feed(self) -> Feed | None:
        return self._feed

    async def renew_lease(self, lease: Lease) -> None:
        async with self.db.connection() as conn:
            await conn.execute(S.RENEW_LEASE.postgres, {c: getattr(lease, c) for c in S.LEASE_COLUMNS})

    async def release_lease(self, owner: str) -> None:
        async with self.db.connection() as conn:
            await conn.execute(S.RELEASE_LEASE.postgres, (owner,))

    async def get_lease(self, owner: str) -> Lease | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute(S.GET_LEASE.postgres, (owner,))
            row = await cursor.fetchone()
        return _lease(row) if row is not None else None

    async def leases(self) -> list[Lease]:
        async with self.db.connection() as conn:
            cursor = await conn.execute(S.ALL_LEASES.postgres)
            return [_lease(r) for r in await cursor.fetchall()]

    async def purge_leases(self, owners: Collection[str], expired_before: float) -> None:
        async with self.db.connection() as conn:
            await conn.execute(_PURGE_LEASES, (sorted(owners), expired_before))

    # -- runs ----------------------------------------------------------------------------------------
    async def put_run(self, run: RunRecord) -> None:
        async with self.db.connection() as conn:
            await conn.execute(S.PUT_RUN.postgres, {c: getattr(run, c) for c in S.RUN_COLUMNS})

    async def settle_run(self, turn_id: str, status: str, settled_at: float) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(S.SETTLE_RUN.postgres, (status, settled_at, turn_id))
            await conn.execute(_DROP_WAIT_KEYS, (turn_id,))  # a settled turn waits for nothing

    async def get_run(self, scope: str, turn_id: str) -> RunRecord | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute(S.GET_RUN.postgres, (turn_id, scope))
            return _run(await cursor.fetchone())

    async def mark_unknown_runs(self, now: float, dead: Collection[str] = ()) -> list[str]:
        return await self._settle_gone(_MARK_FAILED_RUNS, now, dead)

    async def owned_unsettled(self, owner: str) -> list[str]:
        async with self.db.connection() as conn:
            cursor = await conn.execute(S.OWNED_UNSETTLED.postgres, {"o": owner})
            return [r["turn_id"] for r in await cursor.fetchall()]

    async def purge_runs(self, settled_before: float) -> None:
        before = {"before": settled_before}
        async with self.db.transaction() as conn:
            await conn.execute(S.PURGE_RUN_JOURNALS.postgres, before)
            await conn.execute(S.PURGE_RUNS.postgres, before)
            await conn.execute(_PURGE_WAIT_KEYS)  # those of runs a gone owner left (settled by recovery)

    # -- wait keys -----------------------------------------------------------------------------------
    async def put_wait_keys(self, run_id: str, scope: str, keys: Sequence[str]) -> None:
        if not keys:
            return
        async with self.db.connection() as conn, conn.cursor() as cursor:
            await cursor.executemany(_PUT_WAIT_KEYS, [(scope, key, run_id) for key in keys])

    async def waiting_runs(self, scope: str, keys: Sequence[str]) -> list[tuple[str, RunRecord]]:
        if not keys:
            return []
        async with self.db.connection() as conn:
            cursor = await conn.execute(_WAITING_RUNS, {"scope": scope, "keys": list(keys)})
            rows = await cursor.fetchall()
        return [(row["key"], RunRecord(**{c: row[c] for c in S.RUN_COLUMNS})) for row in rows]

    async def drop_wait_keys(self, run_id: str) -> None:
        async with self.db.connection() as conn:
            await conn.execute(_DROP_WAIT_KEYS, (run_id,))
