"""POST /v1/chat/completions: validate, admit a turn, render its journal as SSE chunks or one JSON body."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from ..content import Message, TextPart, parse_content
from ..dialects.chat_completions import ChatRenderer
from ..errors import invalid_parameter, invalid_request, missing_parameter
from ..keys import RUNTIME, SCOPE, SETTINGS, STORE, TURNS
from ..middleware import read_json
from ..runtimes.base import TurnRequest
from ..sse import EarlyJson, SseStream
from ..turns import Turn
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
from .delivery import await_settled, pump

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


def _on_client_gone(request: web.Request, turn: Turn) -> None:
    """WIRE.md §5.5: without an Idempotency-Key a disconnect cancels the turn (unless `continue`)."""
    if request.app[SETTINGS].on_disconnect != "continue":
        turn.cancel()


async def chat_completions(request: web.Request) -> web.StreamResponse:
    app = request.app
    settings = app[SETTINGS]
    hermes = parse_hermes_headers(request)
    chat = parse_chat_request(await read_json(request), app[RUNTIME].providers())
    session_id = hermes.session_id or derived_session_id(
        app[SCOPE], chat.system_prompt or "", chat.first_user_content
    )
    turn_request = TurnRequest(
        turn_id=new_run_id(),
        session_id=session_id,
        input=chat.input,
        history=() if hermes.session_id else chat.history,
        system_prompt=chat.system_prompt,
        model=chat.model,
        provider=chat.provider,
        model_options=chat.model_options,
        reasoning_enabled=chat.reasoning_enabled,
        reasoning_effort=chat.reasoning_effort,
        commentary_enabled=settings.interim_assistant_messages,
        max_iterations=settings.max_turns,
        metadata=chat.metadata,
    )
    # Turns on an explicit session run one at a time; derived sessions are not queued (§1.8).
    store = app[STORE]
    turn = app[TURNS].admit(
        turn_request,
        queue_key=hermes.session_id,
        history=(lambda: store.load_session_messages(session_id)) if hermes.session_id else None,
        hold=True,
    )
    renderer = ChatRenderer(
        completion_id=new_completion_id(),
        created=int(time.time()),
        model=chat.model or settings.model_name,
        tool_progress=settings.tool_progress_events and hermes.tool_progress,
    )
    headers = _reply_headers(hermes, session_id, turn)
    try:
        if chat.stream:
            return await _stream(request, turn, renderer, headers, settings.sse_keepalive_seconds)
        return await _json(request, turn, renderer, headers, settings.sse_keepalive_seconds)
    except asyncio.CancelledError:
        _on_client_gone(request, turn)
        raise


def _reply_headers(hermes: HermesHeaders, session_id: str, turn: Turn) -> dict[str, str]:
    headers = {"X-Hermes-Session-Id": session_id, "X-Hermes-Run-Id": turn.run_id}
    if hermes.session_key is not None:
        headers["X-Hermes-Session-Key"] = hermes.session_key
    return headers


async def _stream(request: web.Request, turn: Turn, renderer: ChatRenderer, headers: dict[str, str],
                  keepalive: float) -> web.StreamResponse:
    stream = await SseStream.open(request, headers, [renderer.role_chunk()])
    turn.release()
    if await pump(stream, turn.journal, renderer.render, keepalive):
        await stream.done()
    else:
        _on_client_gone(request, turn)
    return stream.response


async def _json(request: web.Request, turn: Turn, renderer: ChatRenderer, headers: dict[str, str],
                keepalive: float) -> web.StreamResponse:
    reply = await EarlyJson.open(request, headers)
    turn.release()
    if await await_settled(reply, turn.journal, renderer.transcript.feed_all, keepalive):
        await reply.finish(renderer.completion())
    else:
        _on_client_gone(request, turn)
    return reply.response
