"""The compat boundary for Hermes' dangerous-command approvals (`tools.approval`, WIRE.md §14.2): binding a turn's
approval key and notify callback in its worker thread, deciding waiting requests, the command as the gateway
shows it in a prompt (`hermes/approvals.py` builds the turn's approvals on these), and how long Hermes waits for a
decision in one turn.

Hermes reads its gateway approval timeout (`approvals.timeout` of config.yaml, 60 s by default) through
`_get_approval_timeout()` each time a flagged command starts waiting. A turn that suspends for its client's answer
(WIRE.md §15.1) waits `api_server.turns.suspend_seconds` instead: `raise_approval_timeout` sets that in a context
variable of the turn's worker thread — which Hermes copies into its tool threads, as it does its approval session
key — and the module's `_get_approval_timeout` is wrapped once (idempotent, thread-safe) to read it there, and
Hermes' own setting everywhere else: other turns keep `approvals.timeout`.
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import threading
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

APPROVAL_TIMEOUT = HermesName(
    "tools.approval",
    "_get_approval_timeout",
    args=(),
    fallback="a suspended approval waits Hermes' own approvals.timeout, not api_server.turns.suspend_seconds",
)

NAMES: tuple[HermesName, ...] = (
    APPROVAL_SET_KEY,
    APPROVAL_RESET_KEY,
    APPROVAL_REGISTER,
    APPROVAL_UNREGISTER,
    APPROVAL_RESOLVE,
    APPROVAL_BLOCKING,
    REDACT_APPROVAL_COMMAND,
    APPROVAL_TIMEOUT,
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


# -- one turn's approval timeout --------------------------------------------------------------------------------

_raised_timeout: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "hermes_api_plugin_approval_timeout", default=None
)
_timeout_lock = threading.Lock()
_timeout_wrapped = False


def _wrap_approval_timeout() -> bool:
    """Make `tools.approval._get_approval_timeout` read a turn's raised timeout (once per process); False when the
    name is unusable (its fallback is logged)."""
    global _timeout_wrapped
    with _timeout_lock:
        if _timeout_wrapped:
            return True
        original = usable(APPROVAL_TIMEOUT)
        if original is MISSING:
            return False

        @functools.wraps(original)
        def approval_timeout() -> Any:
            raised = _raised_timeout.get()
            return original() if raised is None else raised

        setattr(importlib.import_module(APPROVAL_TIMEOUT.module), APPROVAL_TIMEOUT.path, approval_timeout)
        _timeout_wrapped = True
        return True


def raise_approval_timeout(seconds: float) -> contextvars.Token[float | None] | None:
    """In the calling thread's context (the turn's worker thread; Hermes' tool threads copy it), a flagged command
    waits `seconds` for its decision. The token for restore_approval_timeout; None: Hermes' timeout applies."""
    if not _wrap_approval_timeout():
        return None
    return _raised_timeout.set(seconds)


def restore_approval_timeout(token: contextvars.Token[float | None] | None) -> None:
    """Undo raise_approval_timeout (in the same thread, after the turn)."""
    if token is not None:
        _raised_timeout.reset(token)
