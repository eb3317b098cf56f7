"""Backends for the store contract suite. A new backend (PostgreSQL) adds one param to `open_backend`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from hermes_api_plugin.store import MemoryStore, SessionStore, SqliteStore, Store


@dataclass(frozen=True)
class Backend:
    """An opened plugin store and the session store that goes with it; `durable` is what it must report."""

    store: Store
    sessions: SessionStore
    durable: bool


BackendFactory = Callable[..., Awaitable[Backend]]


@pytest.fixture(params=["sqlite", "memory"])
async def open_backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BackendFactory]:
    """`await open_backend(max_responses=…)`: a fresh, opened backend; closed after the test."""
    opened: list[Store] = []

    async def open_(*, max_responses: int = 10000) -> Backend:
        if request.param == "sqlite":
            store = SqliteStore(tmp_path / f"store{len(opened)}.sqlite3", max_responses=max_responses)
        else:
            store = MemoryStore(max_responses=max_responses)
        await store.open()
        opened.append(store)
        return Backend(store, store.sessions, durable=request.param != "memory")

    yield open_
    for store in opened:
        await store.close()


@pytest.fixture
async def backend(open_backend: BackendFactory) -> Backend:
    return await open_backend()
