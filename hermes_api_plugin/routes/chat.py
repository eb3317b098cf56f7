"""POST /v1/chat/completions: validate, admit a turn, render its journal as SSE chunks or one JSON body."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from ..admissions import error_for, idempotency_key, identity_hash
from ..content import Message, TextPart, canonical_json, parse_content
from ..dialects.chat_completions import ChatRenderer
from ..errors import (
    ApiError,
    draining,
    invalid_parameter,
    invalid_request,
    missing_parameter,
)
from ..events import TurnFinished, TurnStatus
from ..journals import decode_journal
from ..keys import ADMISSIONS, JOURNALS, RUNTIME, SCOPE, SESSIONS, SETTINGS, STORE, TURNS
from ..middleware import read_json
from ..runtimes.base import TurnRequest
from ..sse import SseStream
from ..store.base import StoreError
from ..turns import Journal, Turn
from .common import (
    HermesHeaders,
    body_bool,
    derived_session_id,
    new_completion_id,
    new_run_id,
    optional_string,
    parse_hermes_headers,
    parse_model_options,
)
from .delivery import deliver, keyed_settler

_CONVERSATION_ROLES = frozenset({"user", "assistant"})
_SYSTEM_ROLES = frozenset({"system", "developer"})
_KNOWN_ROLES = _CONVERSATION_ROLES | _SYSTEM_ROLES | {"tool", "function"}


@dataclass(frozen=True)
class ChatRequest:
    """A validated chat request after the §3.1 normalisation."""

    input: Message
    history: tuple[Message, ...]
    system_prompt: str | None
    first_user_content: Any
    model: str | None
    provider: str | None
    stream: bool
    model_options: dict[str, Any]
    reasoning_enabled: bool
    reasoning_effort: str | None
    metadata: dict[str, Any]


def parse_chat_request(body: dict[str, Any], providers: frozenset[str]) -> ChatRequest:
    messages = body.get("messages")
    if messages is None:
        raise missing_parameter("messages")
    if not isinstance(messages, list):
        raise invalid_parameter("'messages' must be an array", "messages")
    if not messages:
        raise invalid_request("missing_required_parameter", "'messages' must not be empty", "messages")
    system: list[str] = []
    conversation: list[Message] = []
    first_user_content: Any = None
    for i, raw in enumerate(messages):
        param = f"messages[{i}]"
        if not isinstance(raw, dict):
            raise invalid_parameter(f"'{param}' must be an object", param)
        role = raw.get("role")
        if not isinstance(role, str) or role not in _KNOWN_ROLES:
            raise invalid_parameter(f"'{param}.role' must be one of system, developer, user, assistant, tool", f"{param}.role")
        parts = parse_content(raw.get("content"), f"{param}.content")
        if role in _SYSTEM_ROLES:
            text = "".join(p.text for p in parts if isinstance(p, TextPart))
            system.append(text)
        elif role in _CONVERSATION_ROLES:
            message = Message(role, parts)
            if role == "assistant" and not message.visible:
                continue  # an assistant turn that only carried tool_calls: dropped with them
            if role == "user" and first_user_content is None:
                first_user_content = raw.get("content")
            conversation.append(message)
        # tool / function messages: client-side tools are not supported; dropped.
    if not conversation or conversation[-1].role != "user" or not conversation[-1].visible:
        raise invalid_request(
            "missing_user_message", "The last message must be a user message with text or an image", "messages"
        )
    model = optional_string(body, "model")
    provider = optional_string(body, "provider")
    if provider is not None and provider not in providers:
        raise invalid_parameter(f"Provider '{provider}' is not configured on this gateway", "provider")
    choice = parse_model_options(body, alias_effort=body.get("reasoning_effort"))
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise invalid_parameter("'metadata' must be an object", "metadata")
    return ChatRequest(
        input=conversation[-1],
        history=tuple(conversation[:-1]),
        system_prompt="\n".join(system) if system else None,
        first_user_content=first_user_content,
        model=model,
        provider=provider,
        stream=body_bool(body, "stream", False),
        model_options=dict(choice.model_options),
        reasoning_enabled=choice.reasoning_enabled,
        reasoning_effort=choice.reasoning_effort,
        metadata=metadata or {},
    )



def chat_identity(chat: ChatRequest, session_header: str | None) -> str:
    """WIRE.md §5.2: input, earlier messages (or the sent session id), system prompt, model, provider, options."""
    options = dict(chat.model_options)
    if chat.reasoning_effort is not None:  # reasoning_effort folds into model_options.reasoning.effort
        options["reasoning"] = {**(options.get("reasoning") or {}), "effort": chat.reasoning_effort}
    fields: dict[str, Any] = {
        "input": chat.input.to_json(), "system": chat.system_prompt, "model": chat.model,
        "provider": chat.provider, "model_options": options,
    }
    if session_header is not None:
        fields["session_id"] = session_header
    else:
        fields["history"] = [m.to_json() for m in chat.history]
    return identity_hash(fields)


async def chat_completions(request: web.Request) -> web.StreamResponse:
    app = request.app
    hermes = parse_hermes_headers(request)
    chat = parse_chat_request(await read_json(request), app[RUNTIME].providers())
    key = idempotency_key(request)
    registry = app[TURNS]
    if registry.draining:
        raise draining()
    session_id = hermes.session_id or derived_session_id(
        app[SCOPE], chat.system_prompt or "", chat.first_user_content
    )
    view = _View(request, chat, hermes, session_id, key)
    if key is None:
        registry.check_capacity()
        turn = view.admit()
        return await view.deliver(turn.journal, turn, view.new_renderer(), replayed=False)
    admissions = app[ADMISSIONS]
    identity = chat_identity(chat, hermes.session_id)
    target = canonical_json([session_id, hermes.session_key])
    scope = app[SCOPE]
    # The key's lock covers lookup, cap check, admission and reservation only: a retry arriving while
    # the turn runs must attach at once, not wait for the first request's delivery.
    admitted: tuple[Turn, ChatRenderer, SseStream | None] | None = None
    refusal: tuple[str, SseStream | None] | None = None
    async with admissions.serialised(scope, "chat", key):
        try:
            decision = await admissions.decide(scope, "chat", key, identity, target, registry.is_live)
        except StoreError:
            decision = None
            refusal = ("storage_unavailable", None)
        if decision is not None and decision.outcome == "new":
            registry.check_capacity()
            renderer = view.new_renderer()
            turn = view.admit(keyed=True)
            stream = await view.open_stream(renderer, turn) if chat.stream else None
            try:
                await admissions.reserve_turn(turn, scope, "chat", key, identity, target, view.reply_info(renderer),
                                              decision.free_expired)
            except ApiError as refused:  # the head is out on a stream: report it there (§3.5)
                refusal = (refused.code or "admission_conflict", stream)
            else:
                admitted = (turn, renderer, stream)
    if refusal is not None:
        return await view.refuse(*refusal)
    if admitted is not None:
        turn, renderer, stream = admitted
        return await view.deliver(turn.journal, turn, renderer, replayed=False, stream=stream)
    assert decision is not None
    if decision.code is not None:
        return await view.refuse(decision.code)
    record = decision.record
    assert record is not None
    renderer = view.renderer_from(record.reply)
    live = registry.get(record.turn_id)
    if decision.outcome == "attach" and live is not None:
        # An attached client only watches: its disconnect never decides the turn's fate.
        return await view.deliver(live.journal, None, renderer, replayed=True, run_id=record.turn_id)
    try:
        journal = decode_journal(await app[STORE].load_journal(record.turn_id))
    except StoreError:
        return await view.refuse("storage_unavailable")
    return await view.deliver(journal, None, renderer, replayed=True, run_id=record.turn_id,
                              session_id=record.reply.get("session_id"))


class _View:
    """One chat request's rendering and delivery: new turns, attaches and replays alike."""

    def __init__(self, request: web.Request, chat: ChatRequest, hermes: HermesHeaders, session_id: str,
                 key: str | None) -> None:
        self.request = request
        self.app = request.app
        self.settings = request.app[SETTINGS]
        self.chat = chat
        self.hermes = hermes
        self.session_id = session_id
        self.key = key

    def new_renderer(self) -> ChatRenderer:
        return self._renderer(new_completion_id(), int(time.time()), self.chat.model or self.settings.model_name)

    def _renderer(self, completion_id: str, created: int, model: str) -> ChatRenderer:
        return ChatRenderer(completion_id=completion_id, created=created, model=model,
                            tool_progress=self.settings.tool_progress_events and self.hermes.tool_progress)

    def renderer_from(self, reply: dict[str, Any]) -> ChatRenderer:
        return self._renderer(reply["completion_id"], reply["created"], reply["model"])

    def reply_info(self, renderer: ChatRenderer) -> dict[str, Any]:
        return {"completion_id": renderer.completion_id, "created": renderer.created, "model": renderer.model,
                "session_id": self.session_id}

    def admit(self, keyed: bool = False) -> Turn:
        chat, settings, sessions = self.chat, self.settings, self.app[SESSIONS]
        explicit = self.hermes.session_id is not None
        session_id = self.session_id
        turn_request = TurnRequest(
            turn_id=new_run_id(), session_id=session_id, input=chat.input, history=() if explicit else chat.history,
            system_prompt=chat.system_prompt, model=chat.model, provider=chat.provider,
            model_options=chat.model_options, reasoning_enabled=chat.reasoning_enabled,
            reasoning_effort=chat.reasoning_effort, commentary_enabled=settings.interim_assistant_messages,
            max_iterations=settings.max_turns, metadata=chat.metadata,
        )
        # Turns on an explicit session run one at a time; derived sessions are not queued (§1.8).
        turn = self.app[TURNS].admit(
            turn_request,
            queue_key=self.hermes.session_id,
            history=(lambda: sessions.load_session_messages(session_id)) if explicit else None,
            persist=keyed_settler(self.app) if keyed else None,
            hold=True,
        )
        if keyed:
            self.app[JOURNALS].watch(turn.run_id, turn.journal)
        return turn

    def headers(self, run_id: str | None, replayed: bool, session_id: str | None = None) -> dict[str, str]:
        headers = {"X-Hermes-Session-Id": self.hermes.session_id or session_id or self.session_id}
        if run_id is not None:
            headers["X-Hermes-Run-Id"] = run_id
        if self.hermes.session_key is not None:
            headers["X-Hermes-Session-Key"] = self.hermes.session_key
        if replayed:
            headers["Idempotency-Replayed"] = "true"
        return headers

    async def open_stream(self, renderer: ChatRenderer, turn: Turn | None, replayed: bool = False,
                          run_id: str | None = None, session_id: str | None = None) -> SseStream:
        run = run_id or (turn.run_id if turn is not None else None)
        return await SseStream.open(self.request, self.headers(run, replayed, session_id), [renderer.role_chunk()])

    async def refuse(self, code: str, stream: SseStream | None = None) -> web.StreamResponse:
        """An admission outcome that executes nothing: HTTP error, or the §3.5 chunk on a keyed chat stream."""
        if not self.chat.stream:
            raise error_for(code)
        renderer = self.new_renderer()
        if stream is None:
            stream = await self.open_stream(renderer, None)
        await stream.send(renderer.render([TurnFinished(TurnStatus.FAILED, error_code=code, error_message=code)]))
        await stream.done()
        return stream.response

    async def deliver(self, journal: Journal, turn: Turn | None, renderer: ChatRenderer, *, replayed: bool,
                      stream: SseStream | None = None, run_id: str | None = None,
                      session_id: str | None = None) -> web.StreamResponse:
        """Render `journal` (live or replayed) as the requested mode; a gone client follows §5.5."""
        run = run_id or (turn.run_id if turn is not None else None)
        return await deliver(
            self.request, journal, turn, stream=self.chat.stream, keep=self.key is not None,
            headers=self.headers(run, replayed, session_id), first=[renderer.role_chunk()], sse=stream,
            render=renderer.render, fold=renderer.transcript.feed_all, body=renderer.completion, done_marker=True,
        )
