"""SQLite migrations: one transaction per file, recorded in schema_migrations, statements split the way
SQLite reads them, and databases of the previous code (versions in `schema_version`) upgraded in place."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

from hermes_api_plugin.core.content import Message, TextPart
from hermes_api_plugin.store import SqliteStore, StoreError
from hermes_api_plugin.store.sql.migrations import load_migrations
from hermes_api_plugin.store.sqlite.db import SqliteDatabase
from hermes_api_plugin.store.sqlite.migrate import BUNDLED, split_statements


def recorded(path: Path) -> list[tuple[int, str | None]]:
    conn = sqlite3.connect(path)
    try:
        return [(v, n) for v, n in conn.execute("SELECT version, name FROM schema_migrations ORDER BY version")]
    finally:
        conn.close()


def tables(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()


def build_the_old_way(path: Path, up_to: int) -> None:
    """What the previous code did: split each file on ';', record the version in `schema_version`."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)")
    for migration in load_migrations(BUNDLED):
        if migration.version > up_to:
            break
        conn.execute("BEGIN IMMEDIATE")
        for statement in (s.strip() for s in migration.sql.split(";")):
            if statement and not all(line.strip().startswith("--") for line in statement.splitlines()):
                conn.execute(statement)
        conn.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (migration.version, 1.0))
        conn.execute("COMMIT")
    conn.close()


def test_split_statements_cuts_only_where_sqlite_would() -> None:
    sql = """-- a comment; with a semicolon
CREATE TABLE t (a TEXT DEFAULT ';');  -- trailing; comment
/* block; comment */ INSERT INTO t VALUES ('x;y');
CREATE TRIGGER tr AFTER INSERT ON t BEGIN
    UPDATE t SET a = 'z;' WHERE a = 'q';
    DELETE FROM t WHERE a = ';';
END;
ALTER TABLE t ADD COLUMN b TEXT
"""
    statements = split_statements(sql)
    assert len(statements) == 4
    assert statements[0].endswith("CREATE TABLE t (a TEXT DEFAULT ';');")
    assert statements[1].endswith("/* block; comment */ INSERT INTO t VALUES ('x;y');")
    assert statements[2].startswith("CREATE TRIGGER") and statements[2].endswith("END;")
    assert statements[3] == "ALTER TABLE t ADD COLUMN b TEXT"
    conn = sqlite3.connect(":memory:")
    for statement in statements:
        conn.execute(statement)
    assert conn.execute("SELECT a, b FROM t").fetchall() == [("x;y", None)]


