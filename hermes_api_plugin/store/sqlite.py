"""SQLite Store: stdlib sqlite3 on one dedicated thread (never on the event loop), WAL, file mode 0600.

Schema changes are numbered SQL files in `migrations/`, applied in order and recorded in
`schema_version`, each in its own transaction. Without a path (or when the file cannot be opened and
the fallback is allowed) the same schema lives in memory and `durable` is False (WIRE.md §5.4).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from ..content import Message
from .base import AdmissionRecord, Eviction, StoredResponse, StoreError

T = TypeVar("T")
log = logging.getLogger("hermes_api_plugin")

_RESPONSE_COLUMNS = (
    "id, scope, turn_id, session_id, previous_response_id, conversation, status, snapshot, input_items, "
    "instructions, messages, render, created_at"
)


def migrations() -> list[tuple[int, str]]:
    """(version, sql) for every bundled migration, ascending."""
    found: list[tuple[int, str]] = []
    for entry in resources.files("hermes_api_plugin.store.migrations").iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append((int(name[:4]), entry.read_text(encoding="utf-8")))
    return sorted(found)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _messages_json(messages: Sequence[Message]) -> str:
    return _dumps([m.to_json() for m in messages])


def _messages(raw: str) -> list[Message]:
    return [Message.from_json(m) for m in json.loads(raw)]


def _response(row: Sequence[Any]) -> StoredResponse:
    render = json.loads(row[11])
    return StoredResponse(
        id=row[0], scope=row[1], turn_id=row[2], session_id=row[3], previous_response_id=row[4],
        conversation=row[5], status=row[6], snapshot=json.loads(row[7]), input_items=json.loads(row[8]),
        instructions=row[9], messages=_messages(row[10]), queued=bool(render.get("queued")),
        commentary=bool(render.get("commentary", True)), created_at=row[12],
    )


class _Tx:
    """`with _Tx(conn):` — one IMMEDIATE transaction, rolled back on any error."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")


