"""One SQLite database shared by the session store and the plugin store: the connection, its thread, its file.

stdlib sqlite3 on one dedicated thread (never on the event loop, and one thread means statements never
interleave), WAL, file mode 0600, schema migrations on open, rows by column name (`sqlite3.Row`).
Without a path, or when the file cannot be opened and the fallback is allowed, the same schema lives in
memory and `durable` is False (WIRE.md §5.4).
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TypeVar

from ..base import StoreError, StoreRefused
from ..sql.migrations import load_migrations
from .migrate import BUNDLED, migrate

T = TypeVar("T")
log = logging.getLogger("hermes_api_plugin")


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """`with transaction(conn):` one IMMEDIATE transaction (the write lock up front, so a read-then-write
    never meets another writer halfway), rolled back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


BUSY_TIMEOUT_S = 5.0
_WAL_RETRY_S = 0.005


def _switch_to_wal(conn: sqlite3.Connection) -> None:
    """`PRAGMA journal_mode=WAL`, retried while another connection holds the file's lock: SQLite answers
    "database is locked" at once for a journal-mode switch instead of calling the busy handler, so two processes
    opening one new file at the same moment would otherwise fail. Runs on the database thread, never the loop."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(_WAL_RETRY_S)


class _Thread:
    """The database's one thread: functions in through a queue, each result back to the loop in one wake-up. Lighter
    than an executor (a concurrent Future, a work item and callbacks chained both ways per call, which cost the loop
    as much per store call as several streamed events, issue 25)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Callable[[], object], asyncio.Future[object]] | None] = queue.SimpleQueue()
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._work, name="hermes-api-store", daemon=True)
        self._thread.start()

    def run(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        future: asyncio.Future[T] = self._loop.create_future()
        self._queue.put((fn, future))  # type: ignore[arg-type]
        return future

    def stop(self, wait: bool) -> None:
        self._queue.put(None)
        if wait:
            self._thread.join()

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            fn, future = item
            try:
                result = fn()
            except BaseException as exc:
                self._reply(_failed, future, exc)
            else:
                self._reply(_done, future, result)

    def _reply(
        self, settle: Callable[[asyncio.Future[object], object], None], future: asyncio.Future[object], value: object
    ) -> None:
        try:
            self._loop.call_soon_threadsafe(settle, future, value)
        except RuntimeError:  # the loop closed: nobody waits any more
            pass


def _done(future: asyncio.Future[object], result: object) -> None:
    if not future.done():
        future.set_result(result)


def _failed(future: asyncio.Future[object], exc: object) -> None:
    if not future.done():
        assert isinstance(exc, BaseException)
        future.set_exception(exc)


class SqliteDatabase:
    """The connection and its single worker thread; `call` runs a function on it and maps sqlite errors to
    StoreError."""

    def __init__(
        self, path: Path | None, *, fallback_to_memory: bool = False, migrations_dir: Traversable | Path | None = None
    ) -> None:
        self.path = path
        self.fallback_to_memory = fallback_to_memory
        self.migrations_dir = migrations_dir  # None: the bundled migrations (tests inject their own)
        self.durable = path is not None
        self._thread: _Thread | None = None
        self._conn: sqlite3.Connection | None = None

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    async def call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(connection)` on the database thread."""
        if self._thread is None or self._conn is None:
            raise StoreError("the store is closed")
        conn = self._conn
        try:
            return await self._thread.run(lambda: fn(conn))
        except (sqlite3.DataError, sqlite3.IntegrityError) as exc:  # refused for its values: would be again
            raise StoreRefused(str(exc)) from exc
        except sqlite3.Error as exc:
            raise StoreError(str(exc)) from exc

    async def open(self) -> None:
        """Open (creating and migrating) the file, or memory: see the module docstring."""
        thread = _Thread()
        try:
            try:
                conn = await thread.run(lambda: self._open_sync(self.path))
            except (OSError, sqlite3.Error) as exc:
                if not self.fallback_to_memory or self.path is None:
                    raise StoreError(f"cannot open {self.path or 'the in-memory store'}: {exc}") from exc
                log.error(
                    "[API Server] Store unavailable (cannot open %s: %s); keeping state in memory until restart",
                    self.path,
                    exc,
                )
                self.durable = False
                try:
                    conn = await thread.run(lambda: self._open_sync(None))
                except (OSError, sqlite3.Error) as again:
                    raise StoreError(f"cannot open the in-memory store either: {again}") from again
        except BaseException:
            thread.stop(wait=False)
            raise
        self._thread, self._conn = thread, conn

    def _open_sync(self, path: Path | None) -> sqlite3.Connection:
        # isolation_level=None: no implicit transactions; every write path says BEGIN/COMMIT itself.
        if path is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Create the file 0600 before sqlite does, so it never exists with wider permissions.
            os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
            os.chmod(path, 0o600)
            # timeout: the busy handler is armed before the first statement, so a second process opening the
            # same new file waits for the first one's switch to WAL instead of failing "database is locked".
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
        try:
            conn.row_factory = sqlite3.Row
            if path is not None:
                _switch_to_wal(conn)
                conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            migrate(conn, load_migrations(self.migrations_dir or BUNDLED))
        except BaseException:
            conn.close()
            raise
        if path is not None:
            for suffix in ("-wal", "-shm"):
                side = Path(f"{path}{suffix}")
                if side.exists():
                    os.chmod(side, 0o600)
        return conn

    async def close(self) -> None:
        if self._thread is None:
            return
        conn, self._conn = self._conn, None
        thread, self._thread = self._thread, None
        if conn is not None:
            await thread.run(conn.close)
        thread.stop(wait=True)
