"""The chat completions surface (WIRE.md §3): a chat request's turn plan — its session (explicit, derived, or the
conversation it continues: submission/continuity.py), history and queueing — its `ChatReply`, and its delivery as
chat.completion chunks or one chat.completion body (dialects/chat_completions.py).

Turn-taking (WIRE.md §15.2): a delivery ends where its turn suspends for the client, and the surface then records
the conversation as the client now holds it (`Turn.answer_key`). The client's next request of that conversation —
found by its session header, by that key, or by the `tool_call_id`s of its trailing tool messages — answers the turn:
an approval command (`/approve`, `/deny`, Hermes' plain words) decides the approval, any message answers a question,
tool messages return the tool calls' outputs. Any other message leaves the request unanswered (denied, no answer, no
output) and is a new turn. On a shared store the paused delivery also publishes what the turn waits by (its session,
the conversation's key, the calls: cluster/waits.py), so that an answer landing on another gateway finds it, decides
it from the turn's journal alike (`answer_from`) and delivers the owner's journal from there (W-15.4)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..cluster.waits import Waiting, call_wait, conversation_wait, session_wait
from ..config.settings import Settings
from ..core.content import Message, TextPart
from ..core.events import (
    TextDelta,
    TurnEvent,
    TurnFinished,
    TurnStatus,
    TurnTranscript,
    required_action,
    waiting_calls,
)
from ..core.offload import LARGE_MESSAGES, off_loop
from ..dialects.chat_completions import ChatRenderer
from ..dialects.record import SseRecord
from ..protocol.chat import ChatRequest
from ..protocol.common import new_completion_id
from ..submission.continuity import ConversationIndex, index_key, resolve
from ..submission.conversations import Conversations
from ..submission.submit import Existing, Resume, TurnPlan
from ..turns import HistoryLoader, Journal, Persister, Turn
from ..turns.answers import ClientAnswer, declined, outputs_answer
from .chat_answers import chat_answer
from .surface import Fold, Posted, Render, run_headers


@dataclass(frozen=True)
class ChatReply:
    """What a keyed chat retry re-renders with: the original completion's ids, and its session (WIRE.md §5.4)."""

    completion_id: str
    created: int
    model: str
    session_id: str | None  # None: a record without one (the live session is named instead)
    start: int = 0  # an answer to a suspended turn: the journal position its delivery resumed at (WIRE.md §15.1)

    def to_json(self) -> dict[str, Any]:
        stored: dict[str, Any] = {
            "completion_id": self.completion_id,
            "created": self.created,
            "model": self.model,
            "session_id": self.session_id,
        }
        if self.start:
            stored["start"] = self.start
        return stored

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> ChatReply:
        return cls(
            stored["completion_id"],
            stored["created"],
            stored["model"],
            stored.get("session_id"),
            stored.get("start", 0),
        )


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
        self._turn: Turn | None = None  # the turn delivered, when it runs here
        self._journal: Journal | None = None  # the journal delivered
        self._run_session = ""  # the session of the run delivered
        self.start = 0  # the journal position this delivery begins at

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
        return TurnPlan(
            self.session_id,
            chat.input,
            chat.selection,
            system_prompt=chat.system_prompt,
            metadata=chat.metadata,
            session_key=self.hermes.session_key,
            client_tools=chat.client_tools,
            tool_choice=chat.tool_choice,
            hold_approvals=self.hermes.holds_approvals(self.settings.approvals_chat),
            history=history,
            queued=explicit,
            persist=persist,
        )

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
        return history, _ContinuityRecord(index, conversations.scope, chat, sent)

    def reply(self, turn: Turn | None) -> ChatReply:
        r = self.renderer
        return ChatReply(r.completion_id, r.created, r.model, self.session_id, self.start)

    async def admitted(self, turn: Turn) -> None:
        pass

    async def resumes(self, waiting: Sequence[Turn]) -> Resume | None:
        chat = self.chat
        if chat.tool_results:
            outputs = self._outputs()
            calling = next((t for t in waiting if outputs.keys() & set(t.suspensions.pending_calls())), None)
            if calling is not None:
                return Resume(calling, outputs_answer(calling.suspensions.pending_calls(), outputs))
            return None  # results no turn waits for: the agent continues with them as a new turn
        turn = await self._conversation_turn(waiting)
        if turn is None:
            return None
        answer = chat_answer(turn.required_action, self.chat.input.text)
        if declined(answer) or self.hermes.session_id is not None or self.settings.chat_continuity != "auto":
            return Resume(turn, answer)
        return Resume(turn, answer, persist=self._record_answered)

    def _outputs(self) -> dict[str, str]:
        """The outputs of the request's trailing tool messages, by call id."""
        return {result.call_id: result.output for result in self.chat.tool_results}

    async def wait_keys(self) -> Sequence[str]:
        """As `resumes` looks a turn up: by the calls its tool messages answer, else its session (explicit), else the
        conversation its history ends at (none for a conversation's first message)."""
        if self.chat.tool_results:
            return [call_wait(call_id) for call_id in self._outputs()]
        if self.hermes.session_id is not None:
            return [session_wait(self.hermes.session_id)]
        if not self.chat.history:
            return ()
        key = await self._key(self.chat.history)
        return [conversation_wait(key)] if key is not None else ()

    def answer_from(self, events: list[TurnEvent], waiting: Waiting) -> ClientAnswer | None:
        if self.chat.tool_results:
            answer = outputs_answer(waiting_calls(events), self._outputs())
            return answer if answer.outputs else None
        return chat_answer(required_action(events), self.chat.input.text)

    async def resuming_remote(self, waiting: Waiting, journal: Journal, start: int) -> Mapping[str, Any] | None:
        self.renderer.prime(journal.events[:start])
        self.start = start
        self._deliver(waiting.run.turn_id, journal, waiting.run.session_id)
        return None

    async def _record_answered(self, turn: Turn, finished: TurnFinished) -> None:
        """Issue 14 for an answered turn: once it completed, the conversation as the client holds it — with the
        question the delivery before ended with and this request's answer, which the session's transcript lacks —
        finds its session by its exact key (submission/continuity.py)."""
        if finished.status is not TurnStatus.COMPLETED:
            return
        said = self._shown(turn.journal.events[self.start :], len(turn.journal.events) - self.start)
        held = [*self.chat.history, self.chat.input, Message("assistant", (TextPart(said),))]
        self.index.record(await self._key(held), turn.request.session_id, answered=True)

    def _shown(self, events: list[TurnEvent], end: int) -> str:
        """The assistant text this delivery showed of `events[:end]`: every text a stream carried, or the answer since
        the last tool, as a JSON reply carries it."""
        if self.stream:
            return "".join(e.text for e in events[:end] if isinstance(e, TextDelta))
        return TurnTranscript().feed_all(events[:end]).answer

    async def _conversation_turn(self, waiting: Sequence[Turn]) -> Turn | None:
        """The suspended turn of this request's conversation: its session's, or the one its history ends at."""
        if not waiting:
            return None
        if self.hermes.session_id is not None:
            return next((t for t in waiting if t.request.session_id == self.hermes.session_id), None)
        key = await self._key(self.chat.history)
        return next((t for t in waiting if t.answer_key == key), None) if key is not None else None

    async def _key(self, messages: Sequence[Message]) -> str | None:
        scope, system = self.conversations.scope, self.chat.system_prompt
        return await off_loop(lambda: index_key(scope, system, messages), len(messages) > LARGE_MESSAGES)

    def resuming(self, turn: Turn, start: int) -> None:
        self.renderer.prime(turn.journal.events[:start])
        self.start = start
        self.delivering(turn)

    # Delivery

    def delivering(self, turn: Turn) -> None:
        self._deliver(turn.run_id, turn.journal, turn.request.session_id, turn)

    def _deliver(self, run_id: str, journal: Journal, session_id: str, turn: Turn | None = None) -> None:
        self._run_id = self.renderer.run_id = run_id
        self._journal, self._run_session, self._turn = journal, session_id, turn

    def replaying(self, existing: Existing) -> None:
        """The original ids, from where the original delivery began; a replay names the session its reply recorded."""
        reply = ChatReply.from_json(existing.record.reply)
        self.renderer = self._renderer(reply.completion_id, reply.created, reply.model)
        self.renderer.prime(existing.journal.events[: reply.start])
        self.start = reply.start
        self._run_id = self.renderer.run_id = existing.run_id
        self._replayed = True
        self._reply_session = None if existing.kind == "attach" else reply.session_id
        self._turn, self._journal = existing.turn, existing.journal
        self._run_session = existing.turn.request.session_id if existing.turn is not None else reply.session_id or ""

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
        return self.renderer.fold

    @property
    def paused(self) -> Callable[[], bool]:
        return self.renderer.is_paused

    async def suspended(self) -> None:
        """The delivery ended at a request to the client: the conversation as the client now holds it — what it sent,
        and the assistant message this delivery ended with — is what its answer will be recognised by (and, on a shared
        store, its session and the calls it waits for: the answer may land on another gateway, cluster/waits.py)."""
        journal, run_id = self._journal, self._run_id
        if journal is None or run_id is None:
            return
        waits = [session_wait(self._run_session)] if self._run_session else []
        waits += [call_wait(call_id) for call_id in waiting_calls(journal.events)]
        if self.hermes.session_id is None and not self.chat.tool_results:
            renderer = self.renderer
            events = journal.events[self.start :]
            said = self._shown(events, renderer.paused_at(events, 0)) + renderer.said
            held = [*self.chat.history, self.chat.input, Message("assistant", (TextPart(said),))]
            key = await self._key(held)
            if self._turn is not None:
                self._turn.answer_key = key
            if key is not None:
                waits.append(conversation_wait(key))
        if self.conversations.waits is not None:
            await self.conversations.waits.publish(run_id, self.conversations.scope, waits, journal)

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


@dataclass(frozen=True, slots=True)
class _ContinuityRecord:
    """A continued chat's persister: once its turn completed, the conversation index learns where the conversation
    ends now. One object rather than a closure (a function, its cells and their tuple), which the turn holds — and
    every full garbage collection walks — while its stream is open (issue 25)."""

    index: ConversationIndex
    scope: str
    chat: ChatRequest
    sent: Sequence[Message]

    async def __call__(self, turn: Turn, finished: TurnFinished) -> None:
        if finished.status is TurnStatus.COMPLETED:
            whole = [*self.sent, self.chat.input, *turn.said()]
            system_prompt = self.chat.system_prompt
            key = await off_loop(lambda: index_key(self.scope, system_prompt, whole), len(whole) > LARGE_MESSAGES)
            self.index.record(key, turn.request.session_id)
