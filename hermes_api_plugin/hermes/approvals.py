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

Two ways a turn waits (WIRE.md §15.1): `TurnApprovals` *holds* its approvals (§14.2, `hold_approvals`: the stream
stays open, a separate client decides through the turn's ApprovalGate, Hermes' own approval timeout applies);
`SuspendedApprovals` *suspends* the turn for each (its client answers in its own dialect): the request goes to the
turn's suspensions, which journal it and its answer — or the denial on timeout, stop, drain or a conversation that
moved on — and the answer is handed to Hermes' waiting guard. The runtime raises Hermes' approval timeout for such a
turn (`compat.approvals.raise_approval_timeout`), so the suspension, not Hermes, decides when waiting ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

from . import compat

Respond = Callable[[str], None]
Request = Callable[[str, str, "tuple[str, ...]"], None]
# a suspended approval: (command, description, choices) → the future of the client's choice ("deny" when none came)
Suspend = Callable[[str, str, "tuple[str, ...]"], "Future[str]"]

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


def describe(data: Mapping[str, Any]) -> tuple[str, str, tuple[str, ...]]:
    """Hermes' approval request as the turn shows it: the redacted command, the description, the choices."""
    command = compat.approvals.redact_approval_command(data.get("command"))
    description = str(data.get("description") or "")
    choices = approval_choices(
        smart_denied=bool(data.get("smart_denied")), allow_permanent=data.get("allow_permanent") is not False
    )
    return command, description, choices


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
        command, description, choices = describe(data)
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


class SuspendedApprovals:
    """The approvals of one running turn that suspends for them (WIRE.md §15.1): each request of Hermes' guard
    becomes a suspension of the turn (`suspend`); its outcome decides Hermes' oldest waiting request of the key.

    Hermes queues a turn's requests under its key and decides the oldest first; the suspensions answer their
    oldest approval first too, so each decision reaches the request it was asked for."""

    def __init__(self, key: str, suspend: Suspend) -> None:
        self.key = key
        self._suspend = suspend

    def notify(self, data: Mapping[str, Any]) -> None:
        """Hermes' notify callback (the agent's worker thread): suspend the turn; Hermes blocks for the decision."""
        decided = self._suspend(*describe(data))
        decided.add_done_callback(self._decide)

    def _decide(self, decided: Future[str]) -> None:
        choice = "deny" if decided.cancelled() or decided.exception() is not None else decided.result()
        compat.approvals.resolve_approval(self.key, choice, False)

    def report_ended(self) -> None:
        """Nothing to report: the suspensions journal every outcome, a denial by timeout included."""

    def close(self) -> None:
        """The turn is stopping or over: every request still waiting is denied by Hermes."""
        compat.approvals.release_approvals(self.key)
