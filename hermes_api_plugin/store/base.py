"""The store protocols every backend implements, and the values they exchange.

Two protocols, because they can live in different places: `SessionStore` is the conversation history
behind `/api/sessions` and `X-Hermes-Session-Id` (the plugin's own tables with the scripted runtime,
Hermes' SessionDB with the hermes runtime: `hermes/sessions.py`), `Store` is the state only this plugin
owns (stored Responses, conversation names, session-key bindings, idempotent admissions, turn journals).
Neither needs the other's tables.

Gateways sharing one store (PostgreSQL) coordinate through it: each renews a `Lease` under its boot id, durable
`RunRecord`s let any gateway read and stop any run, and a `Feed` (LISTEN/NOTIFY) wakes the followers of a turn
another gateway runs and carries stop requests to the owner. A store that is not shared (SQLite) has no feed.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypedDict

from ..core.content import Message


class StoreError(RuntimeError):
    """The backing store failed (cannot open, disk full, corrupt file)."""


class StoreUnavailable(StoreError):
    """The store cannot be reached right now (its database is down or restarting): the same write may succeed later,
    where a plain StoreError (a refused statement, a corrupt file) would fail again."""


class StoreRefused(StoreError):
    """The database refused a statement for the values it carried (a value its types cannot hold, a broken
    constraint): not an outage — the same request would be refused again, so it is never answered as
    `storage_unavailable` with Retry-After (issue 20, defect 7) — but a bug: the parsers should have refused the
    value, or the store encoded it."""


@dataclass(frozen=True)
class StoredResponse:
    """A Response as stored: its latest object, what rebuilds its chain, and how to re-render it."""

    id: str
    scope: str
    turn_id: str
    session_id: str
    status: str
    snapshot: dict[str, Any]
    previous_response_id: str | None = None
    conversation: str | None = None
    input_items: list[dict[str, Any]] = field(default_factory=list)
    instructions: str | None = None
    messages: list[Message] = field(default_factory=list)
    queued: bool = False
    commentary: bool = True
    created_at: float = 0.0
    owner: str | None = None  # the boot id of the gateway process running it (None: stored before leases)


@dataclass(frozen=True)
class Eviction:
    """A response dropped by the LRU cap, and the conversation names that pointed at it."""

    response_id: str
    conversations: tuple[str, ...]


@dataclass(frozen=True)
class IdempotencyRecord:
    """The durable record of a keyed request (WIRE.md §5)."""

    scope: str
    surface: str
    key: str
    identity: str
    target: str
    state: str  # running | settled | unknown | tombstone
    turn_id: str
    reply: dict[str, Any]
    owner: str | None = None
    created_at: float = 0.0
    settled_at: float | None = None


@dataclass(frozen=True)
class Lease:
    """A gateway process's claim to be alive (`owner`: its boot id) until `expires_at` (the owner's clock).

    `space` names the process space of `pid` (kernel boot id + pid namespace, `leases.py`): a gateway in the same
    space can tell at once that a crashed owner's process is gone, without waiting for the lease to run out."""

    owner: str
    expires_at: float
    space: str | None = None
    pid: int | None = None
    host: str = ""
    renewed_at: float = 0.0


@dataclass(frozen=True)
class RunRecord:
    """The durable record of a turn on a shared store (WIRE.md §6.2): enough for any gateway to find the run,
    check its scope, follow its journal and send its stop to the owner."""

    turn_id: str
    scope: str
    owner: str
    surface: str  # chat | responses | runs | session_chat
    session_id: str
    model: str | None
    status: str  # running | completed | incomplete | failed | cancelled
    created_at: float
    settled_at: float | None = None


class FeedSink(Protocol):
    """What a gateway does with the notifications of a shared store (its `Feed`)."""

    def journal_written(self, turn_id: str, end: int) -> None:
        """The journal rows of `turn_id` up to sequence number `end - 1` are committed."""
        ...

    def stop_requested(self, owner: str, turn_id: str) -> None:
        """A gateway asked `owner` to stop `turn_id` (WIRE.md §6.4)."""
        ...

    def reconnected(self) -> None:
        """The feed listens again after losing its connection: notifications may have been missed."""
        ...


class Feed(Protocol):
    """Cross-gateway wake-ups over a shared store: one listening connection per gateway."""

    async def start(self, sink: FeedSink) -> None:
        """Listen and dispatch to `sink` until `close()`; returns once listening (reconnects on its own)."""
        ...

    async def close(self) -> None: ...

    async def request_stop(self, owner: str, turn_id: str) -> None:
        """Ask the gateway `owner` to stop `turn_id` (delivered to its sink's `stop_requested`)."""
        ...


class SessionInfo(TypedDict):
    """A session as `/api/sessions` shows it (WIRE.md §7): the routes serialise it as is."""

    id: str
    source: str
    title: str | None
    model: str | None
    started_at: float
    ended_at: float | None
    last_active: float
    message_count: int  # live (not compacted) messages
    tool_call_count: int  # tool result messages
    input_tokens: int
    output_tokens: int
    parent_session_id: str | None
    pinned: bool
    archived: bool
    preview: str | None  # the first real user message's text, at most 200 characters


