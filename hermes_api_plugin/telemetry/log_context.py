"""What a log line says about where it was logged: the route of its request, the run and session of its turn, the
trace it belongs to — one frozen value in a context variable.

Set where a request or a turn begins (http/request_trace.py, turns/registry.py); asyncio tasks copy it when they are
created, and the hermes runtime runs its agent thread in a copy of the turn's context, so lines logged by the agent
carry it too. The log formatters (log_format.py) read it when a line is formatted, in the thread that logged it.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LogFields:
    """The correlation fields of a log line; None where the line is outside a request, a turn or a trace."""

    route: str | None = None  # the route template of the request (`/v1/responses/{response_id}`)
    run_id: str | None = None
    session_id: str | None = None
    trace_id: str | None = None  # 32 hex digits, when tracing is on

    def as_dict(self) -> dict[str, str]:
        return {name: value for name in self.__slots__ if (value := getattr(self, name)) is not None}


NO_FIELDS = LogFields()
_FIELDS: ContextVar[LogFields] = ContextVar("hermes_api_log_fields", default=NO_FIELDS)


def current() -> LogFields:
    """The fields of the running task or thread."""
    return _FIELDS.get()


def bind_request(route: str | None, trace_id: str | None = None) -> None:
    """A request begins (in its own task: nothing to reset)."""
    _FIELDS.set(LogFields(route=route, trace_id=trace_id))


def bind_turn(run_id: str, session_id: str) -> None:
    """A turn begins, in its own task: it keeps the route and trace of the request that created it."""
    fields = _FIELDS.get()
    _FIELDS.set(LogFields(route=fields.route, run_id=run_id, session_id=session_id, trace_id=fields.trace_id))


def bind_trace(trace_id: str) -> None:
    """The running task's trace (a turn with no request of its own starts one)."""
    fields = _FIELDS.get()
    if fields.trace_id != trace_id:
        _FIELDS.set(
            LogFields(route=fields.route, run_id=fields.run_id, session_id=fields.session_id, trace_id=trace_id)
        )
