"""The statements of the plugin's own session tables (`sessions`, `messages`), the same on SQLite and PostgreSQL.

`compacted` is an INTEGER 0/1 on SQLite and a BOOLEAN on PostgreSQL: `NOT compacted` and `= TRUE` read and write
both. A page of messages and a list of sessions come in their few shapes, each made once here.
"""

from __future__ import annotations

from .statement import Statement, sql

# What `/api/sessions` shows of a session (rows.session_from_row). The preview skips the user-role summary message
# a compaction inserts.
_SESSION_COLUMNS = (
    "s.id, s.source, s.title, s.model, s.created_at, s.ended_at, s.updated_at, s.input_tokens, s.output_tokens, "
    "s.parent_session_id, s.pinned, s.archived, "
    "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id AND NOT m.compacted) AS message_count, "
    "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id AND m.role = 'tool') AS tool_call_count, "
    "(SELECT m.content FROM messages m WHERE m.session_id = s.id AND m.role = 'user' "
    "AND (m.extra IS NULL OR m.extra NOT LIKE '%\"summary\"%') ORDER BY m.id LIMIT 1) AS first_user_content"
)
# One row beyond the page tells whether more follow.
LIST_SESSIONS = sql(f"SELECT {_SESSION_COLUMNS} FROM sessions s ORDER BY s.updated_at DESC, s.id LIMIT ? OFFSET ?")
LIST_SESSIONS_OF_SOURCE = sql(
    f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE s.source = ? ORDER BY s.updated_at DESC, s.id LIMIT ? OFFSET ?"
)
GET_SESSION = sql(f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE s.id = ?")
SESSION_EXISTS = sql("SELECT 1 FROM sessions WHERE id = ?")
CREATE_SESSION = sql(
    "INSERT INTO sessions (id, created_at, updated_at, title) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING"
)
# A turn's append: the session is created when new, its usage added.
TOUCH_SESSION = sql(
    "INSERT INTO sessions (id, created_at, updated_at, model, input_tokens, output_tokens) VALUES (?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at, "
    "model = COALESCE(excluded.model, sessions.model), "
    "input_tokens = sessions.input_tokens + excluded.input_tokens, "
    "output_tokens = sessions.output_tokens + excluded.output_tokens"
)
# `UPDATE sessions SET {assignments} WHERE id = ?`, the assignments of the fields given (fixed names, never the
# request's) joined with ", ".
UPDATABLE = ("title", "pinned", "archived")  # what `update_session` sets as given; `end_reason` sets `ended_at`
UPDATE_SESSION = sql("UPDATE sessions SET {assignments} WHERE id = ?")
SESSION_ASSIGNMENTS = {
    "title": sql("title = ?"),
    "pinned": sql("pinned = ?"),
    "archived": sql("archived = ?"),
    "ended_at": sql("ended_at = COALESCE(ended_at, ?)"),  # an ended session keeps when it ended
}
DELETE_SESSION = sql("DELETE FROM sessions WHERE id = ?")
FORK_SOURCE = sql("SELECT title, model FROM sessions WHERE id = ?")
# ON CONFLICT, not a check first: two forks to one id at once must not both pass a check.
FORK_SESSION = sql(
    "INSERT INTO sessions (id, created_at, updated_at, title, model, parent_session_id) VALUES (?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO NOTHING"
)
FORK_MESSAGES = sql(
    "INSERT INTO messages (session_id, role, content, reasoning, extra, created_at, compacted) "
    "SELECT ?, role, content, reasoning, extra, created_at, compacted FROM messages WHERE session_id = ? ORDER BY id"
)

LIVE_MESSAGES = sql(
    "SELECT role, content, reasoning, extra FROM messages WHERE session_id = ? AND NOT compacted ORDER BY id"
)
INSERT_MESSAGE = sql(
    "INSERT INTO messages (session_id, role, content, reasoning, extra, created_at) VALUES (?, ?, ?, ?, ?, ?)"
)
COMPACT_MESSAGES = sql("UPDATE messages SET compacted = TRUE WHERE session_id = ? AND NOT compacted")
DELETE_MESSAGES = sql("DELETE FROM messages WHERE session_id = ?")
# `_` in LIKE matches any character: a row it lets through without tool calls parses to none.
TOOL_CALL_MESSAGES = sql("SELECT extra FROM messages WHERE session_id = ? AND extra LIKE '%tool_calls%' ORDER BY id")


def _message_page(newest_first: bool, include_compacted: bool) -> Statement:
    where = "" if include_compacted else " AND NOT compacted"
    order = "compacted ASC, id DESC" if newest_first else "compacted DESC, id ASC"
    return sql(
        "SELECT id, role, content, reasoning, extra, created_at, compacted FROM messages "
        f"WHERE session_id = ?{where} ORDER BY {order} LIMIT ? OFFSET ?"
    )


# (newest_first, include_compacted) → a page of a session's messages: archived first, then in append order.
MESSAGE_PAGES = {
    (newest, compacted): _message_page(newest, compacted) for newest in (False, True) for compacted in (False, True)
}
