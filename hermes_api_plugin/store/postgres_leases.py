"""Leases and run records of the PostgreSQL store (issue 15), and its feed: what lets several gateways share it.

`GONE` is the SQL test "this row's owner is gone" (no lease valid at `now`, or named dead by the caller) shared with
the admission and response queries. Marking is one `UPDATE … RETURNING`: of two gateways sweeping at once, each row
goes to one of them (the second re-checks `status = 'running'` after the first commits and skips it).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from .base import Feed, Lease, RunRecord
from .postgres_db import PostgresDatabase
from .postgres_feed import PostgresFeed

# A row (alias `t`) whose owner holds no lease valid at %(now)s, or is one of %(dead)s.
GONE = (
    "(t.owner IS NULL OR t.owner = ANY(%(dead)s::text[]) OR NOT EXISTS "
    "(SELECT 1 FROM leases l WHERE l.owner = t.owner AND l.expires_at >= %(now)s))"
)
_LEASE_COLUMNS = ("owner", "expires_at", "space", "pid", "host", "renewed_at")
_RUN_COLUMNS = ("turn_id", "scope", "owner", "surface", "session_id", "model", "status", "created_at", "settled_at")


def gone_params(now: float, dead: Collection[str]) -> dict[str, Any]:
    return {"now": now, "dead": sorted(dead)}


async def settle_gone(
    db: PostgresDatabase, table: str, settle: str, running: str, now: float, dead: Collection[str]
) -> list[str]:
    """The rows of `table` still `running` whose owner is gone get `settle` and `settled_at = now`, in one
    statement; returns their turn ids. `table`, `settle` and `running` are the caller's SQL constants."""
    async with db.connection() as conn:
        cursor = await conn.execute(
            f"UPDATE {table} AS t SET {settle}, settled_at = %(now)s WHERE {running} AND {GONE} RETURNING turn_id",
            gone_params(now, dead),
        )
        return [r["turn_id"] for r in await cursor.fetchall()]


def _insert(table: str, columns: tuple[str, ...]) -> str:
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(f'%({c})s' for c in columns)})"


def _lease(row: dict[str, Any]) -> Lease:
    return Lease(**{c: row[c] for c in _LEASE_COLUMNS})


def _run(row: dict[str, Any] | None) -> RunRecord | None:
    return RunRecord(**{c: row[c] for c in _RUN_COLUMNS}) if row is not None else None


class PostgresLeases:
    """The lease, run-record and feed methods of the Store protocol, over `self.db`."""

    db: PostgresDatabase
    _feed: PostgresFeed

    def feed(self) -> Feed | None:
        return self._feed

    async def renew_lease(self, lease: Lease) -> None:
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in _LEASE_COLUMNS[1:])
        async with self.db.connection() as conn:
            await conn.execute(
                f"{_insert('leases', _LEASE_COLUMNS)} ON CONFLICT (owner) DO UPDATE SET {updates}",
                {c: getattr(lease, c) for c in _LEASE_COLUMNS},
            )

    async def release_lease(self, owner: str) -> None:
        async with self.db.connection() as conn:
            await conn.execute("DELETE FROM leases WHERE owner = %s", (owner,))

    async def get_lease(self, owner: str) -> Lease | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute("SELECT * FROM leases WHERE owner = %s", (owner,))
            row = await cursor.fetchone()
        return _lease(row) if row is not None else None

    async def leases(self) -> list[Lease]:
        async with self.db.connection() as conn:
            cursor = await conn.execute("SELECT * FROM leases ORDER BY owner")
            return [_lease(r) for r in await cursor.fetchall()]

    async def purge_leases(self, owners: Collection[str], expired_before: float) -> None:
        async with self.db.connection() as conn:
            await conn.execute(
                "DELETE FROM leases WHERE owner = ANY(%s::text[]) AND expires_at < %s", (sorted(owners), expired_before)
            )

    async def put_run(self, run: RunRecord) -> None:
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in _RUN_COLUMNS[1:])
        async with self.db.connection() as conn:
            await conn.execute(
                f"{_insert('runs', _RUN_COLUMNS)} ON CONFLICT (turn_id) DO UPDATE SET {updates}",
                {c: getattr(run, c) for c in _RUN_COLUMNS},
            )

    async def settle_run(self, turn_id: str, status: str, settled_at: float) -> None:
        async with self.db.connection() as conn:
            await conn.execute(
                "UPDATE runs SET status = %s, settled_at = %s WHERE turn_id = %s AND status = 'running'",
                (status, settled_at, turn_id),
            )

    async def get_run(self, scope: str, turn_id: str) -> RunRecord | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute("SELECT * FROM runs WHERE turn_id = %s AND scope = %s", (turn_id, scope))
            return _run(await cursor.fetchone())

    async def mark_unknown_runs(self, now: float, dead: Collection[str] = ()) -> list[str]:
        return await settle_gone(self.db, "runs", "status = 'failed'", "status = 'running'", now, dead)

    async def owned_unsettled(self, owner: str) -> list[str]:
        async with self.db.connection() as conn:
            cursor = await conn.execute(
                "SELECT turn_id FROM admissions WHERE state = 'running' AND owner = %(o)s UNION "
                "SELECT turn_id FROM runs WHERE status = 'running' AND owner = %(o)s UNION "
                "SELECT turn_id FROM responses WHERE status IN ('queued', 'in_progress') AND owner = %(o)s "
                "ORDER BY turn_id",
                {"o": owner},
            )
            return [r["turn_id"] for r in await cursor.fetchall()]

    async def purge_runs(self, settled_before: float) -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "DELETE FROM journal_events WHERE turn_id IN (SELECT r.turn_id FROM runs r "
                "WHERE r.status <> 'running' AND r.settled_at < %(before)s "
                "AND NOT EXISTS (SELECT 1 FROM admissions a WHERE a.turn_id = r.turn_id) "
                "AND NOT EXISTS (SELECT 1 FROM responses s WHERE s.turn_id = r.turn_id))",
                {"before": settled_before},
            )
            await conn.execute(
                "DELETE FROM runs WHERE status <> 'running' AND settled_at < %(before)s", {"before": settled_before}
            )
