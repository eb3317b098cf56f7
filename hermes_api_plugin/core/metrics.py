"""The gateway's Prometheus instruments (issue 24): every name, label set and bucket list, declared once as data, and
`Metrics`, one gateway app's instruments on a registry of its own.

Names follow the OpenTelemetry GenAI semantic conventions where they have one, rendered for Prometheus (dots become
underscores, the unit `s` becomes the suffix `_seconds`, `{token}` none): `gen_ai_server_time_to_first_token_seconds`,
`gen_ai_server_time_per_output_token_seconds`, `gen_ai_server_request_duration_seconds`, `gen_ai_client_token_usage`,
and `gen_ai_execute_tool_duration_seconds` for the `execute_tool` operation, with the GenAI attributes as labels
(`gen_ai_operation_name`, `gen_ai_provider_name`, `gen_ai_request_model`, `gen_ai_token_type`, `gen_ai_tool_name`,
`error_type`). What GenAI does not cover is the project's own, under `hermes_api_`. Bucket lists are the conventions'
advice where they give one.

Labels are bounded: a route template, surface, status, model, runtime, profile, tool name — never ids, prompts or keys.
Values a client can choose (model, tool and provider names) go through `BoundedLabel`, which keeps the first
`MAX_MODELS` (or `MAX_TOOLS`) distinct values and reports every later one as `other`.

A registry per app (not prometheus_client's global one): two gateways in one process (the tests, a host that mounts
two apps) keep their own series. Gauges that are a state the gateway already keeps (turns by state, open streams,
warm agents) are read when scraped (`http/metrics.py`), never tracked per event.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Literal

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.metrics import MetricWrapperBase

PREFIX = "hermes_api_"
# distinct values a client-chosen label keeps before `other`: a model or provider name labels every turn histogram
# (about 100 series each), a tool name one histogram (about 30)
MAX_MODELS = 16
MAX_TOOLS = 64
OTHER = "other"

# GenAI semantic conventions' bucket advice (seconds, tokens)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
FIRST_TOKEN_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
PER_TOKEN_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5)
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
# The project's own: an agent turn's first byte may wait for tools and several model calls
FIRST_BYTE_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0)
STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
COMMIT_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096)

# The labels every turn metric carries (a turn binds them once, turns/meter.py)
TURN_LABELS = (
    "gen_ai_operation_name",
    "gen_ai_provider_name",
    "gen_ai_request_model",
    "surface",
    "runtime",
    "profile",
)


@dataclass(frozen=True)
class Instrument:
    """One metric as Prometheus shows it (`name` without the `_total` a counter gets)."""

    kind: Literal["counter", "histogram", "gauge"]
    name: str
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()


TIME_TO_FIRST_TOKEN = Instrument(
    "histogram",
    "gen_ai_server_time_to_first_token_seconds",
    "Time from a turn's admission to its first output (reasoning or answer), for completed turns",
    TURN_LABELS,
    FIRST_TOKEN_BUCKETS,
)
TIME_PER_OUTPUT_TOKEN = Instrument(
    "histogram",
    "gen_ai_server_time_per_output_token_seconds",
    "Time per output token after the first one, for completed turns that report usage",
    TURN_LABELS,
    PER_TOKEN_BUCKETS,
)
REQUEST_DURATION = Instrument(
    "histogram",
    "gen_ai_server_request_duration_seconds",
    "Time from a turn's admission to its terminal record (error_type set unless it completed)",
    (*TURN_LABELS, "error_type"),
    DURATION_BUCKETS,
)
TOKEN_USAGE = Instrument(
    "histogram",
    "gen_ai_client_token_usage",
    "Tokens a turn used, by gen_ai_token_type (input, output), as the runtime reported them",
    (*TURN_LABELS, "gen_ai_token_type"),
    TOKEN_BUCKETS,
)
TOOL_DURATION = Instrument(
    "histogram",
    "gen_ai_execute_tool_duration_seconds",
    "Duration of one tool execution by the agent (execute_tool), by tool name",
    ("gen_ai_tool_name", "error_type", "runtime", "profile"),
    DURATION_BUCKETS,
)
TIME_TO_FIRST_REASONING = Instrument(
    "histogram",
    PREFIX + "time_to_first_reasoning_seconds",
    "Time from a turn's admission to the first byte of its reasoning, for turns that reasoned",
    TURN_LABELS,
    FIRST_BYTE_BUCKETS,
)
TIME_TO_FIRST_CONTENT = Instrument(
    "histogram",
    PREFIX + "time_to_first_content_seconds",
    "Time from a turn's admission to the first byte of its answer, for turns that answered",
    TURN_LABELS,
    FIRST_BYTE_BUCKETS,
)
TURNS_FINISHED = Instrument(
    "counter",
    PREFIX + "turns",
    "Turns settled, by terminal status (completed, incomplete, failed, cancelled)",
    ("surface", "status", "runtime", "profile"),
)
TURNS_BY_STATE = Instrument(
    "gauge",
    PREFIX + "turns_unsettled",
    "Unsettled turns by state: queued, running, suspended (waiting for the client: an approval, a question, a "
    "client tool's output)",
    ("state", "profile"),
)
ADMISSIONS = Instrument(
    "counter",
    PREFIX + "admissions",
    "Work-creating requests by submission outcome: new, attach, replay, resumed, conflict, unknown, expired, or the "
    "refusal code (storage_unavailable, running_elsewhere, answer_unconfirmed, store_refused)",
    ("surface", "outcome", "keyed", "profile"),
)
STREAM_RESUMES = Instrument(
    "counter",
    PREFIX + "stream_resumes",
    "Streams resumed (Last-Event-ID or starting_after), by route template",
    ("route",),
)
CLIENT_DISCONNECTS = Instrument(
    "counter",
    PREFIX + "client_disconnects",
    "Deliveries whose client went away before the end of the turn's stream or reply",
    ("route",),
)
STREAMS_OPEN = Instrument("gauge", PREFIX + "streams_open", "Streaming replies still being written")
STREAM_BUFFERED = Instrument(
    "gauge",
    PREFIX + "sse_buffered_bytes",
    "Bytes the open streams wrote that their transports have not sent yet (slow clients)",
)
AGENT_CACHE_HITS = Instrument("counter", PREFIX + "agent_cache_hits", "Turns that ran on a warm agent", ("runtime",))
AGENT_CACHE_MISSES = Instrument(
    "counter", PREFIX + "agent_cache_misses", "Turns that built a fresh agent", ("runtime",)
)
AGENT_CACHE_EVICTIONS = Instrument(
    "counter",
    PREFIX + "agent_cache_evictions",
    "Warm agents released for idleness, the cap, a new configuration or a deleted session",
    ("runtime",),
)
AGENT_CACHE_AGENTS = Instrument(
    "gauge", PREFIX + "agent_cache_agents", "Warm agents held, by state (idle, leased)", ("runtime", "state")
)
STORE_DURATION = Instrument(
    "histogram",
    PREFIX + "store_operation_duration_seconds",
    "Duration of one store operation, by backend (sqlite, memory, postgres) and operation",
    ("backend", "operation"),
    STORE_BUCKETS,
)
STORE_ERRORS = Instrument(
    "counter",
    PREFIX + "store_operation_errors",
    "Store operations that failed, by backend, operation and error (unavailable, refused)",
    ("backend", "operation", "error"),
)
COMMIT_EVENTS = Instrument(
    "histogram",
    PREFIX + "journal_commit_events",
    "Journal events written by one group commit (turns/durable.py)",
    ("backend",),
    COMMIT_SIZE_BUCKETS,
)
COMMIT_DURATION = Instrument(
    "histogram",
    PREFIX + "journal_commit_duration_seconds",
    "Duration of one journal group commit",
    ("backend",),
    STORE_BUCKETS,
)
LEASES_HELD = Instrument("gauge", PREFIX + "leases_held", "1 while this gateway process holds its lease")
LEASE_TAKEOVERS = Instrument(
    "counter",
    PREFIX + "lease_takeovers",
    "Gone gateway processes whose leases this one found expired and whose leftovers it settled",
)
TURNS_RECOVERED = Instrument(
    "counter", PREFIX + "turns_recovered", "Turns of gone gateway processes this one settled (unknown_execution)"
)
REMOTE_ATTACH = Instrument(
    "histogram",
    PREFIX + "remote_attach_duration_seconds",
    "Time to attach to a turn another gateway runs (its journal read from the shared store)",
    (),
    STORE_BUCKETS,
)
HTTP_REQUESTS = Instrument(
    "counter",
    PREFIX + "http_requests",
    "HTTP requests by route template, method and status",
    ("route", "method", "status", "profile"),
)
HTTP_DURATION = Instrument(
    "histogram",
    PREFIX + "http_request_duration_seconds",
    "HTTP request duration by route template and method (a stream's: until its end)",
    ("route", "method"),
    HTTP_BUCKETS,
)

# Every metric the gateway exposes, in the order of README's table
INSTRUMENTS = (
    TIME_TO_FIRST_TOKEN,
    TIME_PER_OUTPUT_TOKEN,
    REQUEST_DURATION,
    TOKEN_USAGE,
    TOOL_DURATION,
    TIME_TO_FIRST_REASONING,
    TIME_TO_FIRST_CONTENT,
    TURNS_FINISHED,
    TURNS_BY_STATE,
    ADMISSIONS,
    STREAM_RESUMES,
    CLIENT_DISCONNECTS,
    STREAMS_OPEN,
    STREAM_BUFFERED,
    AGENT_CACHE_HITS,
    AGENT_CACHE_MISSES,
    AGENT_CACHE_EVICTIONS,
    AGENT_CACHE_AGENTS,
    STORE_DURATION,
    STORE_ERRORS,
    COMMIT_EVENTS,
    COMMIT_DURATION,
    LEASES_HELD,
    LEASE_TAKEOVERS,
    TURNS_RECOVERED,
    REMOTE_ATTACH,
    HTTP_REQUESTS,
    HTTP_DURATION,
)


class BoundedLabel:
    """A label whose values a client chooses: the first `limit` distinct values are kept, later ones are `other`, so
    no client can grow the series count without bound. Thread-safe (tools complete on agent threads' behalf)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str | None) -> str:
        value = value or "unknown"
        if value in self._seen:
            return value
        with self._lock:
            if len(self._seen) < self.limit:
                self._seen.add(value)
                return value
        return OTHER


def _histogram(spec: Instrument, registry: CollectorRegistry) -> Histogram:
    return Histogram(spec.name, spec.help, spec.labels, registry=registry, buckets=spec.buckets)


def _counter(spec: Instrument, registry: CollectorRegistry) -> Counter:
    return Counter(spec.name, spec.help, spec.labels, registry=registry)


class Metrics:
    """One gateway app's recorded instruments on its own registry (the read-when-scraped gauges are added to the
    registry by http/metrics.py). Hot paths hold label children bound once (`.labels(...)`), never look them up
    per event."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.time_to_first_token = _histogram(TIME_TO_FIRST_TOKEN, r)
        self.time_per_output_token = _histogram(TIME_PER_OUTPUT_TOKEN, r)
        self.request_duration = _histogram(REQUEST_DURATION, r)
        self.token_usage = _histogram(TOKEN_USAGE, r)
        self.tool_duration = _histogram(TOOL_DURATION, r)
        self.time_to_first_reasoning = _histogram(TIME_TO_FIRST_REASONING, r)
        self.time_to_first_content = _histogram(TIME_TO_FIRST_CONTENT, r)
        self.turns_finished = _counter(TURNS_FINISHED, r)
        self.admissions = _counter(ADMISSIONS, r)
        self.stream_resumes = _counter(STREAM_RESUMES, r)
        self.client_disconnects = _counter(CLIENT_DISCONNECTS, r)
        self.store_duration = _histogram(STORE_DURATION, r)
        self.store_errors = _counter(STORE_ERRORS, r)
        self.commit_events = _histogram(COMMIT_EVENTS, r)
        self.commit_duration = _histogram(COMMIT_DURATION, r)
        self.lease_takeovers = _counter(LEASE_TAKEOVERS, r)
        self.turns_recovered = _counter(TURNS_RECOVERED, r)
        self.remote_attach = _histogram(REMOTE_ATTACH, r)
        self.http_requests = _counter(HTTP_REQUESTS, r)
        self.http_duration = _histogram(HTTP_DURATION, r)
        # client-chosen values, bounded per app
        self.models = BoundedLabel(MAX_MODELS)
        self.providers = BoundedLabel(MAX_MODELS)
        self.tools = BoundedLabel(MAX_TOOLS)
        self._children: dict[tuple[MetricWrapperBase, tuple[str, ...]], Any] = {}

    def child(self, metric: MetricWrapperBase, *values: str) -> Any:
        """`metric.labels(*values)`, remembered: prometheus_client's lookup (a lock, a tuple of checked strings) costs
        about as much as the rest of a turn's metrics, and turns repeat the same few label sets (issue 25). As many
        entries as series, which the bounded labels bound."""
        key = (metric, values)
        bound = self._children.get(key)
        if bound is None:
            bound = self._children[key] = metric.labels(*values)
        return bound
