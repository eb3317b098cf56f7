"""The values the stores exchange and the errors they raise; the roles that consume them are in `roles.py`.

Gateways sharing one store (PostgreSQL) coordinate through it: each renews a `Lease` under its boot id, durable
`RunRecord`s let any gateway read and stop any run, and a `Feed` (LISTEN/NOTIFY) wakes the followers of a turn
another gateway runs and carries stop requests to the owner. A store that is not shared (SQLite) has no feed.
"""

from __future__ import annotations

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
    hosted: bool = False  # the server's tools render as `mcp_call` items (WIRE.md §15.3), fixed at creation
    created_at: float = 0.0
    owner: str | None = None  # the boot id of the gateway process running it (None: stored before leases)
    # the journal position its Response begins at: 0, or just after the request a resumed turn was answered at (§15.3)
    start: int = 0


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

    @property
    def address(self) -> str:
        """The gateway's boot id: the answers and replies addressed to it are its own."""
        ...

    def journal_written(self, turn_id: str, end: int) -> None:
        """The journal rows of `turn_id` up to sequence number `end - 1` are committed."""
        ...

    def stop_requested(self, owner: str, turn_id: str) -> None:
        """A gateway asked `owner` to stop `turn_id` (WIRE.md §6.4)."""
        ...

    def follow_requested(self, owner: str, turn_id: str) -> None:
        """A gateway follows `turn_id`, which `owner` runs: it wants each of its rows as soon as it is journaled."""
        ...

    def answer_requested(self, owner: str, message: str) -> None:
        """A gateway forwarded a client's answer for a turn `owner` runs (WIRE.md §15.1); `message` is the
        cluster's own encoding."""
        ...

    def answer_replied(self, to: str, message: str) -> None:
        """The owner of a turn replied to the answer that the gateway `to` forwarded."""
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

    async def announce_follow(self, owner: str, turn_id: str) -> None:
        """Tell the gateway `owner` that `turn_id` is followed from here (its sink's `follow_requested`)."""
        ...

    async def forward_answer(self, owner: str, message: str) -> None:
        """Hand `message` (of any length) to the gateway `owner` (its sink's `answer_requested`)."""
        ...

    async def reply_answer(self, to: str, message: str) -> None:
        """Reply `message` to the gateway `to` that forwarded an answer (its sink's `answer_replied`)."""
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
