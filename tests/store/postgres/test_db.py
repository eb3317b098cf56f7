"""PostgreSQL migrations and connection failures, on a real server (tests/pg.py): each file in one transaction,
recorded in schema_migrations; gateways opening one empty database together migrate it once; a re-open applies
nothing; a failing file leaves the previous version; a database that cannot be reached is a StoreError that never
shows the URL's password."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from hermes_api_plugin.store import SqliteStore, StoreError, StoreUnavailable
from hermes_api_plugin.store.postgres import db as postgres_db
from hermes_api_plugin.store.postgres.db import ACQUIRE_TIMEOUT_S, RECONNECT_TIMEOUT_S, PostgresDatabase
from hermes_api_plugin.store.postgres.store import PostgresStore
from hermes_api_plugin.store.sql.migrations import load_migrations
from tests.helpers import wait_for
from tests.pg import PG_MIGRATIONS, DatabaseFactory, PostgresServer


def recorded(url: str) -> list[tuple[int, str, float]]:
    with psycopg.connect(url) as conn:
        return [
            (v, n, t)
            for v, n, t in conn.execute("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
        ]


def tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
        return {name for (name,) in rows}


def columns_pg(url: str) -> dict[str, set[str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'"
        )
        found: dict[str, set[str]] = {}
        for table, column in rows.fetchall():
            found.setdefault(table, set()).add(column)
        return found


def columns_sqlite(path: Path) -> dict[str, set[str]]:
    conn = sqlite3.connect(path)
    try:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {n: {row[1] for row in conn.execute(f"PRAGMA table_info({n})")} for n in names if n != "sqlite_sequence"}
    finally:
        conn.close()


async def test_the_schema_has_the_columns_of_the_sqlite_one(postgres_url: str, tmp_path: Path) -> None:
    """Both backends' migrations end at the same tables and columns (PostgreSQL adds the write order SQLite's
    rowid gives response_items, the table of its feed's long messages, and the wait keys of suspended turns)."""
    for store in (PostgresStore(postgres_url), SqliteStore(tmp_path / "s.sqlite3")):
        await store.open()
        await store.close()
    expected = columns_sqlite(tmp_path / "s.sqlite3")
    expected["response_items"] = expected["response_items"] | {"written"}
    expected["feed_messages"] = {"id", "body", "created_at"}  # the feed's long messages: SQLite has no feed
    expected["wait_keys"] = {"scope", "key", "run_id"}  # answers landing on another gateway: SQLite is never shared
    assert columns_pg(postgres_url) == expected


async def test_a_new_database_records_every_migration_and_a_reopen_applies_nothing(postgres_url: str) -> None:
    before = time.time()
    store = PostgresStore(postgres_url)
    await store.open()
    await store.sessions.create_session("s", "kept")
    await store.close()
    first = recorded(postgres_url)
    assert [(v, n) for v, n, _ in first] == [(m.version, m.name) for m in load_migrations(PG_MIGRATIONS)]
    assert all(t >= before for _, _, t in first)
    assert {"responses", "response_items", "admissions", "journal_events", "sessions", "messages"} <= tables(
        postgres_url
    )

    again = PostgresStore(postgres_url)
    await again.open()
    try:
        info = await again.sessions.get_session("s")
        assert info is not None and info["title"] == "kept"
    finally:
        await again.close()
    assert recorded(postgres_url) == first  # same rows, same applied_at: nothing applied twice


async def test_gateways_opening_one_empty_database_together_all_succeed_and_migrate_once(
    postgres_databases: DatabaseFactory,
) -> None:
    """The advisory lock: one store migrates, the others wait and then find every version recorded."""
    for _ in range(3):
        url = postgres_databases()
        stores = [PostgresStore(url) for _ in range(4)]
        await asyncio.gather(*(store.open() for store in stores))
        try:
            await stores[0].bind_session_key("scope", "k", "s1")
            assert await stores[-1].session_for_key("scope", "k") == "s1"
        finally:
            await asyncio.gather(*(store.close() for store in stores))
        assert [v for v, _, _ in recorded(url)] == [m.version for m in load_migrations(PG_MIGRATIONS)]


