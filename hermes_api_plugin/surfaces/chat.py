"""The chat completions surface (WIRE.md §3): a chat request's turn plan — its session (explicit, derived, or the
conversation it continues: submission/continuity.py), history and queueing — its `ChatReply`, and its delivery as
chat.completion chunks or one chat.completion body (dialects/chat_completions.py)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config.settings import Settings
from ..core.content import Message
from ..core.events import TurnFinished, TurnStatus
from ..core.offload import LARGE_MESSAGES, off_loop
from ..core.transcript import turn_messages
from ..dialects.chat_completions import ChatRenderer
from ..dialects.record import SseRecord
from ..protocol.chat import ChatRequest
from ..protocol.common import new_completion_id
from ..submission.continuity import ConversationIndex, index_key, resolve
from ..submission.conversations import Conversations
from ..submission.submit import Existing, TurnPlan, turn_request
from ..turns import HistoryLoader, Persister, Turn
from .surface import Fold, Posted, Render, run_headers


@dataclass(frozen=True)
class ChatReply:
    """What a keyed chat retry re-renders with: the original completion's ids, and its session (WIRE.md §5.4)."""

    completion_id: str
    created: int
    model: str
    session_id: str | None  # None: a record without one (the live session is named instead)

    def to_json(self) -> dict[str, Any]:
        return {
            "completion_id": self.completion_id,
            "created": self.created,
            "model": self.model,
            "session_id": self.session_id,
        }

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> ChatReply:
        return cls(stored["completion_id"], stored["created"], stored["model"], stored.get("session_id"))


class ChatSurface:
    """One chat completions request: its turn plan, reply and delivery (new turns, attaches and replays alike)."""

    name = "chat"
    done_marker = True

    def __init__(
        self,
        settings: Settings,
        conversations: Conversations,
        index: ConversationIndex,
        model_name: str,
        posted: Posted[ChatRequest],
    ) -> None:
        self.settings = settings
        self.conversations = conversations
        self.index = index
        self.chat = posted.body
        self.hermes = posted.hermes
        self.key = posted.key
        self.large = posted.large
        self.session_id = self.hermes.session_id or conversations.derived_chat_session(
            self.chat.system_prompt, self.chat.first_user_content
        )
        self.renderer = self._renderer(new_completion_id(), int(time.time()), self.chat.selection.model or model_name)
        self._session_target = self.session_id  # the session the request names (before continuity resolves it)
        self._run_id: str | None = None
        self._replayed = False
        self._reply_session: str | None = None

    def _renderer(self, completion_id: str, created: int, model: str) -> ChatRenderer:
        return ChatRenderer(
            completion_id=completion_id,
            created=created,
            model=model,
            tool_progress=self.settings.tool_progress_events and self.hermes.tool_progress,
        )

    # Planner

    def identity(self) -> str:
        return self.chat.identity(self.hermes.session_id)

    def target(self) -> Any:
        return [self._session_target, self.hermes.session_key]

    async def plan(self) -> TurnPlan:
        chat = self.chat
        explicit = self.hermes.session_id is not None
        # An explicit session brings its own history and runs one turn at a time; a derived session
        # takes the history the client sent and is not queued (WIRE.md §1.8, §3.1) — unless it continues a
        # conversation this gateway ran, whose server-side history (tool calls included) it then takes.
        history: HistoryLoader | Sequence[Message] = chat.history
        persist = None
        if explicit:
            await self.conversations.placement.check(self.session_id)  # kept by another host: 409, never empty
            history = self.conversations.session_history(self.session_id)
        elif self.settings.chat_continuity == "auto":
            history, persist = await self._continuity()
        request = turn_request(
            self.session_id,
            chat.input,
            chat.selection,
            system_prompt=chat.system_prompt,
            metadata=chat.metadata,
            session_key=self.hermes.session_key,
        )
        return TurnPlan(request, history=history, queued=explicit, persist=persist)

    async def _continuity(self) -> tuple[HistoryLoader | Sequence[Message], Persister]:
        """Issue 14: the conversation this stateless chat continues (its session and server-side history), or the
        branch it starts; once the turn completed, where the conversation ends now."""
        chat, conversations, index = self.chat, self.conversations, self.index
        sent = chat.history
        resolution = await resolve(
            index,
            conversations.sessions,
            conversations.placement,
            conversations.scope,
            chat.system_prompt,
            sent,
            self.session_id,
        )
        self.session_id = resolution.session_id
        history: HistoryLoader | Sequence[Message] = sent
        if resolution.continued:
            history = resolution.stored  # a derived session's turns are not queued: as read, it is current
        elif resolution.seed and await conversations.sessions.seed_session(self.session_id, sent):
            history = conversations.session_history(self.session_id)
        scope = conversations.scope

        async def record(turn: Turn, finished: TurnFinished) -> None:
            if finished.status is TurnStatus.COMPLETED:
                said = turn_messages([chat.input], turn.journal.events)
                whole = [*sent, *said]
                key = await off_loop(lambda: index_key(scope, chat.system_prompt, whole), len(whole) > LARGE_MESSAGES)
                index.record(key, turn.request.session_id)

        return history, record

    def reply(self, turn: Turn) -> ChatReply:
        r = self.renderer
        return ChatReply(r.completion_id, r.created, r.model, self.session_id)

    async def admitted(self, turn: Turn) -> None:
        pass

    # Delivery

    def delivering(self, turn: Turn) -> None:
        self._run_id = self.renderer.run_id = turn.run_id

    def replaying(self, existing: Existing) -> None:
        """The original ids, from the journal's start; a replay names the session its reply recorded."""
        reply = ChatReply.from_json(existing.record.reply)
        self.renderer = self._renderer(reply.completion_id, reply.created, reply.model)
        self._run_id = self.renderer.run_id = existing.run_id
        self._replayed = True
        self._reply_session = None if existing.kind == "attach" else reply.session_id

    @property
    def stream(self) -> bool:
        return self.chat.stream

    @property
    def keep(self) -> bool:
        return self.key is not None

    @property
    def render(self) -> Render:
        return self.renderer.render

    @property
    def fold(self) -> Fold:
        return self.renderer.transcript.feed_all

    @property
    def before_send(self) -> Callable[[], Awaitable[None]] | None:
        return None

    def headers(self) -> dict[str, str]:
        session_id = self.hermes.session_id or self._reply_session or self.session_id
        return run_headers(session_id, self._run_id, self.hermes.session_key, self._replayed)

    def first(self) -> list[SseRecord]:
        return [self.renderer.role_chunk()]

    def body(self) -> dict[str, Any]:
        return self.renderer.completion()

    def refused(self, code: str) -> list[SseRecord]:
        """The §3.5 chunk of a keyed chat stream whose admission was refused."""
        return self.renderer.render([TurnFinished(TurnStatus.FAILED, error_code=code, error_message=code)])
