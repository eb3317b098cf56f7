"""HermesSessionStore: the SessionStore protocol on Hermes' own session store (`hermes_state.SessionDB`, WIRE §14.1).

With the `hermes` runtime, `/api/sessions…` and session chat read and write `$HERMES_HOME/state.db`, as Hermes'
built-in api_server does: sessions of the CLI, the TUI and the messaging platforms are listed and continued, and
API sessions (source `api_server`) are Hermes sessions `hermes sessions` lists too.

Only public SessionDB methods are called here (each declared in `compat/sessions.py`'s `SESSION_DB.attrs`, so
tests/hermes/test_compat.py catches a rename); the SessionDB object itself comes from
`compat.sessions.session_db()`.
SessionDB is synchronous (its own lock, one connection shared across threads): every call runs in a worker
thread so the event loop never waits on SQLite.

`agent_writes_turns`: the hermes runtime hands this same SessionDB to each `AIAgent`, which appends the turn's
messages, token counts, title and compaction continuations itself (as under the built-in server). The turn's
transcript is then not appended a second time by the plugin: `append_session_messages` does nothing.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from ..core.content import Message, TextPart
from ..core.errors import ApiError, invalid_request
from ..store.base import ForkResult, SessionInfo, SessionMessageRow

API_SOURCE = "api_server"  # the source Hermes gives sessions of its api_server platform
_PINNED_META = "hermes_api_plugin.pinned:"  # SessionDB has no pinned column: kept in its state_meta table
_ROLES = ("user", "assistant", "tool")  # Hermes also keeps rows the chat shape has no place for
_PREVIEW_CHARS = 60  # as Hermes' own session list (list_sessions_rich) cuts its preview
_T = TypeVar("_T")


def _preview(text: str | None) -> str | None:
    """Hermes' list preview: newlines as spaces, 60 characters, "..." when cut; None when there is none."""
    raw = (text or "").replace("\n", " ").replace("\r", " ").strip()
    if not raw:
        return None
    return raw[:_PREVIEW_CHARS] + ("..." if len(raw) > _PREVIEW_CHARS else "")


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _parts(content: Any) -> list[dict[str, Any]]:
    """Hermes' stored content (a string, or OpenAI content parts) as this plugin's JSON content parts."""
    if isinstance(content, list):
        try:
            return [p.to_json() for p in Message.from_json({"content": content}).parts]
        except ApiError:  # a part this plugin does not model (audio, a file): its text survives
            pass
    text = _text_of(content)
    return [TextPart(text).to_json()] if text else []


def _message(row: dict[str, Any]) -> Message:
    """One message of Hermes' conversation shape (`get_messages_as_conversation`) as the agent's Message."""
    body = {
        "role": row["role"],
        "content": _parts(row.get("content")),
        "reasoning": row.get("reasoning") or row.get("reasoning_content") or None,
        "tool_calls": row.get("tool_calls") or None,
        "tool_call_id": row.get("tool_call_id"),
    }
    return replace(Message.from_json(body), native=dict(row))


def _hermes_content(message: Message) -> Any:
    """What Hermes stores as content: the text, or OpenAI content parts when the message has images."""
    return [p.to_json() for p in message.parts] if message.images else message.text


def _info(row: dict[str, Any], *, preview: str | None, last_active: float, pinned: bool) -> SessionInfo:
    started = float(row.get("started_at") or 0.0)
    return {
        "id": row["id"],
        "source": row.get("source") or API_SOURCE,
        "title": row.get("title") or None,
        "model": row.get("model") or None,
        "started_at": started,
        "ended_at": row.get("ended_at"),
        "last_active": max(float(last_active or started), started),
        "message_count": int(row.get("message_count") or 0),
        "tool_call_count": int(row.get("tool_call_count") or 0),
        "input_tokens": int(row.get("input_tokens") or 0),
        "output_tokens": int(row.get("output_tokens") or 0),
        "parent_session_id": row.get("parent_session_id"),
        "pinned": pinned,
        "archived": bool(row.get("archived")),
        "preview": preview,
    }


def _title_error(exc: ValueError) -> ApiError:
    # SessionDB refuses a title in use by another session, or one too long or with control characters.
    return invalid_request("invalid_title", str(exc), "title")