async def test_a_new_database_records_every_migration_by_name(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite3"
    before = time.time()
    store = SqliteStore(path)
    await store.open()
    await store.close()
    assert recorded(path) == [(m.version, m.name) for m in load_migrations(BUNDLED)]
    conn = sqlite3.connect(path)
    applied_at = [t for (t,) in conn.execute("SELECT applied_at FROM schema_migrations")]
    conn.close()
    assert all(t >= before for t in applied_at)
    assert "schema_version" not in tables(path)


async def test_a_database_of_the_previous_code_upgrades_without_reapplying(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    latest = load_migrations(BUNDLED)[-1].version
    build_the_old_way(path, latest)
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO sessions (id, created_at, updated_at, title) VALUES ('old', 1, 2, 'kept')")
    conn.commit()
    conn.close()
    store = SqliteStore(path)
    await store.open()  # re-applying 0001 would fail: its tables exist
    try:
        info = await store.sessions.get_session("old")
        assert info is not None and info["title"] == "kept"
    finally:
        await store.close()
    assert recorded(path) == [(m.version, m.name) for m in load_migrations(BUNDLED)]
    assert "schema_version" not in tables(path)
    conn = sqlite3.connect(path)
    applied_at = {t for (t,) in conn.execute("SELECT applied_at FROM schema_migrations")}
    conn.close()
    assert applied_at == {1.0}  # adopted as they were, not applied again


async def test_a_partly_migrated_old_database_gets_only_the_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "old3.sqlite3"
    build_the_old_way(path, 3)
    store = SqliteStore(path)
    await store.open()
    try:
        assert await store.sessions.create_session("s", "with a title")  # title arrives with 0004
        await store.sessions.append_session_messages("s", [Message("user", (TextPart("hi"),))])
        assert [m.text for m in await store.sessions.load_session_messages("s")] == ["hi"]
    finally:
        await store.close()
    assert [v for v, _ in recorded(path)] == [m.version for m in load_migrations(BUNDLED)]


def write(folder: Path, name: str, sql: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(sql, encoding="utf-8")


async def test_a_failing_migration_file_leaves_the_previous_version(tmp_path: Path) -> None:
    migrations = tmp_path / "migrations"
    write(migrations, "0001_first.sql", "CREATE TABLE one (a TEXT);")
    write(
        migrations,
        "0002_broken.sql",
        "CREATE TABLE two (a TEXT);\nINSERT INTO one VALUES ('x');\nINSERT INTO no_such_table VALUES (1);\n",
    )
    path = tmp_path / "db.sqlite3"
    db = SqliteDatabase(path, migrations_dir=migrations)
    with pytest.raises(StoreError, match="no_such_table"):
        await db.open()
    assert db.is_open is False
    assert recorded(path) == [(1, "0001_first.sql")]
    assert "two" not in tables(path)  # the file's first statement was rolled back with it
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*) FROM one").fetchone() == (0,)
    conn.close()

    write(migrations, "0002_broken.sql", "CREATE TABLE two (a TEXT);\nINSERT INTO one VALUES ('x');\n")
    fixed = SqliteDatabase(path, migrations_dir=migrations)
    await fixed.open()
    await fixed.close()
    assert recorded(path) == [(1, "0001_first.sql"), (2, "0002_broken.sql")]


async def test_a_failing_migration_with_fallback_keeps_the_file_and_runs_in_memory(tmp_path: Path) -> None:
    migrations = tmp_path / "migrations"
    write(migrations, "0001_first.sql", "CREATE TABLE one (a TEXT);")
    write(migrations, "0002_broken.sql", "CREATE TABLE two (a TEXT); SELECT * FROM nowhere;")
    path = tmp_path / "db.sqlite3"
    db = SqliteDatabase(path, fallback_to_memory=True, migrations_dir=migrations)
    with pytest.raises(StoreError):  # the same files fail in memory too: nothing to fall back to
        await db.open()
    assert recorded(path) == [(1, "0001_first.sql")]


def test_files_that_are_not_numbered_migrations_are_ignored_and_duplicates_refused(tmp_path: Path) -> None:
    migrations = tmp_path / "migrations"
    write(migrations, "0001_a.sql", "SELECT 1;")
    write(migrations, "README.md", "not sql")
    write(migrations, "1_short.sql", "SELECT 1;")
    assert [m.name for m in load_migrations(migrations)] == ["0001_a.sql"]
    write(migrations, "0001_b.sql", "SELECT 2;")
    with pytest.raises(ValueError, match="two migrations numbered 1"):
        load_migrations(migrations)


async def test_two_processes_opening_a_new_file_apply_each_migration_once(tmp_path: Path) -> None:
    """Gateways opening one new file at the same moment: every open succeeds (the switch to WAL waits for the
    other's lock instead of failing "database is locked"), and each migration is applied once."""
    for attempt in range(25):
        path = tmp_path / f"shared-{attempt}.sqlite3"
        stores = [SqliteStore(path) for _ in range(4)]
        await asyncio.gather(*(store.open() for store in stores))
        try:
            await stores[0].sessions.create_session("s", None)
            assert await stores[-1].sessions.get_session("s") is not None
        finally:
            await asyncio.gather(*(store.close() for store in stores))
        assert [v for v, _ in recorded(path)] == [m.version for m in load_migrations(BUNDLED)]
