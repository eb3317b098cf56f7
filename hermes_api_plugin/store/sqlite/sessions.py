"""SqliteSessionStore: sessions and their messages in the `sessions` and `messages` tables.

Touches no other table, so the plugin store can move elsewhere (or the sessions to Hermes' SessionDB)
without this module knowing. Runs on the shared `SqliteDatabase`, which opens and closes it.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from ...core.content import Message
from ...core.offload import LARGE_MESSAGES
from ..base import ForkResult, SessionInfo, SessionMessageRow
from ..metered import metered
from ..rows import json_text, message_rows, session_from_row
from ..sql import sessions as S
from .db import SqliteDatabase, transaction

_SUMMARY = json_text({"summary": True})  # `extra` of the summary message a compaction inserts


@metered
class SqliteSessionStore:
    """The SessionStore protocol over the plugin's own SQLite tables."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    async def load_session_messages(self, session_id: str) -> list[Message]:
        # Decoded on the database thread: a long transcript would hold the event loop (issue 20, defect 3).
        def load(conn: sqlite3.Connection) -> list[Message]:
            rows = conn.execute(S.LIVE_MESSAGES.sqlite, (session_id,)).fetchall()
            return [
                Message.from_json(
                    {
                        "role": row["role"],
                        "content": json.loads(row["content"]),
                        "reasoning": row["reasoning"],
                        **json.loads(row["extra"] or "{}"),
                    }
                )
                for row in rows
            ]

        return await self.db.call(load)

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

        # A long transcript is encoded on the database thread: on the loop it would hold every other request (issue
        # 20, defect 3). A short one stays here: a few long answers encoded on that thread would be allocated in
        # another malloc arena, which keeps the memory after they are freed (the stalled-readers test saw +100 MiB).
        def encode() -> list[tuple[Any, ...]]:
            return message_rows(session_id, messages, now, lambda reasoning: reasoning)

        encoded = encode() if len(messages) <= LARGE_MESSAGES else None

        def append(conn: sqlite3.Connection) -> None:
            rows = encoded if encoded is not None else encode()
            conn.execute(S.TOUCH_SESSION.sqlite, (session_id, now, now, model, usage[0], usage[1]))
            if compaction is not None:
                conn.execute(S.COMPACT_MESSAGES.sqlite, (session_id,))
                summary = json_text([{"type": "text", "text": compaction}])
                conn.execute(S.INSERT_MESSAGE.sqlite, (session_id, "user", summary, None, _SUMMARY, now))
            conn.executemany(S.INSERT_MESSAGE.sqlite, rows)

        # Group-committed with the transcripts of turns settling meanwhile: one round trip, one commit (db.py).
        await self.db.grouped(append)

    async def list_sessions(
        self, limit: int, offset: int, source: str | None, include_children: bool = False
    ) -> tuple[list[SessionInfo], bool]:
        # include_children: this store has no sub-agent runs nor compression continuations to hide
        statement, args = (S.LIST_SESSIONS_OF_SOURCE.sqlite, (source,)) if source else (S.LIST_SESSIONS.sqlite, ())

        def rows(conn: sqlite3.Connection) -> list[sqlite3.Row]:
            return conn.execute(statement, (*args, limit + 1, offset)).fetchall()  # one row beyond: more follow?

        found = [s for s in map(session_from_row, await self.db.call(rows)) if s is not None]
        return found[:limit], len(found) > limit

    async def live_session_id(self, session_id: str) -> str:
        return session_id  # compaction here archives in place: a session never continues under another id

    async def get_session(self, session_id: str) -> SessionInfo | None:
        return await self.db.call(lambda c: session_from_row(c.execute(S.GET_SESSION.sqlite, (session_id,)).fetchone()))

    async def create_session(self, session_id: str, title: str | None) -> bool:
        now = time.time()

        def create(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(S.CREATE_SESSION.sqlite, (session_id, now, now, title))
            return cursor.rowcount == 1

        return await self.db.call(create)

    async def seed_session(self, session_id: str, messages: Sequence[Message]) -> bool:
        if not await self.create_session(session_id, None):  # atomic: of two seeds of one id, one creates it
            return False
        await self.append_session_messages(session_id, messages)
        return True

    async def update_session(self, session_id: str, fields: dict[str, Any]) -> bool:
        # Column names come from the fixed assignments, never from the request.
        columns = {k: (int(v) if isinstance(v, bool) else v) for k, v in fields.items() if k in S.UPDATABLE}

        if "end_reason" in fields:  # this store keeps no reason, only that the session ended
            columns["ended_at"] = time.time()

        def update(conn: sqlite3.Connection) -> bool:
            if not columns:
                return conn.execute(S.SESSION_EXISTS.sqlite, (session_id,)).fetchone() is not None
            assignments = ", ".join(S.SESSION_ASSIGNMENTS[k].sqlite for k in columns)
            update = S.UPDATE_SESSION.sqlite.format(assignments=assignments)
            return conn.execute(update, (*columns.values(), session_id)).rowcount == 1

        return await self.db.call(update)

    async def delete_session(self, session_id: str) -> bool:
        def delete(conn: sqlite3.Connection) -> bool:
            with transaction(conn):
                conn.execute(S.DELETE_MESSAGES.sqlite, (session_id,))
                return conn.execute(S.DELETE_SESSION.sqlite, (session_id,)).rowcount == 1

        return await self.db.call(delete)

    async def fork_session(self, session_id: str, fork_id: str, title: str | None) -> ForkResult:
        """A child session with the original's messages (compacted ones too, still compacted); the original
        stays open. Default title: the original's with " (fork)"."""
        now = time.time()

        def fork(conn: sqlite3.Connection) -> ForkResult:
            with transaction(conn):
                source = conn.execute(S.FORK_SOURCE.sqlite, (session_id,)).fetchone()
                if source is None:
                    return "no_source"
                name = title if title is not None else (f"{source['title']} (fork)" if source["title"] else None)
                created = conn.execute(S.FORK_SESSION.sqlite, (fork_id, now, now, name, source["model"], session_id))
                if created.rowcount != 1:
                    return "exists"
                conn.execute(S.FORK_MESSAGES.sqlite, (fork_id, session_id))
                return "forked"

        return await self.db.call(fork)

    async def session_tool_names(self, session_id: str) -> dict[str, str]:
        """tool_call_id → tool name for every tool call of a session (tool messages name their tool)."""

        def names(conn: sqlite3.Connection) -> dict[str, str]:
            found: dict[str, str] = {}
            for row in conn.execute(S.TOOL_CALL_MESSAGES.sqlite, (session_id,)):
                for call in json.loads(row["extra"]).get("tool_calls") or ():
                    found[call["id"]] = call["function"]["name"]
            return found

        return await self.db.call(names)

    async def session_message_rows(
        self, session_id: str, *, limit: int, offset: int, newest_first: bool, include_compacted: bool
    ) -> list[SessionMessageRow]:
        """A page of a session's messages in chronological order (compacted ones first when included)."""

        statement = S.MESSAGE_PAGES[newest_first, include_compacted].sqlite

        def rows(conn: sqlite3.Connection) -> list[sqlite3.Row]:
            page = conn.execute(statement, (session_id, limit, offset)).fetchall()
            return sorted(page, key=lambda r: (-r["compacted"], r["id"]))

        return [
            {
                "id": f"m_{r['id']}",
                "role": r["role"],
                "content": json.loads(r["content"]),
                "reasoning": r["reasoning"],
                "extra": json.loads(r["extra"] or "{}"),
                "timestamp": r["created_at"],
                "compacted": bool(r["compacted"]),
            }
            for r in await self.db.call(rows)
        ]
