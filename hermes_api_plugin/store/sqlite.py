"""SQLite Store: stdlib sqlite3 on one dedicated thread (never on the event loop), WAL, file mode 0600.

Schema changes are numbered SQL files in `migrations/`, applied in order and recorded in
`schema_version`, each in its own transaction.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from ..content import Message
from .base import StoreError

T = TypeVar("T")


def migrations() -> list[tuple[int, str]]:
    """(version, sql) for every bundled migration, ascending."""
    found: list[tuple[int, str]] = []
    for entry in resources.files("hermes_api_plugin.store.migrations").iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append((int(name[:4]), entry.read_text(encoding="utf-8")))
    return sorted(found)


class SqliteStore:
    durable = True

    def __init__(self, path: Path) -> None:
        self.path = path
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._executor is None or self._conn is None:
            raise StoreError("the store is closed")
        conn = self._conn
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn, conn)
        except sqlite3.Error as exc:
            raise StoreError(str(exc)) from exc

    async def open(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hermes-api-store")
        try:
            self._conn = await asyncio.get_running_loop().run_in_executor(self._executor, self._open_sync)
        except (OSError, sqlite3.Error) as exc:
            self._executor.shutdown(wait=False)
            self._executor = None
            raise StoreError(f"cannot open {self.path}: {exc}") from exc

    def _open_sync(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Create the file 0600 before sqlite does, so it never exists with wider permissions.
        fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
        os.close(fd)
        os.chmod(self.path, 0o600)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=5000")
        self._migrate(conn)
        for suffix in ("-wal", "-shm"):
            side = Path(f"{self.path}{suffix}")
            if side.exists():
                os.chmod(side, 0o600)
        return conn

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)")
        applied = {row[0] for row in conn.execute("SELECT version FROM schema_version")}
        for version, sql in migrations():
            if version in applied:
                continue
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in (s.strip() for s in sql.split(";")):
                    if statement and not all(line.strip().startswith("--") for line in statement.splitlines()):
                        conn.execute(statement)
                conn.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (version, time.time()))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    async def close(self) -> None:
        if self._executor is None:
            return
        conn, self._conn = self._conn, None
        executor, self._executor = self._executor, None
        if conn is not None:
            await asyncio.get_running_loop().run_in_executor(executor, conn.close)
        executor.shutdown(wait=True)

    async def schema_version(self) -> int:
        return await self._call(lambda c: c.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0])

    async def load_session_messages(self, session_id: str) -> list[Message]:
        def load(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            return conn.execute(
                "SELECT role, content, reasoning FROM messages WHERE session_id = ? ORDER BY id", (session_id,)
            ).fetchall()

        rows = await self._call(load)
        return [Message.from_json({"role": r, "content": json.loads(c), "reasoning": rs}) for r, c, rs in rows]

    async def append_session_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        now = time.time()
        rows = [
            (session_id, m.role, json.dumps([p.to_json() for p in m.parts], ensure_ascii=False), m.reasoning, now)
            for m in messages
        ]

        def append(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    "INSERT INTO sessions (id, created_at, updated_at) VALUES (?, ?, ?) "
                    "ON CONFLICT(id) DO UPDATE SET updated_at = excluded.updated_at",
                    (session_id, now, now),
                )
                conn.executemany(
                    "INSERT INTO messages (session_id, role, content, reasoning, created_at) VALUES (?, ?, ?, ?, ?)", rows
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

        await self._call(append)