class SqliteStore:
    def __init__(self, path: Path | None, *, max_responses: int = 10000, fallback_to_memory: bool = False) -> None:
        self.path = path
        self.max_responses = max_responses
        self.fallback_to_memory = fallback_to_memory
        self.durable = path is not None
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None

    # -- plumbing ------------------------------------------------------------------------------------
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
        loop = asyncio.get_running_loop()
        try:
            self._conn = await loop.run_in_executor(self._executor, self._open_sync, self.path)
        except (OSError, sqlite3.Error) as exc:
            if not self.fallback_to_memory:
                self._executor.shutdown(wait=False)
                self._executor = None
                raise StoreError(f"cannot open {self.path}: {exc}") from exc
            log.error("[API Server] Store unavailable (cannot open %s: %s); keeping state in memory until restart",
                      self.path, exc)
            self.durable = False
            self._conn = await loop.run_in_executor(self._executor, self._open_sync, None)

    @classmethod
    def _open_sync(cls, path: Path | None) -> sqlite3.Connection:
        if path is None:
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Create the file 0600 before sqlite does, so it never exists with wider permissions.
            os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
            os.chmod(path, 0o600)
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("PRAGMA foreign_keys=ON")
        cls._migrate(conn)
        if path is not None:
            for suffix in ("-wal", "-shm"):
                side = Path(f"{path}{suffix}")
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
            with _Tx(conn):
                for statement in (s.strip() for s in sql.split(";")):
                    if statement and not all(line.strip().startswith("--") for line in statement.splitlines()):
                        conn.execute(statement)
                conn.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (version, time.time()))

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

    # -- sessions ------------------------------------------------------------------------------------
    async def load_session_messages(self, session_id: str) -> list[Message]:
        def load(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            return conn.execute(
                "SELECT role, content, reasoning, extra FROM messages WHERE session_id = ? AND compacted = 0 "
                "ORDER BY id", (session_id,)
            ).fetchall()

        rows = await self._call(load)
        return [
            Message.from_json({"role": r, "content": json.loads(c), "reasoning": rs, **json.loads(extra or "{}")})
            for r, c, rs, extra in rows
        ]

    async def append_session_messages(self, session_id: str, messages: Sequence[Message], *,
                                      model: str | None = None, usage: tuple[int, int] = (0, 0),
                                      compaction: str | None = None) -> None:
        """Append a turn's messages; a compaction first archives the live transcript behind its summary."""
        now = time.time()
        rows = []
        for m in messages:
            body = m.to_json()
            extra = {k: body[k] for k in ("tool_calls", "tool_call_id") if k in body}
            rows.append((session_id, m.role, _dumps(body["content"]), m.reasoning, _dumps(extra) if extra else None, now))

        def append(conn: sqlite3.Connection) -> None:
            with _Tx(conn):
                conn.execute(
                    "INSERT INTO sessions (id, created_at, updated_at, model, input_tokens, output_tokens) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET updated_at = excluded.updated_at, "
                    "model = COALESCE(excluded.model, sessions.model), "
                    "input_tokens = sessions.input_tokens + excluded.input_tokens, "
                    "output_tokens = sessions.output_tokens + excluded.output_tokens",
                    (session_id, now, now, model, usage[0], usage[1]),
                )
                if compaction is not None:
                    conn.execute("UPDATE messages SET compacted = 1 WHERE session_id = ? AND compacted = 0",
                                 (session_id,))
                    conn.execute(
                        "INSERT INTO messages (session_id, role, content, reasoning, extra, created_at) "
                        "VALUES (?, 'user', ?, NULL, ?, ?)",
                        (session_id, _dumps([{"type": "text", "text": compaction}]), _dumps({"summary": True}), now),
                    )
                conn.executemany(
                    "INSERT INTO messages (session_id, role, content, reasoning, extra, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)", rows,
                )

        await self._call(append)

    _SESSION_COLUMNS = (
        "s.id, s.source, s.title, s.model, s.created_at, s.ended_at, s.updated_at, s.input_tokens, s.output_tokens, "
        "s.parent_session_id, s.pinned, s.archived, "
        "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id AND m.compacted = 0), "
        "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id AND m.role = 'tool'), "
        "(SELECT m.content FROM messages m WHERE m.session_id = s.id AND m.role = 'user' "
        "AND (m.extra IS NULL OR m.extra NOT LIKE '%\"summary\"%') ORDER BY m.id LIMIT 1)"
    )

    @staticmethod
    def _session(row: Sequence[Any] | None) -> dict[str, Any] | None:
        if row is None:
            return None
        preview = None
        if row[14] is not None:
            preview = "".join(p.get("text", "") for p in json.loads(row[14]) if p.get("type") == "text")[:200]
        return {
            "id": row[0], "source": row[1], "title": row[2], "model": row[3], "started_at": row[4],
            "ended_at": row[5], "last_active": row[6], "message_count": row[12], "tool_call_count": row[13],
            "input_tokens": row[7], "output_tokens": row[8], "parent_session_id": row[9], "pinned": bool(row[10]),
            "archived": bool(row[11]), "preview": preview,
        }

    async def list_sessions(self, limit: int, offset: int, source: str | None) -> tuple[list[dict[str, Any]], bool]:
        def rows(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            where, args = ("WHERE s.source = ?", [source]) if source else ("", [])
            return conn.execute(
                f"SELECT {self._SESSION_COLUMNS} FROM sessions s {where} ORDER BY s.updated_at DESC, s.id "
                "LIMIT ? OFFSET ?", (*args, limit + 1, offset)).fetchall()

        found = [self._session(r) for r in await self._call(rows)]
        return [s for s in found[:limit] if s is not None], len(found) > limit

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        return await self._call(lambda c: self._session(c.execute(
            f"SELECT {self._SESSION_COLUMNS} FROM sessions s WHERE s.id = ?", (session_id,)).fetchone()))

    async def create_session(self, session_id: str, title: str | None) -> bool:
        now = time.time()

        def create(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(
                "INSERT OR IGNORE INTO sessions (id, created_at, updated_at, title) VALUES (?, ?, ?, ?)",
                (session_id, now, now, title))
            return cursor.rowcount == 1

        return await self._call(create)

    async def update_session(self, session_id: str, fields: dict[str, Any]) -> bool:
        columns = {k: (int(v) if isinstance(v, bool) else v) for k, v in fields.items()
                   if k in ("title", "pinned", "archived")}

        def update(conn: sqlite3.Connection) -> bool:
            if not columns:
                return conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is not None
            assignments = ", ".join(f"{k} = ?" for k in columns)
            return conn.execute(f"UPDATE sessions SET {assignments} WHERE id = ?",
                                (*columns.values(), session_id)).rowcount == 1

        return await self._call(update)

    async def delete_session(self, session_id: str) -> bool:
        def delete(conn: sqlite3.Connection) -> bool:
            with _Tx(conn):
                conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
                conn.execute("DELETE FROM session_keys WHERE session_id = ?", (session_id,))
                return conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount == 1

        return await self._call(delete)

    async def session_tool_names(self, session_id: str) -> dict[str, str]:
        """tool_call_id → tool name for every tool call of a session (tool messages name their tool)."""
        def names(conn: sqlite3.Connection) -> dict[str, str]:
            found: dict[str, str] = {}
            for (extra,) in conn.execute(
                "SELECT extra FROM messages WHERE session_id = ? AND extra LIKE '%tool_calls%'", (session_id,)
            ):
                for call in json.loads(extra).get("tool_calls") or ():
                    found[call["id"]] = call["function"]["name"]
            return found

        return await self._call(names)

    async def session_message_rows(self, session_id: str, *, limit: int, offset: int, newest_first: bool,
                                   include_compacted: bool) -> list[dict[str, Any]]:
        """A page of a session's messages in chronological order (compacted ones first when included)."""
        def rows(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            where = "" if include_compacted else "AND compacted = 0"
            direction = "DESC" if newest_first else "ASC"
            page = conn.execute(
                f"SELECT id, role, content, reasoning, extra, created_at, compacted FROM messages "
                f"WHERE session_id = ? {where} ORDER BY compacted {'ASC' if newest_first else 'DESC'}, id {direction} "
                "LIMIT ? OFFSET ?", (session_id, limit, offset)).fetchall()
            return sorted(page, key=lambda r: (-r[6], r[0]))

        return [
            {"id": f"m_{r[0]}", "role": r[1], "content": json.loads(r[2]), "reasoning": r[3],
             "extra": json.loads(r[4] or "{}"), "timestamp": r[5], "compacted": bool(r[6])}
            for r in await self._call(rows)
        ]

    async def session_for_key(self, scope: str, key: str) -> str | None:
        def find(conn: sqlite3.Connection) -> str | None:
            row = conn.execute("SELECT session_id FROM session_keys WHERE scope = ? AND key = ?", (scope, key)).fetchone()
            return row[0] if row else None

        return await self._call(find)

    async def bind_session_key(self, scope: str, key: str, session_id: str) -> None:
        await self._call(lambda c: c.execute(
            "INSERT INTO session_keys (scope, key, session_id, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(scope, key) DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at",
            (scope, key, session_id, time.time()),
        ))

    # -- responses -----------------------------------------------------------------------------------
    async def put_response(self, response: StoredResponse, items: Sequence[dict[str, Any]]) -> list[Eviction]:
        now = time.time()
        row = (
            response.id, response.scope, response.turn_id, response.session_id, response.previous_response_id,
            response.conversation, response.status, _dumps(response.snapshot), _dumps(response.input_items),
            response.instructions, _messages_json(response.messages),
            _dumps({"queued": response.queued, "commentary": response.commentary}), response.created_at or now, now,
        )
        # Only outputs of tools this server ran are indexed by call_id: a client's own
        # function_call_output for that call (sent back as input) must never replace the real one.
        input_ids = {item.get("id") for item in response.input_items}
        item_rows = [
            (item["id"], response.scope, response.id,
             item.get("call_id") if item.get("type") == "function_call_output" and item["id"] not in input_ids
             else None, _dumps(item))
            for item in items if isinstance(item.get("id"), str)
        ]

        def put(conn: sqlite3.Connection) -> list[Eviction]:
            with _Tx(conn):
                conn.execute(
                    f"INSERT INTO responses ({_RESPONSE_COLUMNS}, accessed_at) VALUES ({', '.join('?' * 14)}) "
                    "ON CONFLICT(id) DO UPDATE SET status = excluded.status, snapshot = excluded.snapshot, "
                    "messages = excluded.messages, accessed_at = excluded.accessed_at",
                    row,
                )
                conn.executemany("INSERT OR REPLACE INTO response_items VALUES (?, ?, ?, ?, ?)", item_rows)
                if response.conversation is not None:
                    conn.execute(
                        "INSERT INTO conversations (scope, name, response_id, updated_at) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT(scope, name) DO UPDATE SET response_id = excluded.response_id, "
                        "updated_at = excluded.updated_at",
                        (response.scope, response.conversation, response.id, now),
                    )
                return self._evict(conn)

        return await self._call(put)

    def _evict(self, conn: sqlite3.Connection) -> list[Eviction]:
        (count,) = conn.execute("SELECT COUNT(*) FROM responses").fetchone()
        excess = count - self.max_responses
        if excess <= 0:
            return []
        victims = conn.execute(
            "SELECT id, scope FROM responses WHERE status NOT IN ('queued', 'in_progress') "
            "ORDER BY accessed_at LIMIT ?", (excess,)
        ).fetchall()
        evicted = []
        for response_id, scope in victims:
            names = tuple(r[0] for r in conn.execute(
                "SELECT name FROM conversations WHERE scope = ? AND response_id = ?", (scope, response_id)))
            self._delete(conn, scope, response_id)
            evicted.append(Eviction(response_id, names))
        return evicted

    @staticmethod
    def _delete(conn: sqlite3.Connection, scope: str, response_id: str) -> bool:
        row = conn.execute("SELECT turn_id FROM responses WHERE id = ? AND scope = ?", (response_id, scope)).fetchone()
        if row is None:
            return False
        conn.execute("DELETE FROM conversations WHERE scope = ? AND response_id = ?", (scope, response_id))
        conn.execute("DELETE FROM journal_events WHERE turn_id = ?", (row[0],))
        conn.execute("UPDATE admissions SET state = 'tombstone', settled_at = ? WHERE turn_id = ?",
                     (time.time(), row[0]))
        conn.execute("DELETE FROM responses WHERE id = ?", (response_id,))
        return True

    async def get_response(self, scope: str, response_id: str) -> StoredResponse | None:
        def get(conn: sqlite3.Connection) -> StoredResponse | None:
            row = conn.execute(
                f"SELECT {_RESPONSE_COLUMNS} FROM responses WHERE id = ? AND scope = ?", (response_id, scope)
            ).fetchone()
            if row is None:
                return None
            conn.execute("UPDATE responses SET accessed_at = ? WHERE id = ?", (time.time(), response_id))
            return _response(row)

        return await self._call(get)

    async def delete_response(self, scope: str, response_id: str) -> bool:
        def delete(conn: sqlite3.Connection) -> bool:
            with _Tx(conn):
                return self._delete(conn, scope, response_id)

        return await self._call(delete)

    async def conversation_head(self, scope: str, name: str) -> str | None:
        def head(conn: sqlite3.Connection) -> str | None:
            row = conn.execute("SELECT response_id FROM conversations WHERE scope = ? AND name = ?", (scope, name)).fetchone()
            return row[0] if row else None

        return await self._call(head)

    async def chain_messages(self, scope: str, response_id: str) -> list[Message]:
        def chain(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute(
                "WITH RECURSIVE chain(id, prev, messages, depth) AS ("
                " SELECT id, previous_response_id, messages, 0 FROM responses WHERE id = ? AND scope = ?"
                " UNION ALL SELECT r.id, r.previous_response_id, r.messages, chain.depth + 1"
                " FROM responses r JOIN chain ON r.id = chain.prev WHERE r.scope = ?)"
                " SELECT messages FROM chain ORDER BY depth DESC",
                (response_id, scope, scope),
            ).fetchall()
            return [r[0] for r in rows]

        return [m for raw in await self._call(chain) for m in _messages(raw)]

    async def find_item(self, scope: str, item_id: str) -> dict[str, Any] | None:
        def find(conn: sqlite3.Connection) -> str | None:
            row = conn.execute("SELECT item FROM response_items WHERE item_id = ? AND scope = ?", (item_id, scope)).fetchone()
            return row[0] if row else None

        raw = await self._call(find)
        return json.loads(raw) if raw is not None else None

    async def find_tool_output(self, scope: str, call_id: str) -> str | None:
        def find(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT item FROM response_items WHERE scope = ? AND call_id = ? ORDER BY rowid DESC LIMIT 1",
                (scope, call_id),
            ).fetchone()
            return row[0] if row else None

        raw = await self._call(find)
        return json.loads(raw).get("output") if raw is not None else None

    async def unsettled_responses(self) -> list[StoredResponse]:
        def find(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            return conn.execute(
                f"SELECT {_RESPONSE_COLUMNS} FROM responses WHERE status IN ('queued', 'in_progress')"
            ).fetchall()

        return [_response(row) for row in await self._call(find)]

    # -- admissions ----------------------------------------------------------------------------------
    _ADMISSION_COLUMNS = "scope, surface, key, identity, target, state, turn_id, reply, owner, created_at, settled_at"

    @staticmethod
    def _admission(row: Sequence[Any] | None) -> AdmissionRecord | None:
        if row is None:
            return None
        return AdmissionRecord(row[0], row[1], row[2], row[3], row[4], row[5], row[6], json.loads(row[7]), row[8],
                               row[9], row[10])

    @staticmethod
    def _admission_row(r: AdmissionRecord) -> tuple[Any, ...]:
        return (r.scope, r.surface, r.key, r.identity, r.target, r.state, r.turn_id, _dumps(r.reply), r.owner,
                r.created_at or time.time(), r.settled_at)

    async def get_admission(self, scope: str, surface: str, key: str) -> AdmissionRecord | None:
        return await self._call(lambda c: self._admission(c.execute(
            f"SELECT {self._ADMISSION_COLUMNS} FROM admissions WHERE scope = ? AND surface = ? AND key = ?",
            (scope, surface, key)).fetchone()))

    async def reserve_admission(self, record: AdmissionRecord) -> AdmissionRecord | None:
        row = self._admission_row(record)

        def reserve(conn: sqlite3.Connection) -> AdmissionRecord | None:
            with _Tx(conn):
                existing = conn.execute(
                    f"SELECT {self._ADMISSION_COLUMNS} FROM admissions WHERE scope = ? AND surface = ? AND key = ?",
                    row[:3]).fetchone()
                if existing is not None:
                    return self._admission(existing)
                conn.execute(f"INSERT INTO admissions ({self._ADMISSION_COLUMNS}) VALUES ({', '.join('?' * 11)})", row)
                return None

        return await self._call(reserve)

    async def replace_admission(self, record: AdmissionRecord) -> None:
        row = self._admission_row(record)
        await self._call(lambda c: c.execute(
            f"INSERT OR REPLACE INTO admissions ({self._ADMISSION_COLUMNS}) VALUES ({', '.join('?' * 11)})", row))

    async def settle_admission(self, turn_id: str) -> None:
        await self._call(lambda c: c.execute(
            "UPDATE admissions SET state = 'settled', settled_at = ? WHERE turn_id = ? AND state = 'running'",
            (time.time(), turn_id)))

    async def tombstone_admission(self, turn_id: str) -> None:
        await self._call(lambda c: c.execute(
            "UPDATE admissions SET state = 'tombstone', settled_at = ? WHERE turn_id = ?", (time.time(), turn_id)))

    async def mark_unknown_admissions(self, owner: str) -> list[str]:
        def mark(conn: sqlite3.Connection) -> list[str]:
            with _Tx(conn):
                turns = [r[0] for r in conn.execute(
                    "SELECT turn_id FROM admissions WHERE state = 'running' AND owner IS NOT ?", (owner,))]
                conn.execute("UPDATE admissions SET state = 'unknown', settled_at = ? "
                             "WHERE state = 'running' AND owner IS NOT ?", (time.time(), owner))
                return turns

        return await self._call(mark)

    async def admission_for_turn(self, scope: str, turn_id: str) -> AdmissionRecord | None:
        return await self._call(lambda c: self._admission(c.execute(
            f"SELECT {self._ADMISSION_COLUMNS} FROM admissions WHERE turn_id = ? AND scope = ?",
            (turn_id, scope)).fetchone()))

    async def delete_admission(self, scope: str, surface: str, key: str) -> None:
        await self._call(lambda c: c.execute(
            "DELETE FROM admissions WHERE scope = ? AND surface = ? AND key = ?", (scope, surface, key)))

    # -- journals ------------------------------------------------------------------------------------
    async def append_journals(self, batches: Sequence[tuple[str, int, Sequence[str]]]) -> None:
        rows = [(turn_id, first + i, event) for turn_id, first, events in batches for i, event in enumerate(events)]

        def append(conn: sqlite3.Connection) -> None:
            with _Tx(conn):
                conn.executemany("INSERT OR REPLACE INTO journal_events (turn_id, seq, event) VALUES (?, ?, ?)", rows)

        await self._call(append)

    async def load_journal(self, turn_id: str) -> list[str]:
        def load(conn: sqlite3.Connection) -> list[str]:
            return [r[0] for r in conn.execute("SELECT event FROM journal_events WHERE turn_id = ? ORDER BY seq", (turn_id,))]

        return await self._call(load)


class MemoryStore(SqliteStore):
    """The same schema in memory: nothing survives a restart (`durable` is False)."""

    def __init__(self, *, max_responses: int = 10000) -> None:
        super().__init__(None, max_responses=max_responses)
