"""Idempotency and turn journals of the SQLite store: the durable half of idempotency (WIRE.md §5.4)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Collection, Sequence

from .base import IdempotencyRecord
from .rows import admission_from_row, admission_row
from .sqlite_db import SqliteDatabase, insert_sql, transaction
from .sqlite_leases import settle_gone

_ADMISSION_COLUMNS = (
    "scope",
    "surface",
    "key",
    "identity",
    "target",
    "state",
    "turn_id",
    "reply",
    "owner",
    "created_at",
    "settled_at",
)


class SqliteAdmissions:
    """The admission and journal methods of the Store protocol, over `self.db`."""

    db: SqliteDatabase

    async def get_admission(self, scope: str, surface: str, key: str) -> IdempotencyRecord | None:
        return await self.db.call(
            lambda c: admission_from_row(
                c.execute(
                    "SELECT * FROM admissions WHERE scope = ? AND surface = ? AND key = ?", (scope, surface, key)
                ).fetchone()
            )
        )

    async def reserve_admission(self, record: IdempotencyRecord) -> IdempotencyRecord | None:
        row = admission_row(record)

        def reserve(conn: sqlite3.Connection) -> IdempotencyRecord | None:
            with transaction(conn):  # read and insert under one write lock: one reservation wins
                existing = conn.execute(
                    "SELECT * FROM admissions WHERE scope = :scope AND surface = :surface AND key = :key", row
                ).fetchone()
                if existing is not None:
                    return admission_from_row(existing)
                conn.execute(insert_sql("admissions", _ADMISSION_COLUMNS), row)
                return None

        return await self.db.call(reserve)

    async def replace_admission(self, record: IdempotencyRecord) -> None:
        row = admission_row(record)
        await self.db.call(lambda c: c.execute(insert_sql("admissions", _ADMISSION_COLUMNS, "INSERT OR REPLACE"), row))

    async def settle_admission(self, turn_id: str) -> None:
        await self.db.call(
            lambda c: c.execute(
                "UPDATE admissions SET state = 'settled', settled_at = ? WHERE turn_id = ? AND state = 'running'",
                (time.time(), turn_id),
            )
        )

    async def mark_unknown_admissions(self, now: float, dead: Collection[str] = ()) -> list[str]:
        return await settle_gone(self.db, "admissions", "state = 'unknown'", "state = 'running'", now, dead)

    async def admission_for_turn(self, scope: str, turn_id: str) -> IdempotencyRecord | None:
        return await self.db.call(
            lambda c: admission_from_row(
                c.execute("SELECT * FROM admissions WHERE turn_id = ? AND scope = ?", (turn_id, scope)).fetchone()
            )
        )

    # -- journals ------------------------------------------------------------------------------------
    async def append_journals(self, batches: Sequence[tuple[str, int, Sequence[str]]]) -> None:
        rows = [(turn_id, first + i, event) for turn_id, first, events in batches for i, event in enumerate(events)]

        def append(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.executemany("INSERT OR REPLACE INTO journal_events (turn_id, seq, event) VALUES (?, ?, ?)", rows)

        await self.db.call(append)

    async def load_journal(self, turn_id: str, start: int = 0) -> list[str]:
        def load(conn: sqlite3.Connection) -> list[str]:
            return [
                r["event"]
                for r in conn.execute(
                    "SELECT event FROM journal_events WHERE turn_id = ? AND seq >= ? ORDER BY seq", (turn_id, start)
                )
            ]

        return await self.db.call(load)
