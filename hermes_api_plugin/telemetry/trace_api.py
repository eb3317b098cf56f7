"""The narrow interface the request and turn code trace through (`Tracing`, and the values it takes): nothing here
imports OpenTelemetry, so holding a `Tracing | None` costs nothing when tracing is off (tracing.py decides; otel.py
implements it)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol

from ..core.events import TurnEvent


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """What the request span says about its HTTP request (OpenTelemetry's HTTP server conventions)."""

    method: str
    route: str | None  # the route template; None when no route matched
    path: str
    scheme: str
    host: str | None
    user_agent: str | None
    headers: Mapping[str, str]  # where an incoming `traceparent` is read


@dataclass(frozen=True, slots=True)
class TurnInfo:
    """What the `invoke_agent` span says about a turn (OpenTelemetry's GenAI conventions)."""

    run_id: str
    session_id: str
    model: str | None
    provider: str | None
    input_text: str  # recorded only when message content is captured
    system_prompt: str | None


@dataclass(frozen=True, slots=True)
class ChatCall:
    """One provider call of a turn's agent (a `chat {model}` CLIENT span), as the host's agent reports it once it is
    over (Hermes' `post_api_request` / `api_request_error` plugin hooks, hermes/chat_spans.py)."""

    model: str
    provider: str | None
    started_at: float  # epoch seconds
    ended_at: float
    response_model: str | None = None
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    server_address: str | None = None
    error_type: str | None = None  # the call failed (the agent may retry it: each attempt is a span)


class RequestSpan(Protocol):
    """The span of one request, while its handler runs."""

    def finish(self, status: int) -> None:
        """The response status the handler answered with."""


class Tracing(Protocol):
    """This process's tracing: one SERVER span per request, `invoke_agent` per turn, `execute_tool` per tool."""

    def request_span(self, request: RequestInfo) -> AbstractContextManager[RequestSpan]:
        """The request's span, current in the calling task while the context is entered (an incoming `traceparent`
        is its parent); the turns the request creates are its children."""
        ...

    def start_turn(self, turn: TurnInfo, events: AsyncIterator[list[TurnEvent] | None]) -> None:
        """Open the turn's `invoke_agent` span, current in the calling task (the turn's own) from now on, and follow
        its journal `events`: an `execute_tool` span per tool, the span ended with the terminal record."""
        ...

    def record_chat(self, call: ChatCall) -> None:
        """A provider call of the running turn: a child of its `invoke_agent` span (called in the turn's context: the
        agent's thread runs in a copy of it)."""
        ...

    async def close(self) -> None:
        """Export what is left (after the turns settled) and stop the exporter."""
        ...


# The tracing of the turn the running task or thread belongs to (set when its `invoke_agent` span opens): how the
# host agent's hooks, which know nothing of the app, find where their spans go.
_TURN_TRACING: ContextVar[Tracing | None] = ContextVar("hermes_api_turn_tracing", default=None)


def turn_tracing() -> Tracing | None:
    """The tracing of the running turn; None outside a traced turn (tracing off: always)."""
    return _TURN_TRACING.get()


def bind_turn_tracing(tracing: Tracing) -> None:
    """The running turn is traced by `tracing` (in the turn's own task: nothing to reset)."""
    _TURN_TRACING.set(tracing)


def hex_trace_id(trace_id: int) -> str:
    """A trace id as W3C Trace Context writes it (32 lowercase hex digits)."""
    return f"{trace_id:032x}"
