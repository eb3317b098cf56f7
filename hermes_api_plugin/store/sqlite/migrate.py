"""SQLite schema migrations: the numbered `sqlite/migrations/NNNN_name.sql` files (`sql/migrations.py`), each
applied atomically and recorded.

A file is split into statements with `sqlite3.complete_statement` (so a `;` inside a string, a comment
or a trigger body does not cut it) and run inside one explicit `BEGIN IMMEDIATE … COMMIT` together with
its row in `schema_migrations`: a file that fails leaves the database at the previous version. (Not
`executescript`: it commits on its own and would leave a half-applied file behind.)

Databases written before `schema_migrations` existed recorded their versions in `schema_version
(version, applied_at)`; those rows are adopted once, so nothing is applied twice.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from importlib import resources
from importlib.resources.abc import Traversable

from ..sql.migrations import Migration
from ..sql.statements import MIGRATIONS_APPLIED, RECORD_MIGRATION

log = logging.getLogger("hermes_api_plugin")

# The bundled migrations (package data: `store/sqlite/migrations/NNNN_name.sql`).
BUNDLED: Traversable = resources.files("hermes_api_plugin.store.sqlite.migrations")


def split_statements(sql: str) -> list[str]:
    """The statements of a script, in order. A `;` ends a statement only where SQLite agrees the text so
    far is complete (not inside a string, a comment or a trigger body); a last statement without `;` is
    kept (0002 ends that way)."""
    statements: list[str] = []
    start = 0
    for at, char in enumerate(sql):
        if char == ";" and sqlite3.complete_statement(sql[start : at + 1]):
            statements.append(sql[start : at + 1].strip())
            start = at + 1
    tail = sql[start:].strip()
    if tail:
        statements.append(tail)
    return statements


def applied_versions(conn: sqlite3.Connection) -> dict[int, str | None]:
    """version → file name of every recorded migration (empty for a new database)."""
    if not _table_exists(conn, "schema_migrations"):
        return {}
    return {row["version"]: row["name"] for row in _rows(conn, MIGRATIONS_APPLIED.sqlite)}


def migrate(conn: sqlite3.Connection, migrations: list[Migration]) -> list[int]:
    """Apply every migration not yet recorded, each in its own transaction; returns the versions applied.

    `conn` must be in autocommit mode (`isolation_level=None`) so the transactions here are the only
    ones. Re-reads the recorded versions inside each transaction, so two processes opening the same
    new file never apply a migration twice.
    """
    _adopt_legacy_versions(conn, migrations)
    applied: list[int] = []
    for migration in migrations:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if migration.version in applied_versions(conn):
                conn.execute("ROLLBACK")
                continue
            for statement in split_statements(migration.sql):
                conn.execute(statement)
            conn.execute(RECORD_MIGRATION.sqlite, (migration.version, migration.name, time.time()))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        applied.append(migration.version)
        log.info("[API Server] store migration %s applied", migration.name)
    return applied


def _adopt_legacy_versions(conn: sqlite3.Connection, migrations: list[Migration]) -> None:
    """Create `schema_migrations`; move the rows of the old `schema_version` table into it (one transaction)."""
    names = {m.version: m.name for m in migrations}
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name TEXT, applied_at REAL NOT NULL)"
        )
        if _table_exists(conn, "schema_version"):
            legacy = _rows(conn, "SELECT version, applied_at FROM schema_version")
            conn.executemany(
                "INSERT OR IGNORE INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                [(row["version"], names.get(row["version"]), row["applied_at"]) for row in legacy],
            )
            conn.execute("DROP TABLE schema_version")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _rows(conn: sqlite3.Connection, sql: str) -> list[sqlite3.Row]:
    """Rows by column name, whatever row factory the connection has."""
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    return cursor.execute(sql).fetchall()


def _table_exists(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None
