"""What a turn records in the gateway's metrics (core/metrics.py): its label children bound once at admission, its
first reasoning and answer bytes (times the callback sink keeps), each tool's duration, and at settlement its
duration, status, first-byte times and token usage.

Nothing here runs per token: the sink stamps the first byte of each kind (one comparison per callback), a tool
observes one histogram when it completes, and the rest is observed once, when the turn settles.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..core.events import TurnFinished, TurnStatus
from ..core.metrics import Metrics
from ..runtimes.base import TurnRequest

OPERATION = "invoke_agent"  # GenAI's name for a call into an agent: a turn, whatever surface asked for it
TOOL_ERROR = "tool_error"


class TurnMeter:
    """One turn's instruments (children bound at admission) and the times it observes when it settles."""

    __slots__ = (
        "_content",
        "_duration",
        "_finished",
        "_metrics",
        "_per_token",
        "_profile",
        "_reasoning",
        "_runtime",
        "_surface",
        "_ttft",
        "_usage",
        "_usage_input",
        "_usage_output",
        "admitted_at",
    )

    def __init__(
        self,
        metrics: Metrics,
        labels: tuple[str, str, str, str, str, str],
        surface: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._metrics = metrics
        self.admitted_at = clock()
        self._surface = surface
        self._runtime, self._profile = labels[4], labels[5]
        self._ttft = metrics.child(metrics.time_to_first_token, *labels)
        self._per_token = metrics.child(metrics.time_per_output_token, *labels)
        self._reasoning = metrics.child(metrics.time_to_first_reasoning, *labels)
        self._content = metrics.child(metrics.time_to_first_content, *labels)
        self._usage_input = metrics.child(metrics.token_usage, *labels, "input")
        self._usage_output = metrics.child(metrics.token_usage, *labels, "output")
        self._duration = metrics.request_duration
        self._usage = labels
        self._finished = metrics.turns_finished

    def tool_completed(self, name: str, seconds: float, is_error: bool) -> None:
        """One tool execution ended (on the loop, as its completion is journaled)."""
        tool = self._metrics.tools(name)
        error = TOOL_ERROR if is_error else ""
        self._metrics.child(self._metrics.tool_duration, tool, error, self._runtime, self._profile).observe(seconds)

    def settled(
        self, finished: TurnFinished, first_reasoning_at: float | None, first_text_at: float | None, now: float
    ) -> None:
        """The turn's terminal record is journaled: its duration, status and, for completed turns, the GenAI
        first-token, per-token and usage figures. `first_*_at` and `now` are `time.monotonic()` values."""
        status = finished.status
        completed = status is TurnStatus.COMPLETED
        error = "" if completed else (finished.error_code or status.value)
        metrics = self._metrics
        metrics.child(self._duration, *self._usage, error).observe(now - self.admitted_at)
        metrics.child(self._finished, self._surface, status.value, self._runtime, self._profile).inc()
        if first_reasoning_at is not None:
            self._reasoning.observe(first_reasoning_at - self.admitted_at)
        if first_text_at is not None:
            self._content.observe(first_text_at - self.admitted_at)
        if not completed:
            return
        firsts = [at for at in (first_reasoning_at, first_text_at) if at is not None]
        first = min(firsts) if firsts else None
        if first is not None:
            self._ttft.observe(first - self.admitted_at)
        usage = finished.usage
        if usage.prompt_tokens:
            self._usage_input.observe(usage.prompt_tokens)
        if usage.completion_tokens:
            self._usage_output.observe(usage.completion_tokens)
            if first is not None and usage.completion_tokens > 1:
                self._per_token.observe((now - first) / (usage.completion_tokens - 1))


class TurnMeters:
    """Builds the meter of each turn one submitter admits: the gateway's metrics, its runtime's name, the profile the
    turns run in, and the model and provider a request that names none runs on."""

    def __init__(self, metrics: Metrics, runtime: str, profile: str, model: str, provider: str) -> None:
        self.metrics = metrics
        self.runtime = runtime
        self.profile = profile
        self.model = model
        self.provider = provider

    def for_profile(self, profile: str, model: str) -> TurnMeters:
        return TurnMeters(self.metrics, self.runtime, profile, model, self.provider)

    def meter(self, request: TurnRequest, surface: str) -> TurnMeter:
        m = self.metrics
        labels = (
            OPERATION,
            m.providers(request.provider or self.provider),
            m.models(request.model or self.model),
            surface,
            self.runtime,
            self.profile,
        )
        return TurnMeter(m, labels, surface)

    def admission(self, surface: str, outcome: str, keyed: bool) -> None:
        """One work-creating request's submission outcome (submission/submit.py)."""
        m = self.metrics
        m.child(m.admissions, surface, outcome, "true" if keyed else "false", self.profile).inc()


class CommitMeter:
    """The journal group commits of one gateway (turns/durable.py): events per commit and its duration."""

    def __init__(self, metrics: Metrics, backend: str) -> None:
        self._events = metrics.commit_events.labels(backend)
        self._duration = metrics.commit_duration.labels(backend)

    def committed(self, events: int, seconds: float) -> None:
        self._events.observe(events)
        self._duration.observe(seconds)