class SessionMessageRow(TypedDict):
    """One stored message of a session, as the messages page renders it."""

    id: str  # "m_<n>", increasing in append order
    role: str
    content: list[dict[str, Any]]  # content parts (JSON)
    reasoning: str | None
    extra: dict[str, Any]  # tool_calls / tool_call_id / {"summary": true} for a compaction summary
    timestamp: float
    compacted: bool


ForkResult = Literal["forked", "no_source", "exists"]  # fork_session: done, unknown original, fork id taken


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


class Store(Protocol):
    """The state this plugin owns, whoever keeps the sessions."""

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

    # -- session-key bindings (X-Hermes-Session-Key → session id) -------------------------------------
    async def session_for_key(self, scope: str, key: str) -> str | None: ...

    async def bind_session_key(self, scope: str, key: str, session_id: str) -> None: ...

    async def unbind_session(self, session_id: str) -> None:
        """Forget a (deleted) session: every session-key binding to it, and which host keeps it."""
        ...

    # -- session placement (per-host session stores, placement.py) -----------------------------------
    async def session_host(self, session_id: str) -> str | None:
        """The gateway host that keeps `session_id`, when one recorded it."""
        ...

    async def set_session_host(self, session_id: str, host: str) -> None: ...

    # -- responses -----------------------------------------------------------------------------------
    async def put_response(self, response: StoredResponse, items: Sequence[dict[str, Any]]) -> list[Eviction]:
        """Insert or update a response and its items (input and output); moves its conversation name
        to it; evicts the least recently accessed responses beyond the cap and returns them."""
        ...

    async def get_response(self, scope: str, response_id: str) -> StoredResponse | None:
        """The response (marking it accessed), or None when unknown, deleted, evicted or of another scope."""
        ...

    async def delete_response(self, scope: str, response_id: str) -> bool:
        """Delete a response, its items, its conversation names and its journal; its admission (if any)
        becomes a tombstone. False when unknown or of another scope."""
        ...

    async def conversation_head(self, scope: str, name: str) -> str | None: ...

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

    # -- admissions ----------------------------------------------------------------------------------
    async def get_admission(self, scope: str, surface: str, key: str) -> IdempotencyRecord | None: ...

    async def reserve_admission(self, record: IdempotencyRecord) -> IdempotencyRecord | None:
        """Insert `record` atomically; None when reserved, else the record that already holds the key."""
        ...

    async def replace_admission(self, record: IdempotencyRecord) -> None:
        """Overwrite the record of an expired key with a new reservation."""
        ...

    async def settle_admission(self, turn_id: str) -> None:
        """The turn's running admission becomes `settled` (other states are left alone)."""
        ...

    async def mark_unknown_admissions(self, now: float, dead: Collection[str] = ()) -> list[str]:
        """Idempotency left running by a gateway process that is gone — whose owner holds no lease valid at `now`
        (none, or expired) or is one of `dead` — become `unknown`; returns their turn ids. Safe at any time, from
        any gateway: of two gateways marking at once, each record goes to one of them."""
        ...

    async def admission_for_turn(self, scope: str, turn_id: str) -> IdempotencyRecord | None: ...

    # -- journals ------------------------------------------------------------------------------------
    async def append_journals(self, batches: Sequence[tuple[str, int, Sequence[str]]]) -> None:
        """Write JSON-encoded events (turn id, sequence number of the first, events) in one transaction;
        writing a sequence number again replaces that event."""
        ...

    async def load_journal(self, turn_id: str, start: int = 0) -> list[str]:
        """A turn's events from sequence number `start` on, in order; empty when unknown."""
        ...

    # -- leases (one per gateway process) --------------------------------------------------------------
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

    # -- run records (written when the store is shared) ---------------------------------------------
    async def put_run(self, run: RunRecord) -> None: ...

    async def settle_run(self, turn_id: str, status: str, settled_at: float) -> None:
        """A running run record takes its settled status (other states are left alone)."""
        ...

    async def get_run(self, scope: str, turn_id: str) -> RunRecord | None: ...

    async def mark_unknown_runs(self, now: float, dead: Collection[str] = ()) -> list[str]:
        """Run records left running by a gateway process that is gone (as `mark_unknown_admissions`) become
        `failed`; returns their turn ids."""
        ...

    async def owned_unsettled(self, owner: str) -> list[str]:
        """The turn ids `owner` still has unsettled in the store: running admissions and run records, queued or
        in-progress stored Responses (its own sweep re-persists those whose turns settled but could not be stored)."""
        ...

    async def purge_runs(self, settled_before: float) -> None:
        """Drop the run records settled before `settled_before`, and their journals unless an admission or a
        stored Response still renders them."""
        ...

    # -- several gateways ----------------------------------------------------------------------------
    def feed(self) -> Feed | None:
        """The cross-gateway notifications of a store several gateways share at once (the same object on every
        call); None for the store of one gateway."""
        ...
