"""PostgreSQL schema migrations: the numbered `postgres/migrations/NNNN_name.sql` files (`sql/migrations.py`), each
applied in one transaction together with its row in `schema_migrations`.

Gateways sharing one database may start at the same moment: the whole run holds a session advisory lock, so one
gateway migrates while the others wait, then find every version recorded and apply nothing. (Not
`CREATE TABLE IF NOT EXISTS` alone: two sessions creating one table at once can still collide in the catalog.)
"""

from __future__ import annotations

import logging
import time
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from ..sql.migrations import Migration
from ..sql.statements import MIGRATIONS_APPLIED, RECORD_MIGRATION

log = logging.getLogger("hermes_api_plugin")

# The bundled migrations (package data: `store/postgres/migrations/NNNN_name.sql`).
BUNDLED: Traversable = resources.files("hermes_api_plugin.store.postgres.migrations")
# One key for every gateway of this plugin migrating a database: "hermes" in ASCII, a bigint.
MIGRATION_LOCK = 0x6865726D6573


async def applied_versions(conn: psycopg.AsyncConnection[Any]) -> dict[int, str]:
    """version → file name of every recorded migration (empty before the first)."""
    async with conn.cursor(row_factory=tuple_row) as cursor:
        await cursor.execute("SELECT to_regclass('schema_migrations') IS NOT NULL")
        exists = await cursor.fetchone()
        if exists is None or not exists[0]:
            return {}
        await cursor.execute(MIGRATIONS_APPLIED.postgres)
        return {int(version): str(name) for version, name in await cursor.fetchall()}


async def migrate(conn: psycopg.AsyncConnection[Any], migrations: list[Migration]) -> list[int]:
    """Apply every migration not yet recorded; returns the versions applied. `conn` must be in autocommit, so
    the transactions here are the only ones, and is used by nothing else meanwhile."""
    await conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL)"
        )
        recorded = await applied_versions(conn)
        applied: list[int] = []
        for migration in migrations:
            if migration.version in recorded:
                continue
            async with conn.transaction():
                # No parameters: psycopg sends the file as one simple query, every statement in it, in order.
                await conn.execute(migration.sql.encode("utf-8"))
                await conn.execute(RECORD_MIGRATION.postgres, (migration.version, migration.name, time.time()))
            applied.append(migration.version)
            log.info("[API Server] store migration %s applied (PostgreSQL)", migration.name)
        unknown = sorted(set(recorded) - {m.version for m in migrations})
        if unknown:
            # A newer gateway on the same database: its schema is a superset, this one reads on.
            log.warning("[API Server] the PostgreSQL store has migrations this version does not know: %s", unknown)
        return applied
    finally:
        if not conn.closed:
            try:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
            except psycopg.Error:
                pass  # the session ends with the connection, and the lock with it
