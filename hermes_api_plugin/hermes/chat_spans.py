"""The `chat {model}` spans of a traced turn on the real Hermes agent: one per provider call, from Hermes' own plugin
hooks (`post_api_request`, `api_request_error`), which Hermes calls in the agent's thread once a call is over. That
thread runs in a copy of the turn's context (runtimes/hermes.py), so a hook finds the turn's tracing there — and,
outside a traced turn (tracing off, another platform's agent), returns at once."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from ..telemetry.trace_api import ChatCall, turn_tracing


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _call(hook: dict[str, Any], error_type: str | None = None) -> ChatCall | None:
    started, ended = hook.get("started_at"), hook.get("ended_at")
    if not isinstance(started, (int, float)) or not isinstance(ended, (int, float)):
        return None
    usage = _mapping(hook.get("usage"))
    base_url = _text(hook.get("base_url"))
    return ChatCall(
        model=_text(hook.get("model")) or "unknown",
        provider=_text(hook.get("provider")),
        started_at=float(started),
        ended_at=float(ended),
        response_model=_text(hook.get("response_model")),
        finish_reason=_text(hook.get("finish_reason")),
        input_tokens=_int(usage.get("input_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        server_address=urlsplit(base_url).hostname if base_url else None,
        error_type=error_type,
    )


def post_api_request(**hook: Any) -> None:
    """A provider call answered."""
    tracing = turn_tracing()
    if tracing is None:
        return
    call = _call(hook)
    if call is not None:
        tracing.record_chat(call)


def api_request_error(**hook: Any) -> None:
    """A provider call failed (Hermes may retry it: each attempt is its own span)."""
    tracing = turn_tracing()
    if tracing is None:
        return
    error = _mapping(hook.get("error"))
    call = _call(hook, _text(error.get("type")) or "provider_error")
    if call is not None:
        tracing.record_chat(call)


HOOKS = {"post_api_request": post_api_request, "api_request_error": api_request_error}
