"""One SQLite database shared by the session store and the plugin store: the connection, its thread, its file.

stdlib sqlite3 on one dedicated thread (never on the event loop, and one thread means statements never
interleave), WAL, file mode 0600, schema migrations on open, rows by column name (`sqlite3.Row`).
Without a path, or when the file cannot be opened and the fallback is allowed, the same schema lives in
memory and `durable` is False (WIRE.md §5.4). Writes made through `grouped` (the transcripts of settling turns, the
stored Responses) are group-committed: those made while one group is written go together in the next store call and
transaction, a savepoint each.
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
from typing import Any, TypeVar

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


# How long the loop holds still for a call a stream waits on (`SqliteDatabase.call(…, handoff=True)`): a journal's
# group commit takes 0.05–0.3 ms; one held up behind a long statement or a checkpoint is left to the thread.
HANDOFF_S = 0.001


class _Handoff:
    """A call the loop waits for in place: its outcome, and who settles its future. The thread leaves the outcome here
    only while the loop still waits (`deliver`); once the loop has stopped waiting (`abandon`) the thread settles the
    future itself, as for any call."""

    __slots__ = ("abandoned", "done", "failed", "lock", "value")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.abandoned = False
        self.failed = False
        self.value: object = None

    def deliver(self, value: object, failed: bool) -> bool:
        """On the thread: hand the outcome to the waiting loop; False once it has stopped waiting."""
        with self.lock:
            if self.abandoned:
                return False
            self.value, self.failed = value, failed
            self.done.set()
            return True

    def abandon(self) -> bool:
        """On the loop, after its wait ran out: False when the outcome came in meanwhile (it is here to settle)."""
        with self.lock:
            self.abandoned = not self.done.is_set()
            return self.abandoned


_Item = tuple[Callable[[], object], "asyncio.Future[object]", _Handoff | None]


class _Thread:
    """The database's one thread: functions in through a queue, each result back to the loop in one wake-up. Lighter
    than an executor (a concurrent Future, a work item and callbacks chained both ways per call, which cost the loop
    as much per store call as several streamed events, issue 25).

    A busy loop starves this thread: every `select` of the loop lets go of the interpreter lock and takes it straight
    back, and each release wakes a thread waiting for the lock and restarts its wait, so the wait never runs out and
    the loop is never asked to yield (CPython's convoy effect). A call run with a hand-off has the loop wait for it
    with the lock released, at most `handoff_s`: the thread runs at once and the future is settled in place, without
    the wake-up through the loop's self-pipe. Measured on a stored Responses stream of 20 000 deltas, which waits on
    each batch's group commit: 168 ms without, 122 ms with (a chat stream, which does not wait: 106 ms)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._work, name="hermes-api-store", daemon=True)
        self._thread.start()

    def run(self, fn: Callable[[], T], handoff_s: float = 0.0) -> asyncio.Future[T]:
        """`fn` on the thread; with `handoff_s`, the loop waits that long for it first (see the class docstring)."""
        future: asyncio.Future[T] = self._loop.create_future()
        handoff = _Handoff() if handoff_s > 0 else None
        self._queue.put((fn, future, handoff))  # type: ignore[arg-type]
        if handoff is not None and (handoff.done.wait(handoff_s) or not handoff.abandon()):
            (_failed if handoff.failed else _done)(future, handoff.value)  # type: ignore[arg-type]
        return future

    def stop(self, wait: bool) -> None:
        self._queue.put(None)
        if wait:
            self._thread.join()

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            fn, future, handoff = item
            failed = False
            try:
                value = fn()
            except BaseException as exc:
                value, failed = exc, True
            if handoff is None or not handoff.deliver(value, failed):
                self._reply(_failed if failed else _done, future, value)

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


def _store_error(exc: sqlite3.Error) -> StoreError:
    if isinstance(exc, (sqlite3.DataError, sqlite3.IntegrityError)):  # refused for its values: would be again
        return StoreRefused(str(exc))
    return StoreError(str(exc))


class _Group:
    """Grouped writes gathered while the group before them was written (`SqliteDatabase.grouped`): one store call, one
    transaction, a savepoint each. A write that fails rolls back to its savepoint and fails alone; a transaction
    that cannot begin or commit fails them all (each caller retries, as it would its own)."""

    def __init__(self) -> None:
        self.writes: list[tuple[Callable[[sqlite3.Connection], Any], asyncio.Future[Any]]] = []

    def run(self, conn: sqlite3.Connection) -> list[tuple[Any, Exception | None]]:
        """On the database thread: each write's value and failure (None: it stood)."""
        outcomes: list[tuple[Any, Exception | None]] = []
        with transaction(conn):
            for write, _future in self.writes:
                conn.execute("SAVEPOINT grouped")
                try:
                    outcomes.append((write(conn), None))
                except Exception as exc:  # this write's alone (a bad value, a row that cannot be encoded)
                    conn.execute("ROLLBACK TO grouped")
                    outcomes.append((None, exc))
                conn.execute("RELEASE grouped")
        return outcomes

    def settle(self, outcomes: list[tuple[Any, Exception | None]]) -> None:
        """On the loop: each caller learns of its own write (a caller that went away is skipped: its write stands)."""
        for (_write, future), (value, failed) in zip(self.writes, outcomes, strict=True):
            if future.done():
                continue
            if failed is None:
                future.set_result(value)
            else:
                future.set_exception(_store_error(failed) if isinstance(failed, sqlite3.Error) else failed)

    def fail(self, exc: Exception) -> None:
        """The group as a whole failed (its transaction, the thread, a closed store): so did every write in it."""
        self.settle([(None, exc)] * len(self.writes))


class SqliteDatabase:
    """The connection and its single worker thread; `call` runs a function on it and maps sqlite errors to
    StoreError; `grouped` group-commits a write with the others made while the group before it is written."""

    def __init__(
        self, path: Path | None, *, fallback_to_memory: bool = False, migrations_dir: Traversable | Path | None = None
    ) -> None:
        self.path = path
        self.fallback_to_memory = fallback_to_memory
        self.migrations_dir = migrations_dir  # None: the bundled migrations (tests inject their own)
        self.durable = path is not None
        self._thread: _Thread | None = None
        self._conn: sqlite3.Connection | None = None
        self._group: _Group | None = None  # the grouped writes gathered while the one before is written
        self._writing = False  # a group is on the database thread

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    async def call(self, fn: Callable[[sqlite3.Connection], T], *, handoff: bool = False) -> T:
        """Run `fn(connection)` on the database thread; `handoff`: a stream waits for it, so the loop waits for it
        in place, up to HANDOFF_S (see `_Thread`)."""
        if self._thread is None or self._conn is None:
            raise StoreError("the store is closed")
        conn = self._conn
        try:
            return await self._thread.run(lambda: fn(conn), HANDOFF_S if handoff else 0.0)
        except sqlite3.Error as exc:
            raise _store_error(exc) from exc

    async def grouped(self, write: Callable[[sqlite3.Connection], T]) -> T:
        """`write(connection)` in a savepoint of its own, in one transaction with the other grouped writes made while
        the group before it was being written — a group commit: an idle store writes it at once, a busy one gathers
        what comes meanwhile and writes it all in one store call and one commit (issue 25: a stream's transcript was
        its only store call, a stored Response's two puts their own transactions). Each caller still gets its own
        write's value, or learns of its failure (StoreRefused, StoreError)."""
        if self._thread is None or self._conn is None:
            raise StoreError("the store is closed")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        if self._group is None:
            self._group = _Group()
        self._group.writes.append((write, future))
        if not self._writing:
            self._send_group()
        return await future

    def _send_group(self) -> None:
        """The gathered group to the database thread, if any; the next one gathers until it is written."""
        group, self._group = self._group, None
        self._writing = group is not None
        if group is None:
            return
        thread, conn = self._thread, self._conn
        if thread is None or conn is None:  # closed meanwhile
            group.fail(StoreError("the store is closed"))
            self._writing = False
            return
        thread.run(lambda: group.run(conn)).add_done_callback(lambda ran: self._written(group, ran))

    def _written(self, group: _Group, ran: asyncio.Future[list[tuple[Any, Exception | None]]]) -> None:
        try:
            if ran.cancelled():
                group.fail(StoreError("the store's thread stopped"))
            elif isinstance(failure := ran.exception(), Exception):
                group.fail(failure)
            else:
                group.settle(ran.result())  # a BaseException (not an Exception) is raised here, as `call` would
        finally:  # whatever settling met, the writes gathered meanwhile go on
            self._send_group()

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