def write(folder: Path, name: str, sql: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(sql, encoding="utf-8")


async def test_a_failing_migration_file_leaves_the_previous_version(postgres_url: str, tmp_path: Path) -> None:
    migrations = tmp_path / "migrations"
    write(migrations, "0001_first.sql", "CREATE TABLE one (a TEXT);")
    write(
        migrations,
        "0002_broken.sql",
        "CREATE TABLE two (a TEXT);\nINSERT INTO one VALUES ('x;y');\nINSERT INTO no_such_table VALUES (1);\n",
    )
    db = PostgresDatabase(postgres_url, migrations_dir=migrations)
    with pytest.raises(StoreError, match="no_such_table"):
        await db.open()
    assert db.is_open is False
    assert [(v, n) for v, n, _ in recorded(postgres_url)] == [(1, "0001_first.sql")]
    assert "two" not in tables(postgres_url)  # the file's first statement was rolled back with it
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM one").fetchone() == (0,)

    write(migrations, "0002_broken.sql", "CREATE TABLE two (a TEXT);\nINSERT INTO one VALUES ('x;y');\n")
    fixed = PostgresDatabase(postgres_url, migrations_dir=migrations)
    await fixed.open()
    await fixed.close()
    assert [(v, n) for v, n, _ in recorded(postgres_url)] == [(1, "0001_first.sql"), (2, "0002_broken.sql")]


async def test_a_database_that_cannot_be_reached_is_a_store_error_without_the_password(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    wrong = postgres_url.replace(postgres_server.password, "not-the-password-4711")
    with pytest.raises(StoreError) as refused:
        await PostgresStore(wrong).open()
    assert "not-the-password-4711" not in str(refused.value)
    assert "password authentication failed" in str(refused.value)

    closed_port = postgres_url.replace(f":{postgres_server.port}/", ":1/")
    with pytest.raises(StoreError) as unreachable:
        await PostgresStore(closed_port).open()
    assert postgres_server.password not in str(unreachable.value)
    assert "127.0.0.1:1/" in str(unreachable.value)  # where it tried, without the credentials


def test_the_url_never_shows_in_the_store_repr(postgres_server: PostgresServer) -> None:
    store = PostgresStore(postgres_server.url("db"))
    assert postgres_server.password not in repr(store) and postgres_server.password not in repr(store.db)


@pytest.mark.slow  # waits out the pool's acquire timeout while the server is down
async def test_a_database_restart_fails_calls_with_store_error_then_serves_again(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    store = PostgresStore(postgres_url)
    await store.open()
    try:
        await store.bind_session_key("scope", "k", "before")
        postgres_server.stop()
        started = time.monotonic()
        with pytest.raises(StoreUnavailable) as down:  # a later attempt may succeed: callers retry what must be kept
            await store.session_for_key("scope", "k")
        assert time.monotonic() - started < ACQUIRE_TIMEOUT_S + 5
        assert postgres_server.password not in str(down.value)
        postgres_server.start()
        assert await store.session_for_key("scope", "k") == "before"  # a fresh connection, no error first
        await store.bind_session_key("scope", "k", "after")
        assert await store.session_for_key("scope", "k") == "after"
    finally:
        if postgres_server.pid() is None:
            postgres_server.start()
        await store.close()


async def test_connections_a_restart_cut_are_replaced_before_a_call_uses_them(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    store = PostgresStore(postgres_url)
    await store.open()
    try:
        await asyncio.gather(*(store.bind_session_key("scope", f"k{i}", "before") for i in range(4)))  # 4 pooled
        postgres_server.stop()
        postgres_server.start()  # no call in between: every pooled connection is dead and still in the pool
        assert await asyncio.gather(*(store.session_for_key("scope", f"k{i}") for i in range(4))) == ["before"] * 4
    finally:
        await store.close()


async def test_an_idle_connection_is_lent_without_a_round_trip_and_one_the_server_closed_is_replaced(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    round_trips = 0
    real_check = AsyncConnectionPool.check_connection

    async def counted(conn: Any) -> None:
        nonlocal round_trips
        round_trips += 1
        await real_check(conn)

    monkeypatch.setattr(AsyncConnectionPool, "check_connection", staticmethod(counted))
    store = PostgresStore(postgres_url)
    await store.open()
    try:
        await asyncio.gather(*(store.bind_session_key("scope", f"k{i}", "v") for i in range(4)))
        for _ in range(10):
            assert await store.session_for_key("scope", "k0") == "v"
        assert round_trips == 0
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            terminated = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'hermes-api'"
            assert admin.execute(terminated).fetchall()
            alive = "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = 'hermes-api'"
            wait_for(lambda: admin.execute(alive).fetchone(), until=lambda row: row == (0,), what="backends gone")
        assert await asyncio.gather(*(store.session_for_key("scope", f"k{i}") for i in range(4))) == ["v"] * 4
        assert round_trips >= 1  # the closed ones were asked, found dead and replaced
    finally:
        await store.close()


OUTAGE_S = 9.0  # after the pool's attempts at 0, 1, 3 and 7 s; its next would come at 15 s


@pytest.mark.slow  # a database down for 9 s
async def test_after_an_outage_longer_than_the_pool_backoff_the_first_call_is_served(
    postgres_server: PostgresServer, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """psycopg_pool retries a lost connection with doubling pauses (1, 2, 4, 8 s …): without a bound, a database back
    after 9 s would wait for the attempt at 15 s. The pool gives up after RECONNECT_TIMEOUT_S and connects on demand."""
    assert RECONNECT_TIMEOUT_S < OUTAGE_S - 1
    monkeypatch.setattr(postgres_db, "ACQUIRE_TIMEOUT_S", 1.0)  # a call waits 1 s for a connection, not 5
    store = PostgresStore(postgres_url)
    await store.open()
    try:
        await store.bind_session_key("scope", "k", "before")
        postgres_server.stop()
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            await store.session_for_key("scope", "k")  # starts the pool's reconnection attempts
        await asyncio.sleep(max(0.0, OUTAGE_S - (time.monotonic() - started)))
        postgres_server.start()
        assert await store.session_for_key("scope", "k") == "before"
    finally:
        if postgres_server.pid() is None:
            postgres_server.start()
        await store.close()
