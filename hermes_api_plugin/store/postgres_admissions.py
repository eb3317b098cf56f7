"""Idempotency and turn journals of the PostgreSQL store: the durable half of idempotency (WIRE.md §5.4).

A reservation is one `INSERT … ON CONFLICT DO NOTHING`: of any number of gateways reserving one key at once,
exactly one inserts; the others read the record that holds it. Journal rows are written together with a NOTIFY
per turn, so followers on other gateways wake when they commit.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence

from .base import IdempotencyRecord, StoreError
from .postgres_db import PostgresDatabase
from .postgres_feed import JOURNAL_CHANNEL
from .postgres_leases import settle_gone
from .rows import admission_from_row, admission_row

_COLUMNS = ("scope", "surface", "key", "identity", "target", "state", "turn_id", "reply", "owner", "created_at")
_INSERT = (
    f"INSERT INTO admissions ({', '.join(_COLUMNS)}, settled_at) "
    f"VALUES ({', '.join(f'%({c})s' for c in _COLUMNS)}, %(settled_at)s)"
)
_RESERVE_ATTEMPTS = 5


class PostgresAdmissions:
    """The admission and journal methods of the Store protocol, over `self.db`."""

    db: PostgresDatabase

    async def get_admission(self, scope: str, surface: str, key: str) -> IdempotencyRecord | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute(
                "SELECT * FROM admissions WHERE scope = %s AND surface = %s AND key = %s", (scope, surface, key)
            )
            return admission_from_row(await cursor.fetchone())

    async def reserve_admission(self, record: IdempotencyRecord) -> IdempotencyRecord | None:
        row = admission_row(record)
        async with self.db.connection() as conn:
            for _ in range(_RESERVE_ATTEMPTS):
                # A concurrent insert of the same key makes this one wait for its commit, then do nothing.
                cursor = await conn.execute(_INSERT + " ON CONFLICT (scope, surface, key) DO NOTHING", row)
                if cursor.rowcount == 1:
                    return None
                held = await conn.execute(
                    "SELECT * FROM admissions WHERE scope = %(scope)s AND surface = %(surface)s AND key = %(key)s", row
                )
                holder = admission_from_row(await held.fetchone())
                if holder is not None:
                    return holder
                # The holder went between the two statements (a purge): try to take the key again.
        raise StoreError(f"admission key {record.key!r} neither free nor held after {_RESERVE_ATTEMPTS} attempts")

    async def replace_admission(self, record: IdempotencyRecord) -> None:
        row = admission_row(record)
        updates = ", ".join(
            f"{c} = EXCLUDED.{c}" for c in (*_COLUMNS, "settled_at") if c not in ("scope", "surface", "key")
        )
        async with self.db.connection() as conn:
            await conn.execute(f"{_INSERT} ON CONFLICT (scope, surface, key) DO UPDATE SET {updates}", row)

    async def settle_admission(self, turn_id: str) -> None:
        async with self.db.connection() as conn:
            await conn.execute(
                "UPDATE admissions SET state = 'settled', settled_at = %s WHERE turn_id = %s AND state = 'running'",
                (time.time(), turn_id),
            )

    async def mark_unknown_admissions(self, now: float, dead: Collection[str] = ()) -> list[str]:
        return await settle_gone(self.db, "admissions", "state = 'unknown'", "state = 'running'", now, dead)

    async def admission_for_turn(self, scope: str, turn_id: str) -> IdempotencyRecord | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute("SELECT * FROM admissions WHERE turn_id = %s AND scope = %s", (turn_id, scope))
            return admission_from_row(await cursor.fetchone())

    # -- journals ------------------------------------------------------------------------------------
    async def append_journals(self, batches: Sequence[tuple[str, int, Sequence[str]]]) -> None:
        rows = [(turn_id, first + i, event) for turn_id, first, events in batches for i, event in enumerate(events)]
        if not rows:
            return
        ends: dict[str, int] = {}
        for turn_id, first, events in batches:
            ends[turn_id] = max(ends.get(turn_id, 0), first + len(events))
        async with self.db.transaction() as conn, conn.cursor() as cursor:
            # Writing a sequence number again replaces that event: a retried batch is harmless.
            await cursor.executemany(
                "INSERT INTO journal_events (turn_id, seq, event) VALUES (%s, %s, %s) "
                "ON CONFLICT (turn_id, seq) DO UPDATE SET event = EXCLUDED.event",
                rows,
            )
            # Followers on other gateways wake when this commits, and find the rows (postgres_feed.py).
            await cursor.execute(
                "SELECT pg_notify(%s, x.turn_id || ' ' || x.end_seq) FROM unnest(%s::text[], %s::int[]) "
                "AS x(turn_id, end_seq)",
                (JOURNAL_CHANNEL, list(ends), list(ends.values())),
            )

    async def load_journal(self, turn_id: str, start: int = 0) -> list[str]:
        async with self.db.connection() as conn:
            cursor = await conn.execute(
                "SELECT event FROM journal_events WHERE turn_id = %s AND seq >= %s ORDER BY seq", (turn_id, start)
            )
            return [r["event"] for r in await cursor.fetchall()]
