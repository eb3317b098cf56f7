"""Backends for the store contract suite: SQLite, in memory, and PostgreSQL (a real server: tests/pg.py). A new backend
adds one param to `open_backend`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from hermes_api_plugin.store import MemoryStore, SessionStore, SqliteStore, Store
from hermes_api_plugin.store.factory import own_sessions
from tests.pg import DatabaseFactory


@dataclass(frozen=True)
class Backend:
    """An opened plugin store and the session store that goes with it; `durable` is what it must report."""

    store: Store
    sessions: SessionStore
    durable: bool


BackendFactory = Callable[..., Awaitable[Backend]]


@pytest.fixture(params=["sqlite", "memory", "postgres"])
async def open_backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BackendFactory]:
    """`await open_backend(max_responses=…)`: a fresh, opened backend; closed after the test. PostgreSQL: a new
    database of the session's server (tests/pg.py) for each backend opened."""
    opened: list[Store] = []
    # Requested here, before this fixture yields, so its teardown (DROP DATABASE) runs after the stores below are
    # closed: a pool still open would reconnect into the drop, mid-authentication, while the loop no longer runs.
    new_database: DatabaseFactory | None = (
        request.getfixturevalue("postgres_databases") if request.param == "postgres" else None
    )

    async def open_(*, max_responses: int = 10000) -> Backend:
        store: Store
        if request.param == "sqlite":
            store = SqliteStore(tmp_path / f"store{len(opened)}.sqlite3", max_responses=max_responses)
        elif new_database is not None:
            from hermes_api_plugin.store.postgres.store import PostgresStore  # psycopg: only where it is asked for

            store = PostgresStore(new_database(), max_responses=max_responses)
        else:
            store = MemoryStore(max_responses=max_responses)
        await store.open()
        opened.append(store)
        sessions = own_sessions(store)
        assert sessions is not None
        return Backend(store, sessions, durable=request.param != "memory")

    yield open_
    for store in opened:
        await store.close()


@pytest.fixture
async def backend(open_backend: BackendFactory) -> Backend:
    return await open_backend()
