"""The OpenTelemetry SDK behind `Tracing` (tracing.py): a tracer provider of this app's own (the host's global one is
left alone), spans batched to an OTLP/HTTP exporter, W3C `traceparent` continued. Imported only when tracing is on.

Spans, in OpenTelemetry's HTTP and GenAI vocabulary: a SERVER span per request named by its route template
(`POST /v1/chat/completions`); `invoke_agent {agent}` (INTERNAL: the agent runs in this process) per turn, the child
of the request that created the turn, however long the turn outlives it; `execute_tool {tool}` per tool
(turn_spans.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from .. import __version__
from ..config.settings import TracingSettings
from ..core.events import TurnEvent
from ..core.redact import redact
from .log_context import bind_request, bind_trace
from .trace_api import ChatCall, RequestInfo, TurnInfo, bind_turn_tracing, hex_trace_id
from .turn_spans import TurnSpans, gen_ai_messages

SCOPE_NAME = "hermes_api_plugin"
_W3C = TraceContextTextMapPropagator()  # `traceparent` / `tracestate`, whatever OTEL_PROPAGATORS says elsewhere


def _host_port(value: str) -> tuple[str, int | None]:
    """A Host header as address and port: `example.org:8642`, `[::1]:8642`, `example.org`."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or (host.count(":") and not host.endswith("]")):
        return value.strip("[]"), None  # no port (a bare IPv6 address has colons of its own)
    return host.strip("[]"), int(port)


class _RequestSpan:
    __slots__ = ("span",)

    def __init__(self, span: trace.Span) -> None:
        self.span = span

    def finish(self, status: int) -> None:
        self.span.set_attribute("http.response.status_code", status)
        if status >= 500:  # a SERVER span is an error only for the server's own failures
            self.span.set_attribute("error.type", str(status))
            self.span.set_status(Status(StatusCode.ERROR))


class OtelTracing:
    """`Tracing` with the OpenTelemetry SDK."""

    def __init__(
        self, settings: TracingSettings, *, agent_name: str, provider: str, model: str, secrets: tuple[str, ...] = ()
    ) -> None:
        resource = Resource.create({"service.name": settings.service_name, "service.version": __version__})
        ratio = settings.sample_ratio
        sampler = ParentBased(TraceIdRatioBased(ratio)) if ratio is not None else None  # None: OTEL_TRACES_SAMPLER
        self.provider = TracerProvider(sampler=sampler, resource=resource, shutdown_on_exit=False)
        exporter = OTLPSpanExporter(endpoint=settings.endpoint, headers=dict(settings.headers or {}) or None)
        self.provider.add_span_processor(BatchSpanProcessor(exporter))  # OTEL_BSP_* tune it
        self.tracer = self.provider.get_tracer(SCOPE_NAME, __version__)
        self.agent_name = agent_name
        self.provider_name = provider
        self.model = model
        self.capture_content = settings.capture_content
        self.secrets = secrets
        self._followers: set[asyncio.Task[None]] = set()

    @contextmanager
    def request_span(self, request: RequestInfo) -> Iterator[_RequestSpan]:
        parent = _W3C.extract(request.headers)
        attributes: dict[str, str | int] = {
            "http.request.method": request.method,
            "url.path": request.path,
            "url.scheme": request.scheme,
        }
        if request.route is not None:
            attributes["http.route"] = request.route
        if request.host:
            host, port = _host_port(request.host)
            attributes["server.address"] = host
            if port is not None:
                attributes["server.port"] = port
        if request.user_agent:
            attributes["user_agent.original"] = request.user_agent
        name = f"{request.method} {request.route}" if request.route else request.method
        with self.tracer.start_as_current_span(
            name, context=parent, kind=SpanKind.SERVER, attributes=attributes
        ) as span:
            bind_request(request.route, hex_trace_id(span.get_span_context().trace_id))
            yield _RequestSpan(span)

    def start_turn(self, turn: TurnInfo, events: AsyncIterator[list[TurnEvent] | None]) -> None:
        span = self.tracer.start_span(
            f"invoke_agent {self.agent_name}",
            kind=SpanKind.INTERNAL,
            attributes=self._turn_attributes(turn),
        )
        # Current for the rest of the turn's task (it ends with the turn; nothing to detach): what the agent logs, and
        # spans opened in its thread (which runs in a copy of this context), belong to the turn.
        otel_context.attach(trace.set_span_in_context(span))
        bind_trace(hex_trace_id(span.get_span_context().trace_id))
        bind_turn_tracing(self)
        spans = TurnSpans(self.tracer, span, self.capture_content, self.secrets)
        task = asyncio.get_running_loop().create_task(spans.follow(events), name=f"trace {turn.run_id}")
        self._followers.add(task)
        task.add_done_callback(self._followers.discard)

    def record_chat(self, call: ChatCall) -> None:
        attributes: dict[str, str | int | tuple[str, ...]] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": call.provider or self.provider_name,
            "gen_ai.request.model": call.model,
        }
        optional = {
            "gen_ai.response.model": call.response_model,
            "gen_ai.usage.input_tokens": call.input_tokens,
            "gen_ai.usage.output_tokens": call.output_tokens,
            "server.address": call.server_address,
            "error.type": call.error_type,
        }
        attributes.update({key: value for key, value in optional.items() if value is not None})
        if call.finish_reason:
            attributes["gen_ai.response.finish_reasons"] = (call.finish_reason,)
        span = self.tracer.start_span(
            f"chat {call.model}", kind=SpanKind.CLIENT, attributes=attributes, start_time=int(call.started_at * 1e9)
        )
        if call.error_type is not None:
            span.set_status(Status(StatusCode.ERROR))
        span.end(end_time=int(call.ended_at * 1e9))

    def _turn_attributes(self, turn: TurnInfo) -> dict[str, str]:
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.agent_name,
            "gen_ai.provider.name": turn.provider or self.provider_name,
            # the gateway's own model name stands for its configured model (WIRE.md §8.1)
            "gen_ai.request.model": turn.model if turn.model and turn.model != self.agent_name else self.model,
            "gen_ai.conversation.id": turn.session_id,
            "gen_ai.response.id": turn.run_id,  # the run id (X-Hermes-Run-Id) every surface of the turn answers with
        }
        if self.capture_content:
            attributes["gen_ai.input.messages"] = gen_ai_messages("user", redact(turn.input_text, self.secrets))
            if turn.system_prompt:
                instructions = [{"type": "text", "content": redact(turn.system_prompt, self.secrets)}]
                attributes["gen_ai.system_instructions"] = json.dumps(instructions, ensure_ascii=False)
        return attributes

    async def close(self) -> None:
        if self._followers:  # the turns have settled: their followers end with the terminal records
            await asyncio.wait(list(self._followers), timeout=5.0)
        await asyncio.to_thread(self.provider.shutdown)  # exports what is batched (bounded by the exporter)
