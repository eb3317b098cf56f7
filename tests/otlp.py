"""A small OTLP/HTTP trace receiver for the tests: a real aiohttp server on 127.0.0.1 (a free port, in a thread of
its own, so blocking test code never stalls it) that decodes each `ExportTraceServiceRequest` with the official
`opentelemetry-proto` classes and keeps the spans as plain values."""

from __future__ import annotations

import asyncio
import gzip
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from tests.helpers import wait_for

KINDS = {number: name.removeprefix("SPAN_KIND_") for name, number in Span.SpanKind.items()}
STATUS = {number: name.removeprefix("STATUS_CODE_") for name, number in Status.StatusCode.items()}


@dataclass(frozen=True)
class ReceivedSpan:
    """One exported span, ids in hex as W3C Trace Context writes them."""

    name: str
    kind: str  # SERVER, INTERNAL, CLIENT, …
    trace_id: str
    span_id: str
    parent_span_id: str  # "" for a root span
    attributes: dict[str, Any]
    status: str  # UNSET, OK, ERROR
    start_ns: int
    end_ns: int
    resource: dict[str, Any]
    scope: str


def _value(value: AnyValue) -> Any:
    field = value.WhichOneof("value")
    if field == "array_value":
        return tuple(_value(v) for v in value.array_value.values)
    return getattr(value, field) if field else None


def decode(body: bytes) -> list[ReceivedSpan]:
    """The spans of one OTLP/HTTP protobuf export."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        name=span.name,
                        kind=KINDS[span.kind],
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        attributes={a.key: _value(a.value) for a in span.attributes},
                        status=STATUS[span.status.code],
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        resource=resource,
                        scope=scope_spans.scope.name,
                    )
                )
    return spans


class OtlpReceiver:
    """Collects what is exported to `{url}/v1/traces`; `endpoint` is what OTEL_EXPORTER_OTLP_ENDPOINT takes."""

    def __init__(self) -> None:
        self._spans: list[ReceivedSpan] = []
        self._lock = threading.Lock()
        self.exports = 0
        self.port = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self._spans)

    def wait_for_spans(
        self, until: Callable[[list[ReceivedSpan]], object], timeout: float = 15.0, what: str = "the spans"
    ) -> list[ReceivedSpan]:
        return wait_for(self.spans, timeout, until=until, what=what)

    async def _export(self, request: web.Request) -> web.Response:
        body = await request.read()
        encoding = request.headers.get("Content-Encoding", "")
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        spans = decode(body)
        with self._lock:
            self._spans.extend(spans)
            self.exports += 1
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(), content_type="application/x-protobuf"
        )

    @contextmanager
    def running(self) -> Iterator[OtlpReceiver]:
        loop = asyncio.new_event_loop()
        started = threading.Event()
        app = web.Application()
        app.router.add_post("/v1/traces", self._export)
        runner = web.AppRunner(app)

        async def start() -> None:
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            self.port = runner.addresses[0][1]

        def serve() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(start())
            started.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        thread = threading.Thread(target=serve, name="otlp receiver", daemon=True)
        thread.start()
        started.wait(10)
        try:
            yield self
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)


@contextmanager
def otlp_receiver() -> Iterator[OtlpReceiver]:
    """A running receiver, stopped at the end of the block."""
    with OtlpReceiver().running() as receiver:
        yield receiver


def tracing_env(receiver: OtlpReceiver) -> dict[str, str]:
    """The standard variables a gateway exports to `receiver` with, batches flushed within 50 ms."""
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"}
