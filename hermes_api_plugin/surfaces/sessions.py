"""The session chat surface (WIRE.md §7.3–§7.4): a turn on a named session — run under its live tip (a compacted
Hermes session goes on there), its history the session's transcript — its `SessionChatReply`, and its delivery as the
`/chat` reply or the named-event stream (dialects/sessions.py), where a retry's Last-Event-ID skips what it saw.

Turn-taking (WIRE.md §15.2): a delivery ends where its turn suspends for the client (`run.requires_action`), and the
session's next message answers it (surfaces/chat_answers.py) — its delivery resumes the same run, also when the
message lands on another gateway than the run's (the session is its wait key, cluster/waits.py; W-15.4)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..cluster.waits import Waiting, session_wait
from ..core.events import TurnEvent, required_action
from ..dialects.record import SseRecord, after_id
from ..dialects.sessions import SessionStreamRenderer
from ..protocol.sessions import SessionChatRequest
from ..submission.conversations import Conversations
from ..submission.submit import Existing, Resume, TurnPlan
from ..turns import Journal, Turn
from ..turns.answers import ClientAnswer
from .chat_answers import chat_answer
from .surface import Fold, Posted, Render, run_headers


@dataclass(frozen=True)
class SessionChatReply:
    """What a keyed session chat's retry and a later read of its run need: the session and model."""

    session_id: str
    model: str
    start: int = 0  # an answer to a suspended turn: the journal position its delivery resumed at (WIRE.md §15.1)

    def to_json(self) -> dict[str, Any]:
        stored: dict[str, Any] = {"session_id": self.session_id, "model": self.model}
        if self.start:
            stored["start"] = self.start
        return stored

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> SessionChatReply:
        return cls(stored["session_id"], stored["model"], stored.get("start", 0))


class SessionChatSurface:
    """One POST /api/sessions/{id}/chat[/stream]."""

    name = "session_chat"
    done_marker = False
    before_send: Callable[[], Awaitable[None]] | None = None
    _render: Render  # the delivery's renderer, its records after the client's Last-Event-ID

    def __init__(
        self,
        conversations: Conversations,
        model_name: str,
        posted: Posted[SessionChatRequest],
        requested: str,
        session_id: str,
        stream: bool,
        hold_approvals: bool = False,
    ) -> None:
        self.conversations = conversations
        self.chat = posted.body
        self.session_key = posted.hermes.session_key
        self.key = posted.key
        self.large = posted.large
        self.after = posted.last_event_id
        self.requested = requested  # the path's session
        self.session_id = session_id  # its live tip: where the turn runs, what the reply names (as upstream)
        self.stream = stream
        self.model = self.chat.selection.model or model_name
        self.hold_approvals = hold_approvals  # X-Hermes-Approvals / api_server.approvals.chat: hold (§15.2)
        self.start = 0  # the journal position this delivery begins at
        # the delivery: its headers, renderer, first records, and the last record id its client saw
        self._headers: dict[str, str] = {}
        self._renderer: SessionStreamRenderer | None = None
        self._first: list[SseRecord] = []
        self._journal: Journal | None = None

    @classmethod
    async def on_live_tip(
        cls,
        conversations: Conversations,
        model_name: str,
        posted: Posted[SessionChatRequest],
        requested: str,
        stream: bool,
        hold_approvals: bool = False,
    ) -> SessionChatSurface:
        """The surface of a turn on `requested`, which runs under the session's live tip."""
        session_id = await conversations.sessions.live_session_id(requested)
        return cls(conversations, model_name, posted, requested, session_id, stream, hold_approvals)

    def identity(self) -> str:
        return self.chat.identity()

    def target(self) -> Any:
        return [self.requested, self.session_key]

    async def plan(self) -> TurnPlan:
        await self.conversations.placement.check(
            self.requested
        )  # kept by another host: 409, never an empty conversation
        return TurnPlan(
            self.session_id,
            self.chat.message,
            self.chat.selection,
            system_prompt=self.chat.instructions,
            session_key=self.session_key,
            hold_approvals=self.hold_approvals,
            history=self.conversations.session_history(self.session_id),
        )

    def reply(self, turn: Turn | None) -> SessionChatReply:
        return SessionChatReply(self.session_id, self.model, self.start)

    async def resumes(self, waiting: Sequence[Turn]) -> Resume | None:
        """The session's suspended turn, answered by this message."""
        turn = next((t for t in waiting if t.request.session_id == self.session_id), None)
        return Resume(turn, chat_answer(turn.required_action, self.chat.message.text)) if turn is not None else None

    def resuming(self, turn: Turn, start: int) -> None:
        self.start = start
        self._deliver(turn.journal, turn.run_id, replayed=False)

    async def wait_keys(self) -> Sequence[str]:
        return [session_wait(self.session_id)]

    def answer_from(self, events: list[TurnEvent], waiting: Waiting) -> ClientAnswer | None:
        return chat_answer(required_action(events), self.chat.message.text)

    async def resuming_remote(self, waiting: Waiting, journal: Journal, start: int) -> Mapping[str, Any] | None:
        self.start = start
        self._deliver(journal, waiting.run.turn_id, replayed=False)
        return None

    async def admitted(self, turn: Turn) -> None:
        pass

    # Delivery

    def delivering(self, turn: Turn) -> None:
        self._deliver(turn.journal, turn.run_id, replayed=False)

    def replaying(self, existing: Existing) -> None:
        self.start = SessionChatReply.from_json(existing.record.reply).start
        self._deliver(existing.journal, existing.run_id, replayed=True)

    def _deliver(self, journal: Journal, run_id: str, *, replayed: bool) -> None:
        """A retry's Last-Event-ID skips what it saw; a value that is not a known id (yet) streams from the start
        (WIRE.md §6.3, §7.4)."""
        self._headers = {**run_headers(self.session_id, None, self.session_key, replayed), "X-Hermes-Run-Id": run_id}
        self._journal = journal
        start, before = self.start, journal.events[: self.start]
        self._renderer = renderer = SessionStreamRenderer(
            self.session_id, run_id, journal.stamps, start=start, pauses=True
        )
        renderer.prime(before)
        head_at = journal.stamps[start] if len(journal.stamps) > start else time.time()
        after = self.after
        if after:
            probe = SessionStreamRenderer(self.session_id, run_id, journal.stamps, start=start, pauses=True)
            probe.prime(before)
            probe.head(head_at)
            probe.render(list(journal.events[start:]))
            if after > probe.last_id:
                after = 0
        self._first = after_id(renderer.head(head_at), after)
        render = renderer.render

        def numbered(batch: list[TurnEvent]) -> list[SseRecord]:
            return after_id(render(batch), after)

        self._render = numbered

    @property
    def keep(self) -> bool:
        return self.key is not None

    @property
    def render(self) -> Render:
        return self._render

    @property
    def fold(self) -> Fold:
        assert self._renderer is not None
        return self._renderer.render

    @property
    def paused(self) -> Callable[[], bool]:
        assert self._renderer is not None
        return self._renderer.is_paused

    async def suspended(self) -> None:
        """The session's next message finds the turn by its session — from another gateway too (cluster/waits.py)."""
        waits, run_id = self.conversations.waits, self._headers.get("X-Hermes-Run-Id")
        if waits is not None and run_id is not None and self._journal is not None:
            await waits.publish(run_id, self.conversations.scope, [session_wait(self.session_id)], self._journal)

    def headers(self) -> dict[str, str]:
        return self._headers

    def first(self) -> list[SseRecord]:
        return self._first

    def body(self) -> dict[str, Any]:
        assert self._renderer is not None
        return self._renderer.reply()
