"""Leases and run records of the SQLite store (issue 15): the same contract as PostgreSQL's, for one host.

SQLite is one file on one host, so the gateways that can share it are processes of that host; they judge each
other's leases as PostgreSQL gateways do, but cannot follow each other's turns (no feed: that would take polling).
`GONE` is the SQL test "this row's owner is gone" shared with the admission and response queries.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection
from typing import Any

from .base import Feed, Lease, RunRecord
from .sqlite_db import SqliteDatabase, insert_sql, transaction

# A row (alias `t`) whose owner holds no lease valid at :now, or is one of :dead (a JSON list).
GONE = (
    "(t.owner IS NULL OR t.owner IN (SELECT value FROM json_each(:dead)) OR NOT EXISTS "
    "(SELECT 1 FROM leases l WHERE l.owner = t.owner AND l.expires_at >= :now))"
)
_LEASE_COLUMNS = ("owner", "expires_at", "space", "pid", "host", "renewed_at")
_RUN_COLUMNS = ("turn_id", "scope", "owner", "surface", "session_id", "model", "status", "created_at", "settled_at")


def gone_params(now: float, dead: Collection[str]) -> dict[str, Any]:
    return {"now": now, "dead": json.dumps(sorted(dead))}


async def settle_gone(
    db: SqliteDatabase, table: str, settle: str, running: str, now: float, dead: Collection[str]
) -> list[str]:
    """The rows of `table` still `running` whose owner is gone get `settle` and `settled_at = now`, in one
    transaction; returns their turn ids. `table`, `settle` and `running` are the caller's SQL constants."""
    params = gone_params(now, dead)

    def mark(conn: sqlite3.Connection) -> list[str]:
        with transaction(conn):
            return [
                r["turn_id"]
                for r in conn.execute(
                    f"UPDATE {table} AS t SET {settle}, settled_at = :now WHERE {running} AND {GONE} RETURNING turn_id",
                    params,
                ).fetchall()
            ]

    return await db.call(mark)


def _lease(row: sqlite3.Row) -> Lease:
    return Lease(**{c: row[c] for c in _LEASE_COLUMNS})


def _run(row: sqlite3.Row | None) -> RunRecord | None:
    return RunRecord(**{c: row[c] for c in _RUN_COLUMNS}) if row is not None else None


class SqliteLeases:
    """The lease and run-record methods of the Store protocol, over `self.db`."""

    db: SqliteDatabase

    def feed(self) -> Feed | None:
        return None  # one host, no notifications: a turn another process runs cannot be followed

    async def renew_lease(self, lease: Lease) -> None:
        row = {c: getattr(lease, c) for c in _LEASE_COLUMNS}
        await self.db.call(lambda c: c.execute(insert_sql("leases", _LEASE_COLUMNS, "INSERT OR REPLACE"), row))

    async def release_lease(self, owner: str) -> None:
        await self.db.call(lambda c: c.execute("DELETE FROM leases WHERE owner = ?", (owner,)))

    async def get_lease(self, owner: str) -> Lease | None:
        def get(conn: sqlite3.Connection) -> Lease | None:
            row = conn.execute("SELECT * FROM leases WHERE owner = ?", (owner,)).fetchone()
            return _lease(row) if row is not None else None

        return await self.db.call(get)

    async def leases(self) -> list[Lease]:
        return await self.db.call(lambda c: [_lease(r) for r in c.execute("SELECT * FROM leases ORDER BY owner")])

    async def purge_leases(self, owners: Collection[str], expired_before: float) -> None:
        params = (json.dumps(sorted(owners)), expired_before)
        await self.db.call(
            lambda c: c.execute(
                "DELETE FROM leases WHERE owner IN (SELECT value FROM json_each(?)) AND expires_at < ?", params
            )
        )

    async def put_run(self, run: RunRecord) -> None:
        row = {c: getattr(run, c) for c in _RUN_COLUMNS}
        await self.db.call(lambda c: c.execute(insert_sql("runs", _RUN_COLUMNS, "INSERT OR REPLACE"), row))

    async def settle_run(self, turn_id: str, status: str, settled_at: float) -> None:
        await self.db.call(
            lambda c: c.execute(
                "UPDATE runs SET status = ?, settled_at = ? WHERE turn_id = ? AND status = 'running'",
                (status, settled_at, turn_id),
            )
        )

    async def get_run(self, scope: str, turn_id: str) -> RunRecord | None:
        return await self.db.call(
            lambda c: _run(c.execute("SELECT * FROM runs WHERE turn_id = ? AND scope = ?", (turn_id, scope)).fetchone())
        )

    async def mark_unknown_runs(self, now: float, dead: Collection[str] = ()) -> list[str]:
        return await settle_gone(self.db, "runs", "status = 'failed'", "status = 'running'", now, dead)

    async def owned_unsettled(self, owner: str) -> list[str]:
        return await self.db.call(
            lambda c: [
                r["turn_id"]
                for r in c.execute(
                    "SELECT turn_id FROM admissions WHERE state = 'running' AND owner = :o UNION "
                    "SELECT turn_id FROM runs WHERE status = 'running' AND owner = :o UNION "
                    "SELECT turn_id FROM responses WHERE status IN ('queued', 'in_progress') AND owner = :o "
                    "ORDER BY turn_id",
                    {"o": owner},
                )
            ]
        )

    async def purge_runs(self, settled_before: float) -> None:
        def purge(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute(
                    "DELETE FROM journal_events WHERE turn_id IN (SELECT r.turn_id FROM runs r "
                    "WHERE r.status <> 'running' AND r.settled_at < ? "
                    "AND NOT EXISTS (SELECT 1 FROM admissions a WHERE a.turn_id = r.turn_id) "
                    "AND NOT EXISTS (SELECT 1 FROM responses s WHERE s.turn_id = r.turn_id))",
                    (settled_before,),
                )
                conn.execute("DELETE FROM runs WHERE status <> 'running' AND settled_at < ?", (settled_before,))

        await self.db.call(purge)
