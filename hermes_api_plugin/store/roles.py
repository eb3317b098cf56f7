"""The roles of the stores: one narrow protocol per job, each consumer typed by the roles it uses.

`SessionStore` is the conversation history behind `/api/sessions` and `X-Hermes-Session-Id` (the plugin's own tables
with the scripted runtime, Hermes' SessionDB with the hermes runtime: `hermes/sessions.py`). The other roles are the
state only this plugin owns: stored Responses, session keys and conversation names, session placement, idempotency
records, journals, leases, runs and the wait keys of suspended turns. A backend (`sqlite/store.py`,
`postgres/store.py`) plays every plugin role at once: `Store` is their sum, what the factory builds and the app holds;
a consumer names only the roles it calls.
No role has more than 15 methods (a test).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol

from ..core.content import Message
from .base import (
    Eviction,
    Feed,
    ForkResult,
    IdempotencyRecord,
    Lease,
    RunRecord,
    SessionInfo,
    SessionMessageRow,
    StoredResponse,
)


class StoreBackend(Protocol):
    """The store as a whole: opened and closed by the app, described by `/health/detailed`."""

    @property
    def durable(self) -> bool:
        """False for the in-memory fallback: capabilities report it."""
        ...

    @property
    def kind(self) -> str:
        """The backend as `/health/detailed` names it: `sqlite`, `memory` (nothing survives a restart), ..."""
        ...

    async def open(self) -> None: ...

    async def close(self) -> None: ...


class ResponseStore(Protocol):
    """Stored Responses (`/v1/responses`), their items and the chains `previous_response_id` builds."""

    async def put_response(self, response: StoredResponse, items: Sequence[dict[str, Any]]) -> list[Eviction]:
        """Insert or update a response and its items (input and output); moves its conversation name
        to it; evicts the least recently accessed responses beyond the cap and returns them."""
        ...

    async def get_response(self, scope: str, response_id: str) -> StoredResponse | None:
        """The response (marking it accessed), or None when unknown, deleted, evicted or of another scope."""
        ...

    async def delete_response(self, scope: str, response_id: str) -> bool:
        """Delete a response, its items, its conversation names and its journal; its idempotency record (if any)
        becomes a tombstone. False when unknown or of another scope."""
        ...

    async def chain_messages(self, scope: str, response_id: str) -> list[Message]:
        """The transcript of the chain ending at `response_id`, oldest first."""
        ...

    async def find_item(self, scope: str, item_id: str) -> dict[str, Any] | None: ...

    async def find_tool_output(self, scope: str, call_id: str) -> str | None:
        """The output of a tool this server ran (never a client's own function_call_output)."""
        ...

    async def unsettled_responses(self, now: float, dead: Collection[str] = ()) -> list[StoredResponse]:
        """Responses left queued or in progress by a gateway process that is gone: whose owner holds no lease valid
        at `now` (none, or expired) or is one of `dead`."""
        ...


class SessionKeyStore(Protocol):
    """The names a client gives a conversation: `X-Hermes-Session-Key` → session id, `conversation` → the latest
    Response of that name (moved by `ResponseStore.put_response`)."""

    async def session_for_key(self, scope: str, key: str) -> str | None: ...

    async def bind_session_key(self, scope: str, key: str, session_id: str) -> None: ...

    async def unbind_session(self, session_id: str) -> None:
        """Forget a (deleted) session: every session-key binding to it, and which host keeps it."""
        ...

    async def conversation_head(self, scope: str, name: str) -> str | None: ...


class PlacementStore(Protocol):
    """Which gateway host keeps a session, when sessions are kept per host (cluster/placement.py)."""

    async def session_host(self, session_id: str) -> str | None:
        """The gateway host that keeps `session_id`, when one recorded it."""
        ...

    async def set_session_host(self, session_id: str, host: str) -> None: ...


class IdempotencyStore(Protocol):
    """The durable records of keyed requests (WIRE.md §5.4), kept in the `admissions` table."""

    async def get_idempotency_record(self, scope: str, surface: str, key: str) -> IdempotencyRecord | None: ...

    async def reserve_idempotency_record(self, record: IdempotencyRecord) -> IdempotencyRecord | None:
        """Insert `record` atomically; None when reserved, else the record that already holds the key."""
        ...

    async def replace_idempotency_record(self, record: IdempotencyRecord) -> None:
        """Overwrite the record of an expired key with a new reservation."""
        ...

    async def settle_idempotency_record(self, turn_id: str) -> None:
        """The turn's running record becomes `settled` (other states are left alone)."""
        ...

    async def mark_unknown_idempotency_records(self, now: float, dead: Collection[str] = ()) -> list[str]:
        """Records left running by a gateway process that is gone — whose owner holds no lease valid at `now`
        (none, or expired) or is one of `dead` — become `unknown`; returns their turn ids. Safe at any time, from
        any gateway: of two gateways marking at once, each record goes to one of them."""
        ...

    async def idempotency_record_for_turn(self, scope: str, turn_id: str) -> IdempotencyRecord | None: ...


class JournalStore(Protocol):
    """Turn journals: the JSON-encoded events a replay, a reconnect or another gateway's follower reads."""

    async def append_journals(
        self, batches: Sequence[tuple[str, int, Sequence[str]]], *, awaited: bool = False
    ) -> None:
        """Write JSON-encoded events (turn id, sequence number of the first, events) in one transaction;
        writing a sequence number again replaces that event. `awaited`: a client's stream waits for these rows
        before it shows them, so the write goes before the loop's other work where the backend can arrange it."""
        ...

    async def load_journal(self, turn_id: str, start: int = 0) -> list[str]:
        """A turn's events from sequence number `start` on, in order; empty when unknown."""
        ...


class LeaseStore(Protocol):
    """Leases (one per gateway process) and the feed of a store several gateways share at once."""

    async def renew_lease(self, lease: Lease) -> None:
        """Insert or extend the lease of `lease.owner`."""
        ...

    async def release_lease(self, owner: str) -> None:
        """Drop a lease (a clean shutdown, after its turns settled)."""
        ...

    async def get_lease(self, owner: str) -> Lease | None: ...

    async def leases(self) -> list[Lease]:
        """Every lease, expired ones included (one row per gateway process: a small table)."""
        ...

    async def purge_leases(self, owners: Collection[str], expired_before: float) -> None:
        """Drop the leases of `owners` that expired before `expired_before` (their leftovers are settled)."""
        ...

    def feed(self) -> Feed | None:
        """The cross-gateway notifications of a store several gateways share at once (the same object on every
        call); None for the store of one gateway."""
        ...


class RunStore(Protocol):
    """Run records (written when the store is shared, WIRE.md §6.2) and what a gone owner left unsettled."""

    async def put_run(self, run: RunRecord) -> None: ...

    async def settle_run(self, turn_id: str, status: str, settled_at: float) -> None:
        """A running run record takes its settled status (other states are left alone)."""
        ...

    async def get_run(self, scope: str, turn_id: str) -> RunRecord | None: ...

    async def mark_unknown_runs(self, now: float, dead: Collection[str] = ()) -> list[str]:
        """Run records left running by a gateway process that is gone (as `mark_unknown_idempotency_records`)
        become `failed`; returns their turn ids."""
        ...

    async def owned_unsettled(self, owner: str) -> list[str]:
        """The turn ids `owner` still has unsettled in the store: running idempotency records and run records,
        queued or in-progress stored Responses (its own sweep re-persists those whose turns settled but could not be
        stored)."""
        ...

    async def purge_runs(self, settled_before: float) -> None:
        """Drop the run records settled before `settled_before`, and their journals unless an idempotency record or
        a stored Response still renders them."""
        ...


class WaitStore(Protocol):
    """What a suspended turn can be answered by while it waits (WIRE.md §15.1): its wait keys, so that an answer landing
    on a gateway that does not run the turn finds it (cluster/waits.py). Only a store several gateways share at once
    keeps them: another backend's methods do nothing, its turns are always found in their own process's registry."""

    async def put_wait_keys(self, run_id: str, scope: str, keys: Sequence[str]) -> None:
        """Record that run `run_id` (of `scope`) can be answered by each of `keys` (already recorded: kept)."""
        ...

    async def waiting_runs(self, scope: str, keys: Sequence[str]) -> list[tuple[str, RunRecord]]:
        """The running runs of `scope` waiting to be answered by one of `keys`, each with every key it waits by: (a
        key, its run record) pairs."""
        ...

    async def drop_wait_keys(self, run_id: str) -> None:
        """Forget every wait key of a run (it was answered)."""
        ...


class SessionStore(Protocol):
    """Sessions and their messages. Opened and closed by whoever owns the database behind it."""

    async def load_session_messages(self, session_id: str) -> list[Message]:
        """The live transcript of a session, oldest first; empty for an unknown session."""
        ...

    async def append_session_messages(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        usage: tuple[int, int] = (0, 0),
        compaction: str | None = None,
    ) -> None:
        """Append messages to a session (created when new), adding `usage` (input, output tokens); with a
        `compaction` summary the live transcript is archived first (WIRE.md §7.2)."""
        ...

    async def list_sessions(
        self, limit: int, offset: int, source: str | None, include_children: bool = False
    ) -> tuple[list[SessionInfo], bool]:
        """A page of sessions, most recently active first, and whether more follow. `include_children`: also the
        sessions a host hides from its list (Hermes' sub-agent runs and compression continuations; the plugin's
        tables have none)."""
        ...

    async def get_session(self, session_id: str) -> SessionInfo | None: ...

    async def live_session_id(self, session_id: str) -> str:
        """The session a conversation goes on in: Hermes continues a compacted session under a new id (a compression
        continuation) and reads and chats go to that live tip, as upstream's do; the plugin's tables never split."""
        ...

    async def create_session(self, session_id: str, title: str | None) -> bool:
        """False when the id exists."""
        ...

    async def seed_session(self, session_id: str, messages: Sequence[Message]) -> bool:
        """Create a session whose transcript starts as `messages` (a stateless chat that branched off: the history
        its client sent); False, changing nothing, when the id exists."""
        ...

    async def update_session(self, session_id: str, fields: dict[str, Any]) -> bool:
        """Set `title`, `pinned`, `archived`; `end_reason` ends the session (`ended_at`, kept when it already
        ended); other keys are ignored. False for an unknown session."""
        ...

    async def delete_session(self, session_id: str) -> bool:
        """Delete a session and its messages; False when unknown."""
        ...

    async def fork_session(self, session_id: str, fork_id: str, title: str | None) -> ForkResult:
        """Branch a session: a new session `fork_id` whose parent is `session_id`, with its messages copied
        (compacted ones too) and `title` (None: the backend's default fork title)."""
        ...

    async def session_message_rows(
        self, session_id: str, *, limit: int, offset: int, newest_first: bool, include_compacted: bool
    ) -> list[SessionMessageRow]:
        """A page of a session's messages (newest page first when asked), returned archived first, then in
        append order."""
        ...

    async def session_tool_names(self, session_id: str) -> dict[str, str]:
        """tool_call_id → tool name for every tool call of a session."""
        ...


class Store(
    StoreBackend,
    ResponseStore,
    SessionKeyStore,
    PlacementStore,
    IdempotencyStore,
    JournalStore,
    LeaseStore,
    RunStore,
    WaitStore,
    Protocol,
):
    """Every plugin role at once: what a backend is, the factory builds and the app holds (never a consumer's
    type: a consumer names the roles it calls). Declares nothing of its own."""
