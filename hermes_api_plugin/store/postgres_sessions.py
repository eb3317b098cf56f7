"""PostgresSessionStore: sessions and their messages in the `sessions` and `messages` tables of the PostgreSQL store.

The plugin's own session tables on PostgreSQL, as SqliteSessionStore keeps them on SQLite: the SessionStore of the
scripted runtime (the hermes runtime keeps its sessions in Hermes' SessionDB). Touches no other table. Runs on the
shared `PostgresDatabase`, which the plugin store opens and closes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from ..core.content import Message
from ..core.offload import LARGE_MESSAGES, off_loop
from .base import ForkResult, SessionInfo, SessionMessageRow
from .postgres_db import PostgresDatabase
from .postgres_text import text_in, text_out
from .rows import message_rows, session_from_row
from .sqlite_db import json_text

_SESSION_COLUMNS = (
    "s.id, s.source, s.title, s.model, s.created_at, s.ended_at, s.updated_at, s.input_tokens, s.output_tokens, "
    "s.parent_session_id, s.pinned, s.archived, "
    "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id AND NOT m.compacted) AS message_count, "
    "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id AND m.role = 'tool') AS tool_call_count, "
    # The preview skips the user-role summary message a compaction inserts (strpos, not LIKE: no % to escape).
    "(SELECT m.content FROM messages m WHERE m.session_id = s.id AND m.role = 'user' "
    "AND (m.extra IS NULL OR strpos(m.extra, '\"summary\"') = 0) ORDER BY m.id LIMIT 1) AS first_user_content"
)
_UPDATABLE = ("title", "pinned", "archived")
_SUMMARY = json_text({"summary": True})  # `extra` of the summary message a compaction inserts
_INSERT_MESSAGE = (
    "INSERT INTO messages (session_id, role, content, reasoning, extra, created_at) VALUES (%s, %s, %s, %s, %s, %s)"
)


class PostgresSessionStore:
    """The SessionStore protocol over the plugin's own PostgreSQL tables."""

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    async def load_session_messages(self, session_id: str) -> list[Message]:
        async with self.db.connection() as conn:
            cursor = await conn.execute(
                "SELECT role, content, reasoning, extra FROM messages WHERE session_id = %s AND NOT compacted "
                "ORDER BY id",
                (session_id,),
            )
            rows = await cursor.fetchall()

        def decode() -> list[Message]:
            return [
                Message.from_json(
                    {
                        "role": row["role"],
                        "content": json.loads(row["content"]),
                        "reasoning": text_in(row["reasoning"]),
                        **json.loads(row["extra"] or "{}"),
                    }
                )
                for row in rows
            ]

        return await off_loop(decode, len(rows) > LARGE_MESSAGES)  # a long transcript (issue 20, defect 3)

    async def append_session_messages(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        usage: tuple[int, int] = (0, 0),
        compaction: str | None = None,
    ) -> None:
        """Append a turn's messages; a compaction first archives the live transcript behind its summary."""
        now = time.time()

        rows = await off_loop(
            lambda: message_rows(session_id, messages, now, text_out), len(messages) > LARGE_MESSAGES
        )  # a long transcript (issue 20, defect 3)
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO sessions (id, created_at, updated_at, model, input_tokens, output_tokens) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET updated_at = EXCLUDED.updated_at, "
                "model = COALESCE(EXCLUDED.model, sessions.model), "
                "input_tokens = sessions.input_tokens + EXCLUDED.input_tokens, "
                "output_tokens = sessions.output_tokens + EXCLUDED.output_tokens",
                (session_id, now, now, model, usage[0], usage[1]),
            )
            if compaction is not None:
                await conn.execute(
                    "UPDATE messages SET compacted = TRUE WHERE session_id = %s AND NOT compacted", (session_id,)
                )
                summary = json_text([{"type": "text", "text": compaction}])
                await conn.execute(
                    _INSERT_MESSAGE, (session_id, "user", summary, None, json_text({"summary": True}), now)
                )
            if rows:
                async with conn.cursor() as cursor:
                    await cursor.executemany(_INSERT_MESSAGE, rows)

    async def list_sessions(
        self, limit: int, offset: int, source: str | None, include_children: bool = False
    ) -> tuple[list[SessionInfo], bool]:
        # include_children: this store has no sub-agent runs nor compression continuations to hide
        where, args = ("WHERE s.source = %s", [source]) if source else ("", [])
        async with self.db.connection() as conn:
            # One row beyond the page tells whether more follow.
            cursor = await conn.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions s {where} ORDER BY s.updated_at DESC, s.id "
                "LIMIT %s OFFSET %s",
                (*args, limit + 1, offset),
            )
            rows = await cursor.fetchall()
        found = [s for s in map(session_from_row, rows) if s is not None]
        return found[:limit], len(found) > limit

    async def live_session_id(self, session_id: str) -> str:
        return session_id  # compaction here archives in place: a session never continues under another id

    async def get_session(self, session_id: str) -> SessionInfo | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE s.id = %s", (session_id,))
            return session_from_row(await cursor.fetchone())

    async def create_session(self, session_id: str, title: str | None) -> bool:
        now = time.time()
        async with self.db.connection() as conn:
            cursor = await conn.execute(
                "INSERT INTO sessions (id, created_at, updated_at, title) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (id) DO NOTHING",
                (session_id, now, now, title),
            )
            return cursor.rowcount == 1

    async def seed_session(self, session_id: str, messages: Sequence[Message]) -> bool:
        if not await self.create_session(session_id, None):  # atomic: of two seeds of one id, one creates it
            return False
        await self.append_session_messages(session_id, messages)
        return True

    async def update_session(self, session_id: str, fields: dict[str, Any]) -> bool:
        # Column names come from the fixed _UPDATABLE list, never from the request.
        columns: dict[str, Any] = {
            k: (bool(v) if k in ("pinned", "archived") else v) for k, v in fields.items() if k in _UPDATABLE
        }
        if "end_reason" in fields:  # this store keeps no reason, only that the session ended
            columns["ended_at"] = time.time()
        async with self.db.connection() as conn:
            if not columns:
                cursor = await conn.execute("SELECT 1 FROM sessions WHERE id = %s", (session_id,))
                return await cursor.fetchone() is not None
            assignments = ", ".join(
                "ended_at = COALESCE(ended_at, %s)" if k == "ended_at" else f"{k} = %s" for k in columns
            )
            cursor = await conn.execute(
                f"UPDATE sessions SET {assignments} WHERE id = %s", (*columns.values(), session_id)
            )
            return cursor.rowcount == 1

    async def delete_session(self, session_id: str) -> bool:
        async with self.db.transaction() as conn:
            await conn.execute("DELETE FROM messages WHERE session_id = %s", (session_id,))
            cursor = await conn.execute("DELETE FROM sessions WHERE id = %s", (session_id,))
            return cursor.rowcount == 1

    async def fork_session(self, session_id: str, fork_id: str, title: str | None) -> ForkResult:
        """A child session with the original's messages (compacted ones too, still compacted); the original
        stays open. Default title: the original's with " (fork)"."""
        now = time.time()
        async with self.db.transaction() as conn:
            cursor = await conn.execute("SELECT title, model FROM sessions WHERE id = %s", (session_id,))
            source = await cursor.fetchone()
            if source is None:
                return "no_source"
            name = title if title is not None else (f"{source['title']} (fork)" if source["title"] else None)
            # ON CONFLICT, not a check first: two forks to one id at once must not both pass a check.
            cursor = await conn.execute(
                "INSERT INTO sessions (id, created_at, updated_at, title, model, parent_session_id) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
                (fork_id, now, now, name, source["model"], session_id),
            )
            if cursor.rowcount != 1:
                return "exists"
            await conn.execute(
                "INSERT INTO messages (session_id, role, content, reasoning, extra, created_at, compacted) "
                "SELECT %s, role, content, reasoning, extra, created_at, compacted FROM messages "
                "WHERE session_id = %s ORDER BY id",
                (fork_id, session_id),
            )
            return "forked"

    async def session_tool_names(self, session_id: str) -> dict[str, str]:
        """tool_call_id → tool name for every tool call of a session (tool messages name their tool)."""
        async with self.db.connection() as conn:
            cursor = await conn.execute(
                "SELECT extra FROM messages WHERE session_id = %s AND strpos(extra, 'tool_calls') > 0 ORDER BY id",
                (session_id,),
            )
            rows = await cursor.fetchall()
        found: dict[str, str] = {}
        for row in rows:
            for call in json.loads(row["extra"]).get("tool_calls") or ():
                found[call["id"]] = call["function"]["name"]
        return found

    async def session_message_rows(
        self, session_id: str, *, limit: int, offset: int, newest_first: bool, include_compacted: bool
    ) -> list[SessionMessageRow]:
        """A page of a session's messages in chronological order (compacted ones first when included)."""
        where = "" if include_compacted else "AND NOT compacted"
        order = "compacted ASC, id DESC" if newest_first else "compacted DESC, id ASC"
        async with self.db.connection() as conn:
            cursor = await conn.execute(
                f"SELECT id, role, content, reasoning, extra, created_at, compacted FROM messages "
                f"WHERE session_id = %s {where} ORDER BY {order} LIMIT %s OFFSET %s",
                (session_id, limit, offset),
            )
            page = await cursor.fetchall()
        return [
            {
                "id": f"m_{r['id']}",
                "role": r["role"],
                "content": json.loads(r["content"]),
                "reasoning": text_in(r["reasoning"]),
                "extra": json.loads(r["extra"] or "{}"),
                "timestamp": r["created_at"],
                "compacted": bool(r["compacted"]),
            }
            for r in sorted(page, key=lambda r: (not r["compacted"], r["id"]))
        ]