class HermesSessionStore:
    """Sessions and their messages in Hermes' SessionDB."""

    def __init__(self, db: Any, *, agent_writes_turns: bool) -> None:
        self.db = db
        self.agent_writes_turns = agent_writes_turns
        # SessionDB's insert is an upsert: "does it exist, then create" must not interleave, or two creates of one
        # id both succeed (both answer 201).
        self._create_lock = threading.Lock()

    async def _run(self, fn: Callable[..., _T], *args: Any) -> _T:
        return await asyncio.to_thread(fn, *args)

    # -- reads ----------------------------------------------------------------------------------------------
    def _live(self, session_id: str) -> str:
        # Only compression continuations: resolve_resume_session_id would also follow a fork to its branch.
        return str(self.db.get_compression_tip(session_id) or session_id)

    async def live_session_id(self, session_id: str) -> str:
        return await self._run(self._live, session_id)

    async def load_session_messages(self, session_id: str) -> list[Message]:
        def load() -> list[Message]:
            # Compaction may have continued the session under a new id: the history is the live tip's.
            rows = self.db.get_messages_as_conversation(self._live(session_id))
            return [_message(r) for r in rows if r.get("role") in _ROLES]

        return await self._run(load)

    def _session_sync(self, session_id: str) -> SessionInfo | None:
        row = self.db.get_session(session_id)
        if row is None:
            return None
        count = int(row.get("message_count") or 0)
        last = self.db.get_messages(session_id, limit=1, offset=count - 1) if count else []
        first_user = next((m for m in self.db.get_messages(session_id, limit=50) if m.get("role") == "user"), None)
        return _info(
            row,
            preview=_preview(_text_of(first_user.get("content"))) if first_user else None,
            last_active=float(last[0]["timestamp"]) if last else 0.0,
            pinned=self._pinned(session_id),
        )

    def _pinned(self, session_id: str) -> bool:
        return self.db.get_meta(_PINNED_META + session_id) == "1"

    async def get_session(self, session_id: str) -> SessionInfo | None:
        return await self._run(self._session_sync, session_id)

    async def list_sessions(
        self, limit: int, offset: int, source: str | None, include_children: bool = False
    ) -> tuple[list[SessionInfo], bool]:
        def rows() -> list[dict[str, Any]]:
            # One row beyond the page tells whether more follow. Archived sessions stay listed (with
            # `archived: true`, WIRE §7.1); compression chains show as their live tip, as in Hermes' own list.
            return self.db.list_sessions_rich(
                source=source,
                limit=limit + 1,
                offset=offset,
                order_by_last_active=True,
                include_archived=True,
                compact_rows=True,
                include_children=include_children,
            )

        def page() -> list[SessionInfo]:
            return [
                _info(
                    r,
                    preview=r.get("preview") or None,
                    last_active=float(r.get("last_active") or 0.0),
                    pinned=self._pinned(r["id"]),
                )
                for r in rows()
            ]

        found = await self._run(page)
        return found[:limit], len(found) > limit

    async def session_message_rows(
        self, session_id: str, *, limit: int, offset: int, newest_first: bool, include_compacted: bool
    ) -> list[SessionMessageRow]:
        def rows() -> list[dict[str, Any]]:
            # Inactive rows are either archived by compaction (compacted=1) or taken back by /undo or a
            # rewind (compacted=0): only the former are part of the transcript a client may ask for.
            stored = self.db.get_messages(session_id, include_inactive=include_compacted)
            kept = [m for m in stored if m.get("role") in _ROLES and (m.get("active", 1) or m.get("compacted"))]
            return sorted(kept, key=lambda m: (0 if m.get("compacted") else 1, m["id"]))

        ordered = await self._run(rows)
        if newest_first:
            end = max(len(ordered) - offset, 0)
            page = ordered[max(end - limit, 0) : end]
        else:
            page = ordered[offset : offset + limit]
        return [
            {
                "id": f"m_{m['id']}",
                "role": m["role"],
                "content": _parts(m.get("content")),
                "reasoning": m.get("reasoning") or m.get("reasoning_content") or None,
                "extra": {k: m[k] for k in ("tool_calls", "tool_call_id") if m.get(k)},
                "timestamp": float(m.get("timestamp") or 0.0),
                "compacted": bool(m.get("compacted")),
            }
            for m in page
        ]

    async def session_tool_names(self, session_id: str) -> dict[str, str]:
        def names() -> dict[str, str]:
            found: dict[str, str] = {}
            for m in self.db.get_messages(session_id, include_inactive=True):
                for call in m.get("tool_calls") or ():
                    if isinstance(call, dict) and call.get("id"):
                        found[call["id"]] = (call.get("function") or {}).get("name", "")
                if m.get("role") == "tool" and m.get("tool_call_id") and m.get("tool_name"):
                    found.setdefault(m["tool_call_id"], m["tool_name"])
            return found

        return await self._run(names)

    # -- writes ---------------------------------------------------------------------------------------------
    async def append_session_messages(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        usage: tuple[int, int] = (0, 0),
        compaction: str | None = None,
    ) -> None:
        if self.agent_writes_turns:
            return  # the AIAgent that ran the turn has written it (see the module docstring)

        def append() -> None:
            if self.db.get_session(session_id) is None:
                self.db.create_session(session_id, API_SOURCE, model=model)
            if compaction is not None:
                # Hermes' in-place compaction: the live rows become compacted=1, the summary the new live start.
                self.db.archive_and_compact(session_id, [{"role": "user", "content": compaction}])
            self._append_rows(session_id, messages)
            self.db.update_token_counts(session_id, input_tokens=usage[0], output_tokens=usage[1], model=model)

        await self._run(append)

    def _append_rows(self, session_id: str, messages: Sequence[Message]) -> None:
        for m in messages:
            self.db.append_message(
                session_id,
                m.role,
                content=_hermes_content(m),
                tool_calls=[c.to_json() for c in m.tool_calls] or None,
                tool_call_id=m.tool_call_id,
                reasoning=m.reasoning,
            )

    def _create_new(self, session_id: str) -> bool:
        """Create the session unless the id exists (False). SessionDB's insert is an upsert: the check and the
        insert must not interleave with another create's."""
        with self._create_lock:
            if self.db.get_session(session_id) is not None:
                return False
            self.db.create_session(session_id, API_SOURCE)
            return True

    async def seed_session(self, session_id: str, messages: Sequence[Message]) -> bool:
        # Written here even though the agent writes its turns: the history it is given is not its to write.
        def seed() -> bool:
            if not self._create_new(session_id):
                return False
            self._append_rows(session_id, messages)
            return True

        return await self._run(seed)

    async def create_session(self, session_id: str, title: str | None) -> bool:
        def create() -> bool:
            if not self._create_new(session_id):
                return False
            if title:
                try:
                    self.db.set_session_title(session_id, title)
                except ValueError as exc:
                    self.db.delete_session(session_id)  # as upstream: no session is left behind a refused title
                    raise _title_error(exc) from None
            return True

        return await self._run(create)

    async def update_session(self, session_id: str, fields: dict[str, Any]) -> bool:
        def update() -> bool:
            if self.db.get_session(session_id) is None:
                return False
            if "title" in fields:
                try:
                    self.db.set_session_title(session_id, fields["title"] or "")  # "" clears it
                except ValueError as exc:
                    raise _title_error(exc) from None
            if "archived" in fields:
                self.db.set_session_archived(session_id, bool(fields["archived"]))
            if "pinned" in fields:
                self.db.set_meta(_PINNED_META + session_id, "1" if fields["pinned"] else "")
            if "end_reason" in fields:
                self.db.end_session(session_id, fields["end_reason"])
            return True

        return await self._run(update)

    async def delete_session(self, session_id: str) -> bool:
        def delete() -> bool:
            deleted = bool(self.db.delete_session(session_id))
            if deleted and self._pinned(session_id):
                self.db.set_meta(_PINNED_META + session_id, "")
            return deleted

        return await self._run(delete)

    async def fork_session(self, session_id: str, fork_id: str, title: str | None) -> ForkResult:
        def fork() -> ForkResult:
            source = self.db.get_session(session_id)
            if source is None:
                return "no_source"
            if self.db.get_session(fork_id) is not None:
                return "exists"
            # As Hermes' api_server and the CLI's /branch: the original ends as "branched" *before* the fork starts
            # (Hermes lists a child started after its parent ended as a branch, one started before as a sub-agent
            # run, hidden), the fork is its child with the transcript copied, titled next in the lineage.
            self.db.end_session(session_id, "branched")
            self.db.create_session(
                fork_id,
                API_SOURCE,
                model=source.get("model"),
                system_prompt=source.get("system_prompt"),
                parent_session_id=session_id,
            )
            self.db.replace_messages(fork_id, self.db.get_messages(session_id))
            name = title if title is not None else self.db.get_next_title_in_lineage(source.get("title") or "fork")
            try:
                self.db.set_session_title(fork_id, name)
            except ValueError as exc:  # a title in use: no fork, and the original as it was
                self.db.delete_session(fork_id)
                if source.get("ended_at") is None:
                    self.db.reopen_session(session_id)
                raise _title_error(exc) from None
            return "forked"

        return await self._run(fork)
