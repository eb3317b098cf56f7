"""PostgresStore: the plugin-owned state (stored Responses, conversation names, session-key bindings, admissions,
turn journals, leases and run records) in PostgreSQL, for several gateways sharing one database
(`api_server.store.url`); its feed (`postgres_feed.py`) carries LISTEN/NOTIFY between them.

The same semantics as SqliteStore, statement for statement where SQLite's single writer thread made a read-then-
write safe on its own: here concurrent requests (and other gateways) run in parallel transactions, so each such
step is one statement (`INSERT … ON CONFLICT`, `UPDATE … RETURNING`) or runs under a lock. `sessions` is the
session store over the same database. Nothing here reads or writes the `sessions`/`messages` tables.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from ..core.content import Message
from ..core.offload import LARGE_MESSAGES, off_loop
from .base import Eviction, StoredResponse
from .postgres_admissions import PostgresAdmissions
from .postgres_db import Connection, PostgresDatabase
from .postgres_feed import PostgresFeed
from .postgres_leases import GONE, PostgresLeases, gone_params
from .postgres_migrate import MIGRATION_LOCK
from .postgres_sessions import PostgresSessionStore
from .postgres_text import text_in, text_out
from .rows import messages_from_json, response_from_row, response_rows

# Serialises LRU eviction across gateways (two evicting at once would each drop the excess); not the migration lock.
EVICTION_LOCK = MIGRATION_LOCK + 1


def _response(row: dict[str, Any]) -> StoredResponse:
    """A `responses` row read back, its free text decoded (postgres_text.py)."""
    return response_from_row({**row, "instructions": text_in(row["instructions"])})


class PostgresStore(PostgresAdmissions, PostgresLeases):
    """The Store protocol on PostgreSQL; `sessions` is the SessionStore over the same database."""

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

    # -- session-key bindings ------------------------------------------------------------------------
    async def session_for_key(self, scope: str, key: str) -> str | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute(
                "SELECT session_id FROM session_keys WHERE scope = %s AND key = %s", (scope, key)
            )
            row = await cursor.fetchone()
        return row["session_id"] if row else None

    async def bind_session_key(self, scope: str, key: str, session_id: str) -> None:
        async with self.db.connection() as conn:
            await conn.execute(
                "INSERT INTO session_keys (scope, key, session_id, updated_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (scope, key) DO UPDATE SET session_id = EXCLUDED.session_id, "
                "updated_at = EXCLUDED.updated_at",
                (scope, key, session_id, time.time()),
            )

    async def unbind_session(self, session_id: str) -> None:
        async with self.db.transaction() as conn:
            await conn.execute("DELETE FROM session_keys WHERE session_id = %s", (session_id,))
            await conn.execute("DELETE FROM session_hosts WHERE session_id = %s", (session_id,))

    async def session_host(self, session_id: str) -> str | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute("SELECT host FROM session_hosts WHERE session_id = %s", (session_id,))
            row = await cursor.fetchone()
        return row["host"] if row else None

    async def set_session_host(self, session_id: str, host: str) -> None:
        async with self.db.connection() as conn:
            await conn.execute(
                "INSERT INTO session_hosts (session_id, host, updated_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (session_id) DO UPDATE SET host = EXCLUDED.host, updated_at = EXCLUDED.updated_at",
                (session_id, host, time.time()),
            )

    # -- responses -----------------------------------------------------------------------------------
    async def put_response(self, response: StoredResponse, items: Sequence[dict[str, Any]]) -> list[Eviction]:
        now = time.time()
        # thousands of input items are encoded off the event loop (issue 20, defect 3)
        row, item_rows = await off_loop(lambda: response_rows(response, items, now), len(items) > LARGE_MESSAGES)
        row["instructions"] = text_out(row["instructions"])  # free text: may hold NUL (postgres_text.py)
        async with self.db.transaction() as conn:
            # An update keeps what the chain was built from (input, instructions, links) as first stored.
            await conn.execute(
                "INSERT INTO responses (id, scope, turn_id, session_id, previous_response_id, conversation, status, "
                "snapshot, input_items, instructions, messages, render, created_at, accessed_at, owner) VALUES ("
                "%(id)s, %(scope)s, %(turn_id)s, %(session_id)s, %(previous_response_id)s, %(conversation)s, "
                "%(status)s, %(snapshot)s, %(input_items)s, %(instructions)s, %(messages)s, %(render)s, "
                "%(created_at)s, %(accessed_at)s, %(owner)s) ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, "
                "snapshot = EXCLUDED.snapshot, messages = EXCLUDED.messages, accessed_at = EXCLUDED.accessed_at",
                row,
            )
            if item_rows:
                async with conn.cursor() as cursor:
                    # `written = DEFAULT`: a rewritten item counts as written now, as SQLite's INSERT OR REPLACE
                    # gives it a new rowid.
                    await cursor.executemany(
                        "INSERT INTO response_items (item_id, scope, response_id, call_id, item) VALUES (%(item_id)s, "
                        "%(scope)s, %(response_id)s, %(call_id)s, %(item)s) ON CONFLICT (item_id) DO UPDATE SET "
                        "scope = EXCLUDED.scope, response_id = EXCLUDED.response_id, call_id = EXCLUDED.call_id, "
                        "item = EXCLUDED.item, written = DEFAULT",
                        item_rows,
                    )
            if response.conversation is not None:
                await conn.execute(
                    "INSERT INTO conversations (scope, name, response_id, updated_at) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT (scope, name) DO UPDATE SET response_id = EXCLUDED.response_id, "
                    "updated_at = EXCLUDED.updated_at",
                    (response.scope, response.conversation, response.id, now),
                )
        # Eviction in a transaction of its own: the put never waits on the eviction lock while holding row locks
        # (a second gateway evicting that very row would then wait on it: a deadlock).
        return await self._evict()

    async def _count(self, conn: Connection) -> int:
        cursor = await conn.execute("SELECT COUNT(*) AS n FROM responses")
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
                # Unsettled responses are never evicted: their turn is still writing them. A row another
                # transaction is writing right now (SKIP LOCKED) was just accessed: not the least recent.
                cursor = await conn.execute(
                    "SELECT id, scope FROM responses WHERE status NOT IN ('queued', 'in_progress') "
                    "ORDER BY accessed_at, id LIMIT %s FOR UPDATE SKIP LOCKED",
                    (excess,),
                )
                evicted = []
                for victim in await cursor.fetchall():
                    names = await conn.execute(
                        "SELECT name FROM conversations WHERE scope = %s AND response_id = %s ORDER BY name",
                        (victim["scope"], victim["id"]),
                    )
                    conversations = tuple(r["name"] for r in await names.fetchall())
                    if await self._delete(conn, victim["scope"], victim["id"]):
                        evicted.append(Eviction(victim["id"], conversations))
                return evicted

    @staticmethod
    async def _delete(conn: Connection, scope: str, response_id: str) -> bool:
        # The response row first: of two deletions of one response, the second finds nothing and changes nothing.
        cursor = await conn.execute(
            "DELETE FROM responses WHERE id = %s AND scope = %s RETURNING turn_id", (response_id, scope)
        )
        row = await cursor.fetchone()  # its items went with it (ON DELETE CASCADE)
        if row is None:
            return False
        await conn.execute("DELETE FROM conversations WHERE scope = %s AND response_id = %s", (scope, response_id))
        await conn.execute("DELETE FROM journal_events WHERE turn_id = %s", (row["turn_id"],))
        # The key stays consumed: a retry answers admission_expired instead of running the turn again.
        await conn.execute(
            "UPDATE admissions SET state = 'tombstone', settled_at = %s WHERE turn_id = %s",
            (time.time(), row["turn_id"]),
        )
        return True

    async def get_response(self, scope: str, response_id: str) -> StoredResponse | None:
        async with self.db.connection() as conn:
            # Read and mark accessed in one statement.
            cursor = await conn.execute(
                "UPDATE responses SET accessed_at = %s WHERE id = %s AND scope = %s RETURNING *",
                (time.time(), response_id, scope),
            )
            row = await cursor.fetchone()
        return _response(row) if row else None

    async def delete_response(self, scope: str, response_id: str) -> bool:
        async with self.db.transaction() as conn:
            return await self._delete(conn, scope, response_id)

    async def conversation_head(self, scope: str, name: str) -> str | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute(
                "SELECT response_id FROM conversations WHERE scope = %s AND name = %s", (scope, name)
            )
            row = await cursor.fetchone()
        return row["response_id"] if row else None

    async def chain_messages(self, scope: str, response_id: str) -> list[Message]:
        async with self.db.connection() as conn:
            cursor = await conn.execute(
                "WITH RECURSIVE chain(id, prev, messages, depth) AS ("
                " SELECT id, previous_response_id, messages, 0 FROM responses WHERE id = %s AND scope = %s"
                " UNION ALL SELECT r.id, r.previous_response_id, r.messages, chain.depth + 1"
                " FROM responses r JOIN chain ON r.id = chain.prev WHERE r.scope = %s)"
                " SELECT messages FROM chain ORDER BY depth DESC",
                (response_id, scope, scope),
            )
            rows = await cursor.fetchall()
        return [m for r in rows for m in messages_from_json(r["messages"])]

    async def find_item(self, scope: str, item_id: str) -> dict[str, Any] | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute(
                "SELECT item FROM response_items WHERE item_id = %s AND scope = %s", (item_id, scope)
            )
            row = await cursor.fetchone()
        return json.loads(row["item"]) if row else None

    async def find_tool_output(self, scope: str, call_id: str) -> str | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute(
                "SELECT item FROM response_items WHERE scope = %s AND call_id = %s ORDER BY written DESC LIMIT 1",
                (scope, call_id),
            )
            row = await cursor.fetchone()
        return json.loads(row["item"]).get("output") if row else None

    async def unsettled_responses(self, now: float, dead: Collection[str] = ()) -> list[StoredResponse]:
        async with self.db.connection() as conn:
            cursor = await conn.execute(
                f"SELECT * FROM responses AS t WHERE status IN ('queued', 'in_progress') AND {GONE}",
                gone_params(now, dead),
            )
            rows = await cursor.fetchall()
        return [_response(row) for row in rows]
