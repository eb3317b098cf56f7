"""The compat boundary for Hermes' dangerous-command approvals (`tools.approval`, WIRE.md §14.2): binding a turn's
approval key and notify callback in its worker thread, deciding waiting requests, and the command as the gateway
shows it in a prompt (`hermes/approvals.py` builds the turn's approvals on these)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._core import MISSING, HermesName, call, usable, warn_fallback

_NO_APPROVALS = "no approvals: a flagged command is refused at once, as without a decision"
APPROVAL_SET_KEY = HermesName(
    "tools.approval", "set_current_session_key", args=("session_key",), fallback=_NO_APPROVALS
)
APPROVAL_RESET_KEY = HermesName(
    "tools.approval", "reset_current_session_key", args=("token",), fallback="the key binding ends with the thread"
)
APPROVAL_REGISTER = HermesName(
    "tools.approval", "register_gateway_notify", args=("session_key", "cb"), fallback=_NO_APPROVALS
)
APPROVAL_UNREGISTER = HermesName(
    "tools.approval",
    "unregister_gateway_notify",
    args=("session_key",),
    fallback="pending requests end with Hermes' approval timeout (denied)",
)
APPROVAL_RESOLVE = HermesName(
    "tools.approval",
    "resolve_gateway_approval",
    args=("session_key", "choice"),
    kwargs=("resolve_all",),
    fallback="nothing can be decided: requests end with Hermes' approval timeout (denied)",
)
APPROVAL_BLOCKING = HermesName(
    "tools.approval",
    "has_blocking_approval",
    args=("session_key",),
    fallback="a request's denial by timeout is reported when the turn ends",
)
REDACT_APPROVAL_COMMAND = HermesName(
    "gateway.run", "_redact_approval_command", args=("cmd",), fallback="the command is shown as [redacted]"
)

NAMES: tuple[HermesName, ...] = (
    APPROVAL_SET_KEY,
    APPROVAL_RESET_KEY,
    APPROVAL_REGISTER,
    APPROVAL_UNREGISTER,
    APPROVAL_RESOLVE,
    APPROVAL_BLOCKING,
    REDACT_APPROVAL_COMMAND,
)


def bind_approvals(key: str, notify: Callable[[dict[str, Any]], None]) -> Any | None:
    """Make `key` the calling thread's approval session key and register `notify` for it, so a flagged command
    blocks for a decision instead of failing. The token for unbind_approvals; None: no approvals here."""
    token = call(APPROVAL_SET_KEY, key)
    if token is MISSING:
        return None
    if call(APPROVAL_REGISTER, key, notify) is MISSING:
        call(APPROVAL_RESET_KEY, token)
        return None
    return token


def release_approvals(key: str) -> None:
    """Unregister the notify callback of `key`; Hermes wakes every request still waiting, denied. Idempotent."""
    call(APPROVAL_UNREGISTER, key)


def unbind_approvals(key: str, token: Any) -> None:
    """Undo bind_approvals (after the turn, in its worker thread's `finally`)."""
    try:
        release_approvals(key)
    finally:
        call(APPROVAL_RESET_KEY, token)


def resolve_approval(key: str, choice: str, resolve_all: bool) -> int:
    """Decide the oldest waiting request of `key` (all of them with `resolve_all`); how many were decided."""
    resolved = call(APPROVAL_RESOLVE, key, choice, resolve_all=resolve_all)
    return 0 if resolved is MISSING else int(resolved)


def approval_waiting(key: str) -> bool | None:
    """Whether a request of `key` still waits in Hermes' queue; None when that cannot be asked."""
    waiting = call(APPROVAL_BLOCKING, key)
    return None if waiting is MISSING else bool(waiting)


def redact_approval_command(command: Any) -> str:
    """The command as the gateway shows it in an approval prompt: credentials redacted (force, as upstream)."""
    target = usable(REDACT_APPROVAL_COMMAND, command)
    if target is MISSING:
        return "[redacted]"
    try:
        return str(target(command))
    except Exception as exc:
        # never the raw command: it may hold the very credential the guard flagged
        warn_fallback(REDACT_APPROVAL_COMMAND, f"raised {type(exc).__name__}: {exc}")
        return "[redacted]"
