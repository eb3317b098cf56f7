"""Wait keys: how an answer that lands on a gateway that does not run its turn finds that turn (WIRE.md §15.1, W-15.4).

On one gateway a request finds the suspended turn it answers among the registry's waiting turns (each surface's
`resumes`). With several gateways on a shared store the turn may wait on another one: while it waits, the store keeps
what each surface looks it up by, as keys of its run —

    session:<id>       its session (an explicit X-Hermes-Session-Id, session chat)
    chat:<key>         a stateless chat conversation as the client now holds it (`Turn.answer_key`)
    call:<id>          a client tool call that waits for its output
    approval:<id>      a Responses `mcp_approval_request` that waits for its decision
    response:<id>      the Response that ended at the request (`previous_response_id`, or a conversation's head)

    delivery paused at a request ──▶ journal durable, then `publish` (the keys)
    a request no local turn takes ──▶ `find` (one indexed read, only when the store is shared)
    the answer, before it is applied ──▶ `answered` (the keys go; the next pause publishes anew)
    the turn settles ──▶ the store drops what is left (`settle_run`)

Nothing here runs per event: a publish per pause, a lookup per request that no local turn takes, a drop per answer.
The keys are published by the gateway whose delivery paused (the owner, or the gateway that delivers a turn it
resumed there), after the journal holding the request is committed, so the gateway that then takes the answer reads
a journal that shows it. A store of one gateway (SQLite) keeps none: every turn is found in its own registry.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ..store.base import RunRecord, StoreError
from ..store.roles import WaitStore
from ..turns import Journal
from ..turns.durable import JournalSaver

log = logging.getLogger("hermes_api_plugin")


SESSION, CONVERSATION, CALL, APPROVAL, RESPONSE = "session:", "chat:", "call:", "approval:", "response:"


def session_wait(session_id: str) -> str:
    return SESSION + session_id


def conversation_wait(answer_key: str) -> str:
    return CONVERSATION + answer_key


def call_wait(call_id: str) -> str:
    return CALL + call_id


def approval_wait(request_id: str) -> str:
    return APPROVAL + request_id


def response_wait(response_id: str) -> str:
    return RESPONSE + response_id


@dataclass(frozen=True)
class Waiting:
    """A run another gateway may run, waiting to be answered: the wait key a request found it by, and all its keys."""

    key: str
    run: RunRecord
    keys: tuple[str, ...]

    def value(self, prefix: str) -> str | None:
        """The value of the run's first wait key of a kind (`response:` → the Response its turn last ended)."""
        return next((k.removeprefix(prefix) for k in self.keys if k.startswith(prefix)), None)


class Waits:
    """The wait keys of suspended turns in a store several gateways share (a no-op for any other store)."""

    def __init__(self, store: WaitStore, journals: JournalSaver, shared: bool) -> None:
        self.store = store
        self.journals = journals
        self.shared = shared  # other gateways share the store at once: an answer may land on any of them

    async def publish(self, run_id: str, scope: str, keys: Sequence[str], journal: Journal) -> None:
        """A delivery of `run_id` paused at a request: the answer can find the turn by `keys` from any gateway, once
        the journal that shows the request is committed. A store failure is logged: the answer still finds the
        turn on the gateway that runs it."""
        if not self.shared or not keys:
            return
        try:
            if self.journals.watching(journal):
                await self.journals.durable(journal)
            await self.store.put_wait_keys(run_id, scope, keys)
        except StoreError as exc:
            log.warning("[API Server] could not record how run %s is answered from other gateways: %s", run_id, exc)

    async def find(self, scope: str, keys: Sequence[str]) -> Waiting | None:
        """The running run of `scope` waiting to be answered by the first of `keys` (they come in the order the
        surface's own lookup prefers) that one waits for. StoreError when the store fails."""
        if not self.shared or not keys:
            return None
        rows = await self.store.waiting_runs(scope, keys)
        runs = {key: run for key, run in rows}
        key = next((k for k in keys if k in runs), None)
        if key is None:
            return None
        run = runs[key]
        return Waiting(key, run, tuple(k for k, r in rows if r.turn_id == run.turn_id))

    async def answered(self, run_id: str) -> None:
        """The turn is about to take its answer: what it was waiting by goes (before the answer is applied, so that
        the keys of its next pause are never dropped). A failure is logged: stale keys find a turn that waits for
        something else, which the answer is then decided against."""
        if not self.shared:
            return
        try:
            await self.store.drop_wait_keys(run_id)
        except StoreError as exc:
            log.warning("[API Server] could not drop the wait keys of run %s: %s", run_id, exc)
