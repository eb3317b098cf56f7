"""POST /v1/chat/completions: parse → submit → deliver, as SSE chunks or one JSON body (WIRE.md §3)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial
from typing import Any

from aiohttp import web

from ..core.content import Message
from ..core.events import TurnFinished, TurnStatus
from ..core.offload import LARGE_MESSAGES, off_loop
from ..core.transcript import turn_messages
from ..dialects.chat_completions import ChatRenderer
from ..http.app_keys import CONVERSATION_INDEX, RUNTIME, SETTINGS
from ..http.delivery import deliver, open_stream
from ..http.middleware import large_body, read_parsed
from ..http.profiles import profile_of
from ..http.sse import SseStream
from ..protocol.chat import ChatRequest, parse_chat_request
from ..protocol.common import HermesHeaders, idempotency_key, new_completion_id, parse_hermes_headers
from ..submission.continuity import index_key, resolve
from ..submission.submit import Existing, NewTurn, Refusal, TurnPlan, refusal_error
from ..turns import HeldTurn, HistoryLoader, Journal, Turn
from ..turns.turn import Persister
from .replies import run_headers


async def chat_completions(request: web.Request) -> web.StreamResponse:
    app = request.app
    hermes = parse_hermes_headers(request.headers)
    providers = app[RUNTIME].providers()
    chat = await read_parsed(request, lambda body: parse_chat_request(body, providers))
    key = idempotency_key(request.headers)
    profile = profile_of(request)
    session_id = hermes.session_id or profile.conversations.derived_chat_session(
        chat.system_prompt, chat.first_user_content
    )
    view = _ChatView(request, chat, hermes, session_id, keyed=key is not None)
    submitter = profile.submitter
    identity = partial(chat.identity, hermes.session_id)
    slot = await submitter.slot("chat", key, identity, [session_id, hermes.session_key], await large_body(request))
    # A keyed chat stream writes its head right after admission and reports a refused reservation
    # in-stream (WIRE.md §5.3).
    early = view.open_stream if chat.stream and slot is not None else None
    outcome = await submitter.submit(slot, view.plan, early)
    if isinstance(outcome, NewTurn):
        async with outcome.held as turn:  # a failure before the head is out cancels the turn: no slot stays held
            return await view.deliver(turn.journal, outcome.held, view.renderer, stream=outcome.head)
    if isinstance(outcome, Refusal):
        return await view.refuse(outcome)
    return await view.replay(outcome)


class _ChatView:
    """One chat request's turn plan, rendering and delivery: new turns, attaches and replays alike."""

    def __init__(
        self, request: web.Request, chat: ChatRequest, hermes: HermesHeaders, session_id: str, keyed: bool
    ) -> None:
        self.request = request
        self.settings = request.app[SETTINGS]
        self.chat = chat
        self.hermes = hermes
        self.session_id = session_id
        self.keyed = keyed
        self.profile = profile_of(request)
        self.renderer = self._renderer(
            new_completion_id(), int(time.time()), chat.selection.model or self.profile.model_name
        )

    def _renderer(self, completion_id: str, created: int, model: str) -> ChatRenderer:
        return ChatRenderer(
            completion_id=completion_id,
            created=created,
            model=model,
            tool_progress=self.settings.tool_progress_events and self.hermes.tool_progress,
        )

    async def plan(self) -> TurnPlan:
        chat = self.chat
        explicit = self.hermes.session_id is not None
        # An explicit session brings its own history and runs one turn at a time; a derived session
        # takes the history the client sent and is not queued (WIRE.md §1.8, §3.1) — unless it continues a
        # conversation this gateway ran, whose server-side history (tool calls included) it then takes.
        history: HistoryLoader | Sequence[Message] = chat.history
        persist = None
        if explicit:
            await self.profile.conversations.placement.check(self.session_id)  # kept by another host: 409, never empty
            history = self.profile.conversations.session_history(self.session_id)
        elif self.settings.chat_continuity == "auto":
            history, persist = await self._continuity()
        renderer = self.renderer
        reply = {
            "completion_id": renderer.completion_id,
            "created": renderer.created,
            "model": renderer.model,
            "session_id": self.session_id,
        }
        return TurnPlan(
            session_id=self.session_id,
            input=chat.input,
            selection=chat.selection,
            system_prompt=chat.system_prompt,
            metadata=chat.metadata,
            history=history,
            queued=explicit,
            session_key=self.hermes.session_key,
            reply=lambda turn: reply,
            persist=persist,
            surface="chat",
        )

    async def _continuity(self) -> tuple[HistoryLoader | Sequence[Message], Persister]:
        """Issue 14: the conversation this stateless chat continues (its session and server-side history), or the
        branch it starts; once the turn completed, where the conversation ends now."""
        chat, profile, index = self.chat, self.profile, self.request.app[CONVERSATION_INDEX]
        sent = chat.history
        resolution = await resolve(
            index,
            profile.sessions,
            profile.conversations.placement,
            profile.scope,
            chat.system_prompt,
            sent,
            self.session_id,
        )
        self.session_id = resolution.session_id
        history: HistoryLoader | Sequence[Message] = sent
        if resolution.continued:
            history = resolution.stored  # a derived session's turns are not queued: as read, it is current
        elif resolution.seed and await profile.sessions.seed_session(self.session_id, sent):
            history = profile.conversations.session_history(self.session_id)

        async def record(turn: Turn, finished: TurnFinished) -> None:
            if finished.status is TurnStatus.COMPLETED:
                said = turn_messages([chat.input], turn.journal.events)
                whole = [*sent, *said]
                key = await off_loop(
                    lambda: index_key(profile.scope, chat.system_prompt, whole), len(whole) > LARGE_MESSAGES
                )
                index.record(key, turn.request.session_id)

        return history, record

    def headers(self, run_id: str | None, replayed: bool = False, session_id: str | None = None) -> dict[str, str]:
        return run_headers(
            self.hermes.session_id or session_id or self.session_id, run_id, self.hermes.session_key, replayed
        )

    async def open_stream(self, turn: Turn | None) -> SseStream:
        return await open_stream(
            self.request, self.headers(turn.run_id if turn else None), [self.renderer.role_chunk()]
        )

    async def refuse(self, refusal: Refusal[SseStream]) -> web.StreamResponse:
        """An outcome that executes nothing: the HTTP error, or the §3.5 chunk on a keyed chat stream."""
        if not self.chat.stream:
            raise refusal_error(refusal)
        stream = refusal.head if refusal.head is not None else await self.open_stream(None)
        code = refusal.code
        await stream.send(self.renderer.render([TurnFinished(TurnStatus.FAILED, error_code=code, error_message=code)]))
        await stream.done()
        return stream.response

    async def replay(self, existing: Existing) -> web.StreamResponse:
        """An attach or a replay: the original ids, from the journal's start; the client only watches."""
        reply: dict[str, Any] = existing.record.reply
        self.renderer = self._renderer(reply["completion_id"], reply["created"], reply["model"])
        session_id = None if existing.kind == "attach" else reply.get("session_id")
        return await self.deliver(
            existing.journal, None, self.renderer, replayed=True, run_id=existing.run_id, session_id=session_id
        )

    async def deliver(
        self,
        journal: Journal,
        held: HeldTurn | None,
        renderer: ChatRenderer,
        *,
        replayed: bool = False,
        stream: SseStream | None = None,
        run_id: str | None = None,
        session_id: str | None = None,
    ) -> web.StreamResponse:
        """Render `journal` (live or replayed) as the requested mode; a gone client follows §5.5."""
        run = run_id or (held.turn.run_id if held is not None else None)
        renderer.run_id = run
        return await deliver(
            self.request,
            journal,
            held,
            stream=self.chat.stream,
            keep=self.keyed,
            headers=self.headers(run, replayed, session_id),
            first=[renderer.role_chunk()],
            sse=stream,
            render=renderer.render,
            fold=renderer.transcript.feed_all,
            body=renderer.completion,
            done_marker=True,
        )
