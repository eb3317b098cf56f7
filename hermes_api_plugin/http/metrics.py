"""`GET /metrics` (issue 24): the app's registry in the Prometheus text format, or OpenMetrics when the Accept header
asks for it; the HTTP middleware that counts requests by route template, method and status (and resumed streams);
and the gauges read when scraped from state the gateway keeps anyway — turns by state, open streams and their unsent
bytes, warm agents, this process's lease — so nothing is tracked per event for them.

Authentication: the API key by default, as every route; `api_server.metrics.auth: none` opens it to a scraper without
the key (http/middleware.py, `open_metrics`). Under `/p/{profile}/metrics` the same gateway-wide document is
served (one registry per gateway: the turn registry, store and key are shared; turn series carry `profile`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator

from aiohttp import web
from aiohttp.typedefs import Middleware
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder

from ..core.metrics import (
    AGENT_CACHE_AGENTS,
    AGENT_CACHE_EVICTIONS,
    AGENT_CACHE_HITS,
    AGENT_CACHE_MISSES,
    LEASES_HELD,
    STREAM_BUFFERED,
    STREAMS_OPEN,
    TURNS_BY_STATE,
    Instrument,
    Metrics,
)
from .app_keys import LEASES, METRICS, RUNTIME, STREAM_GAUGE, TURNS
from .profiles import PROFILES, profile_of

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "unmatched"  # a request no route took (404, 405): its path is the client's, never a label
CLIENT_GONE = "499"  # the handler was cancelled: the client went away before the reply (nginx's code)
RESUME_HEADER = "Last-Event-ID"
RESUME_QUERY = "starting_after"


def route_template(request: web.Request) -> str:
    """The route's path template (`/v1/runs/{run_id}`), never the path the client sent."""
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else UNMATCHED


def http_middleware(metrics: Metrics) -> Middleware:
    """The outermost middleware: one count and one duration per request, after the error middleware made its reply.
    Label children are kept by their values, so a request costs two dict lookups and two updates."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        began = time.perf_counter()
        status = "500"
        try:
            response = await handler(request)
            status = str(response.status)
            return response
        except web.HTTPException as exc:  # a redirect, or what the error middleware left (none today)
            status = str(exc.status)
            raise
        except asyncio.CancelledError:
            status = CLIENT_GONE
            raise
        finally:
            route = route_template(request)
            method = request.method if request.method in METHODS else "other"
            metrics.child(metrics.http_requests, route, method, status, profile_of(request).name).inc()
            metrics.child(metrics.http_duration, route, method).observe(time.perf_counter() - began)
            if status == "200" and (RESUME_HEADER in request.headers or RESUME_QUERY in request.query):
                metrics.stream_resumes.labels(route).inc()

    return middleware


def count_client_gone(request: web.Request) -> None:
    """A delivery's client went away before its stream or reply ended (http/delivery.py)."""
    metrics = request.app.get(METRICS)
    if metrics is not None:
        metrics.client_disconnects.labels(route_template(request)).inc()


async def metrics_endpoint(request: web.Request) -> web.Response:
    """GET /metrics: the text format, or OpenMetrics when Accept asks for `application/openmetrics-text`."""
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    body = encode(request.app[METRICS].registry)
    return web.Response(body=body, headers={"Content-Type": content_type, "Cache-Control": "no-store"})


def _gauge(spec: Instrument, value: float | None = None) -> GaugeMetricFamily:
    if spec.labels:
        return GaugeMetricFamily(spec.name, spec.help, labels=spec.labels)
    return GaugeMetricFamily(spec.name, spec.help, value=value or 0)


class ScrapedState:
    """The gauges and counters read from the app when scraped (a prometheus_client collector)."""

    def __init__(self, app: web.Application) -> None:
        self.app = app

    def collect(self) -> Iterator[Metric]:
        app = self.app
        yield self._turns(app)
        streams = app[STREAM_GAUGE]
        yield _gauge(STREAMS_OPEN, streams.open)
        yield _gauge(STREAM_BUFFERED, streams.buffered_bytes())
        yield _gauge(LEASES_HELD, 1 if app[LEASES].holding else 0)
        yield from self._agents(app)

    @staticmethod
    def _turns(app: web.Application) -> Metric:
        names = app[PROFILES].names_by_scope()
        counts: dict[tuple[str, str], int] = {}
        for profile in set(names.values()):
            for state in ("queued", "running", "suspended"):
                counts[(state, profile)] = 0
        for turn in app[TURNS].unsettled():
            if not turn.started:
                state = "queued"
            elif turn.may_wait or turn.awaiting_approval:
                state = "suspended"
            else:
                state = "running"
            key = (state, names.get(turn.request.scope, "unknown"))
            counts[key] = counts.get(key, 0) + 1
        family = _gauge(TURNS_BY_STATE)
        for labels, value in sorted(counts.items()):
            family.add_metric(labels, value)
        return family

    @staticmethod
    def _agents(app: web.Application) -> Iterator[Metric]:
        """The warm agents' numbers; the families without samples for a runtime that keeps none (declared all the same,
        so a dashboard's queries name metrics that exist)."""
        runtime = app[RUNTIME]
        stats = runtime.warm_agents()
        labels = [runtime.name]
        for spec, key in (
            (AGENT_CACHE_HITS, "hits"),
            (AGENT_CACHE_MISSES, "misses"),
            (AGENT_CACHE_EVICTIONS, "evictions"),
        ):
            family = CounterMetricFamily(spec.name, spec.help, labels=spec.labels)
            if stats is not None:
                family.add_metric(labels, stats.get(key, 0))
            yield family
        agents = _gauge(AGENT_CACHE_AGENTS)
        if stats is None:
            yield agents
            return
        leased = stats.get("leased", 0)
        agents.add_metric([runtime.name, "leased"], leased)
        agents.add_metric([runtime.name, "idle"], stats.get("cached", 0) - leased)
        yield agents
