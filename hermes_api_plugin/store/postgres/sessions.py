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

from ...core.content import Message
from ...core.offload import LARGE_MESSAGES, off_loop
from ..base import ForkResult, SessionInfo, SessionMessageRow
from ..metered import metered
from ..rows import json_text, message_rows, session_from_row
from ..sql import sessions as S
from .db import PostgresDatabase
from .text import text_in, text_out

_SUMMARY = json_text({"summary": True})  # `extra` of the summary message a compaction inserts


@metered
class PostgresSessionStore:
    """The SessionStore protocol over the plugin's own PostgreSQL tables."""

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    async def load_session_messages(self, session_id: str) -> list[Message]:
        async with self.db.connection() as conn:
            cursor = await conn.execute(S.LIVE_MESSAGES.postgres, (session_id,))
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
            await conn.execute(S.TOUCH_SESSION.postgres, (session_id, now, now, model, usage[0], usage[1]))
            if compaction is not None:
                await conn.execute(S.COMPACT_MESSAGES.postgres, (session_id,))
                summary = json_text([{"type": "text", "text": compaction}])
                await conn.execute(S.INSERT_MESSAGE.postgres, (session_id, "user", summary, None, _SUMMARY, now))
            if rows:
                async with conn.cursor() as cursor:
                    await cursor.executemany(S.INSERT_MESSAGE.postgres, rows)

    async def list_sessions(
        self, limit: int, offset: int, source: str | None, include_children: bool = False
    ) -> tuple[list[SessionInfo], bool]:
        # include_children: this store has no sub-agent runs nor compression continuations to hide
        statement, args = (S.LIST_SESSIONS_OF_SOURCE.postgres, (source,)) if source else (S.LIST_SESSIONS.postgres, ())
        async with self.db.connection() as conn:
            cursor = await conn.execute(statement, (*args, limit + 1, offset))  # one row beyond: more follow?
            rows = await cursor.fetchall()
        found = [s for s in map(session_from_row, rows) if s is not None]
        return found[:limit], len(found) > limit

    async def live_session_id(self, session_id: str) -> str:
        return session_id  # compaction here archives in place: a session never continues under another id

    async def get_session(self, session_id: str) -> SessionInfo | None:
        async with self.db.connection() as conn:
            cursor = await conn.execute(S.GET_SESSION.postgres, (session_id,))
            return session_from_row(await cursor.fetchone())

    async def create_session(self, session_id: str, title: str | None) -> bool:
        now = time.time()
        async with self.db.connection() as conn:
            cursor = await conn.execute(S.CREATE_SESSION.postgres, (session_id, now, now, title))
            return cursor.rowcount == 1

    async def seed_session(self, session_id: str, messages: Sequence[Message]) -> bool:
        if not await self.create_session(session_id, None):  # atomic: of two seeds of one id, one creates it
            return False
        await self.append_session_messages(session_id, messages)
        return True

    async def update_session(self, session_id: str, fields: dict[str, Any]) -> bool:
        # Column names come from the fixed assignments, never from the request.
        columns: dict[str, Any] = {
            k: (bool(v) if k in ("pinned", "archived") else v) for k, v in fields.items() if k in S.UPDATABLE
        }
        if "end_reason" in fields:  # this store keeps no reason, only that the session ended
            columns["ended_at"] = time.time()
        async with self.db.connection() as conn:
            if not columns:
                cursor = await conn.execute(S.SESSION_EXISTS.postgres, (session_id,))
                return await cursor.fetchone() is not None
            assignments = ", ".join(S.SESSION_ASSIGNMENTS[k].postgres for k in columns)
            update = S.UPDATE_SESSION.postgres.format(assignments=assignments)
            cursor = await conn.execute(update, (*columns.values(), session_id))
            return cursor.rowcount == 1

    async def delete_session(self, session_id: str) -> bool:
        async with self.db.transaction() as conn:
            await conn.execute(S.DELETE_MESSAGES.postgres, (session_id,))
            cursor = await conn.execute(S.DELETE_SESSION.postgres, (session_id,))
            return cursor.rowcount == 1

    async def fork_session(self, session_id: str, fork_id: str, title: str | None) -> ForkResult:
        """A child session with the original's messages (compacted ones too, still compacted); the original
        stays open. Default title: the original's with " (fork)"."""
        now = time.time()
        async with self.db.transaction() as conn:
            cursor = await conn.execute(S.FORK_SOURCE.postgres, (session_id,))
            source = await cursor.fetchone()
            if source is None:
                return "no_source"
            name = title if title is not None else (f"{source['title']} (fork)" if source["title"] else None)
            cursor = await conn.execute(S.FORK_SESSION.postgres, (fork_id, now, now, name, source["model"], session_id))
            if cursor.rowcount != 1:
                return "exists"
            await conn.execute(S.FORK_MESSAGES.postgres, (fork_id, session_id))
            return "forked"

    async def session_tool_names(self, session_id: str) -> dict[str, str]:
        """tool_call_id → tool name for every tool call of a session (tool messages name their tool)."""
        async with self.db.connection() as conn:
            cursor = await conn.execute(S.TOOL_CALL_MESSAGES.postgres, (session_id,))
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
        statement = S.MESSAGE_PAGES[newest_first, include_compacted].postgres
        async with self.db.connection() as conn:
            cursor = await conn.execute(statement, (session_id, limit, offset))
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
