"""A turn's spans from its journal: `invoke_agent` ended with the terminal record (usage, status, error), and an
`execute_tool` span per tool from its ToolStarted / ToolCompleted events, timed as the callback sink timed the tool.

Message content (the input, the instructions, the answer, tool arguments and results) is recorded only when
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` (or `api_server.tracing.capture_content`) says so, redacted as
the logs are. Nothing is recorded per delta: the answer is joined once, at the end, and only when captured.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from ..core.events import TextDelta, ToolCompleted, ToolStarted, TurnEvent, TurnFinished, TurnStatus
from ..core.redact import redact

log = logging.getLogger("hermes_api_plugin")

# a turn's terminal status as GenAI's finish reason
FINISH_REASONS = {
    TurnStatus.COMPLETED: "stop",
    TurnStatus.INCOMPLETE: "length",
    TurnStatus.FAILED: "error",
    TurnStatus.CANCELLED: "cancelled",
}


def gen_ai_messages(role: str, text: str, **extra: Any) -> str:
    """GenAI's message list JSON (`gen_ai.input.messages`, `gen_ai.output.messages`) of one text message."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}], **extra}], ensure_ascii=False)


class TurnSpans:
    """Follows one turn's journal and records its spans."""

    def __init__(self, tracer: trace.Tracer, span: trace.Span, capture: bool, secrets: tuple[str, ...]) -> None:
        self.tracer = tracer
        self.span = span
        self.parent = trace.set_span_in_context(span)
        self.capture = capture
        self.secrets = secrets
        self.tools: dict[str, tuple[trace.Span, int]] = {}  # open tool spans by call id, with their start (ns)
        self.answer: list[str] = []  # the streamed answer, kept only when content is captured
        # ToolStarted.started_at is time.monotonic(); spans take epoch nanoseconds
        self.epoch_offset_ns = time.time_ns() - time.monotonic_ns()

    async def follow(self, batches: AsyncIterator[list[TurnEvent] | None]) -> None:
        try:
            await self._follow(batches)
        except Exception:  # a trace is never worth more than a log line
            log.warning("[API Server] a turn's trace stopped early", exc_info=True)

    async def _follow(self, batches: AsyncIterator[list[TurnEvent] | None]) -> None:
        try:
            async for batch in batches:
                for event in batch or ():
                    if isinstance(event, ToolStarted):
                        self._tool_started(event)
                    elif isinstance(event, ToolCompleted):
                        self._tool_completed(event)
                    elif isinstance(event, TextDelta):
                        if self.capture:
                            self.answer.append(event.text)
                    elif isinstance(event, TurnFinished):
                        self._finished(event)
                        return
        finally:  # stopped early (shutdown): what is open ends now
            self._end_tools()
            if self.span.is_recording():
                self.span.end()

    def _tool_started(self, event: ToolStarted) -> None:
        start = int(event.started_at * 1e9) + self.epoch_offset_ns
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.name,
            "gen_ai.tool.call.id": event.call_id,
            "gen_ai.tool.type": "function",
        }
        if self.capture:
            attributes["gen_ai.tool.call.arguments"] = redact(event.arguments, self.secrets)
        span = self.tracer.start_span(
            f"execute_tool {event.name}",
            context=self.parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=start,
        )
        self.tools[event.call_id] = (span, start)

    def _tool_completed(self, event: ToolCompleted) -> None:
        opened = self.tools.pop(event.call_id, None)
        if opened is None:
            return
        span, start = opened
        if self.capture:
            span.set_attribute("gen_ai.tool.call.result", redact(event.result, self.secrets))
        if event.is_error:
            span.set_attribute("error.type", "interrupted" if event.stopped else "tool_error")
            span.set_status(Status(StatusCode.ERROR))
        span.end(end_time=start + event.duration_ms * 1_000_000)

    def _finished(self, finished: TurnFinished) -> None:
        span = self.span
        span.set_attribute("gen_ai.usage.input_tokens", finished.usage.prompt_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", finished.usage.completion_tokens)
        reason = FINISH_REASONS.get(finished.status, finished.status.value)
        span.set_attribute("gen_ai.response.finish_reasons", (reason,))
        span.set_attribute("hermes.turn.status", finished.status.value)
        if finished.error_code and finished.status is not TurnStatus.COMPLETED:
            span.set_attribute("hermes.turn.error_code", finished.error_code)
        if finished.status is TurnStatus.FAILED:
            span.set_attribute("error.type", finished.error_code or "agent_error")
            span.set_status(Status(StatusCode.ERROR, finished.error_message))
        if self.capture:
            answer = redact("".join(self.answer), self.secrets)
            span.set_attribute("gen_ai.output.messages", gen_ai_messages("assistant", answer, finish_reason=reason))
        self._end_tools()
        span.end(end_time=int(finished.at * 1e9) if finished.at is not None else None)

    def _end_tools(self) -> None:
        """Tools the journal never completed (the registry completes every tool a turn stopped: a safety net)."""
        for span, _ in self.tools.values():
            span.end()
        self.tools.clear()
