"""Hermes' dangerous-command approvals for one API turn (WIRE.md §14.2).

Inside a turn Hermes' guard (`tools.approval`) blocks the agent's worker thread on a flagged command until
`resolve_gateway_approval` decides it or Hermes' approval timeout denies it. `TurnApprovals` binds the turn's
approval key in that thread, registers the notify callback that turns Hermes' request into the turn's
`approval.request` event, decides requests for `POST /v1/runs/{run_id}/approval`, and reports a request that
ended without a decision (timeout, stop, disconnect, drain) as denied.

The approval key is the conversation's (X-Hermes-Session-Key, else the session id), so a `session` approval
covers the conversation's later turns, as it does on Hermes' messaging platforms. Hermes keeps one notify
callback and one queue per key, so two unsettled turns never share one: a turn whose key is in use by
another takes its own run id (upstream's per-run isolation) — a decision for one run never unblocks another.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from . import compat

Respond = Callable[[str], None]
Request = Callable[[str, str, "tuple[str, ...]"], None]

_claimed: set[str] = set()  # approval keys of the turns running in this process
_claimed_lock = threading.Lock()


def approval_choices(*, smart_denied: bool, allow_permanent: bool) -> tuple[str, ...]:
    """The choices a request offers, as upstream's `_approval_event_choices`: no `always` where Hermes forbids
    a permanent allow, only once/deny after its smart-approval model refused."""
    if smart_denied:
        return ("once", "deny")
    return ("once", "session", "always", "deny") if allow_permanent else ("once", "session", "deny")


def claim_key(preferred: str, run_id: str) -> str:
    """The approval key of a turn: `preferred` unless another running turn holds it, else the run id."""
    with _claimed_lock:
        key = preferred if preferred not in _claimed else run_id
        _claimed.add(key)
        return key


def release_key(key: str) -> None:
    with _claimed_lock:
        _claimed.discard(key)


class TurnApprovals:
    """The approvals of one running turn: its ApprovalGate (runtimes.base) and Hermes' notify callback.

    `_unanswered` counts requests journaled without a decision. It changes under `_lock` together with the
    call that decides (so a command approved and finished at once is never reported as denied) and the
    check that reports a request Hermes no longer holds as denied.
    """

    def __init__(self, key: str, request: Request, respond: Respond) -> None:
        self.key = key
        self._request = request
        self._respond = respond
        self._lock = threading.Lock()
        self._unanswered = 0
        self._closed = False

    # -- the agent's worker thread ------------------------------------------------------------------
    def notify(self, data: Mapping[str, Any]) -> None:
        """Hermes' notify callback: one flagged command now waits for a decision."""
        command = compat.approvals.redact_approval_command(data.get("command"))
        description = str(data.get("description") or "")
        choices = approval_choices(
            smart_denied=bool(data.get("smart_denied")), allow_permanent=data.get("allow_permanent") is not False
        )
        with self._lock:
            self._unanswered += 1
            self._request(command, description, choices)

    def report_ended(self) -> None:
        """Before a tool's completion is reported: requests Hermes gave up waiting for (its approval timeout,
        an interrupt) are journaled as denied — their commands did not run."""
        with self._lock:
            if not self._unanswered or compat.approvals.approval_waiting(self.key) is not False:
                return
            for _ in range(self._unanswered):
                self._respond("deny")
            self._unanswered = 0

    # -- the event loop (the approval endpoint) ------------------------------------------------------
    def resolve(self, choice: str, resolve_all: bool) -> int:
        with self._lock:
            if self._closed:
                return 0
            resolved = compat.approvals.resolve_approval(self.key, choice, resolve_all)
            for _ in range(resolved):
                self._respond(choice)
            self._unanswered = max(0, self._unanswered - resolved)
            return resolved

    # -- any thread ----------------------------------------------------------------------------------
    def close(self) -> None:
        """The turn is stopping or over: no more decisions; every request still waiting is denied by Hermes."""
        with self._lock:
            self._closed = True
        compat.approvals.release_approvals(self.key)
