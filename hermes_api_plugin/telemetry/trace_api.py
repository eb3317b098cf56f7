"""The narrow interface the request and turn code trace through (`Tracing`, and the values it takes): nothing here
imports OpenTelemetry, so holding a `Tracing | None` costs nothing when tracing is off (tracing.py decides; otel.py
implements it)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractContextManager
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

    async def close(self) -> None:
        """Export what is left (after the turns settled) and stop the exporter."""
        ...


def hex_trace_id(trace_id: int) -> str:
    """A trace id as W3C Trace Context writes it (32 lowercase hex digits)."""
    return f"{trace_id:032x}"
