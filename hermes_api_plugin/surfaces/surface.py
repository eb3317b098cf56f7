"""The Surface protocol: what one work-creating surface (chat, Responses, session chat) does for a turn.

    parse (routes/ → `Posted`) → submit (submission/submit.py, through the surface's `Planner` part) → deliver
    (http/delivery.py, through its `Delivery` part)

A surface service is built per request from its `Posted` value — the body and every header it reads, parsed before
anything is admitted — and plans the new turn, names the typed reply a keyed retry needs (`reply`, stored as the
admission record's JSON), and renders the turn it delivers: this request's new one (`delivering`), or the keyed one
it found (`replaying`: attached live or replayed from its journal, with the ids its reply recorded). Runs answer
202 at once and deliver no journal: their service is a `Planner` with a typed reply only (surfaces/runs.py).

The protocol lives here, not in dialects/ (DESIGN.md §3), because it names the submission path's plan and turns,
which the pure dialects may not import; its rendering half is the dialects' renderers, handed out as their own bound
methods so that nothing is added per event batch.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from ..core.events import TurnEvent
from ..dialects.record import SseRecord
from ..protocol.common import HermesHeaders
from ..submission.submit import Existing, Planner, StoredReply
from ..turns import Turn

B = TypeVar("B")
R = TypeVar("R", bound=StoredReply, covariant=True)
Render = Callable[[list[TurnEvent]], Iterable[SseRecord]]
Fold = Callable[[list[TurnEvent]], object]


@dataclass(frozen=True)
class Posted(Generic[B]):
    """A work-creating POST as parsed before anything is admitted: its body and every header a surface reads (no
    surface reads the request after `submit`: issue 20, defect 1)."""

    body: B
    hermes: HermesHeaders  # X-Hermes-Session-Id / -Session-Key / -Tool-Progress / -Tool-Items
    key: str | None  # Idempotency-Key
    large: bool  # the body is large: its identity hash is computed off the loop
    last_event_id: int = 0  # Last-Event-ID of a session chat stream: the records its retry already saw


class Delivery(Protocol):
    """What `deliver` asks of a surface for one delivery (a new turn, an attach or a replay). Each member is read
    once per delivery: `render`, `fold` and `before_send` are then called per event batch, so they are the
    renderer's own bound methods, never a wrapper around them."""

    @property
    def stream(self) -> bool:
        """SSE, or the early-head JSON reply (WIRE.md §1.11)."""
        ...

    @property
    def keep(self) -> bool:
        """Whether a gone client leaves the turn running under `on_disconnect: auto` (keyed, background: §5.5)."""
        ...

    @property
    def done_marker(self) -> bool:
        """The stream ends with `data: [DONE]` (chat)."""
        ...

    @property
    def render(self) -> Render:
        """Events to the stream's records."""
        ...

    @property
    def fold(self) -> Fold:
        """Events into the JSON body."""
        ...

    @property
    def before_send(self) -> Callable[[], Awaitable[None]] | None:
        """Awaited before each batch is written (a durable journal: until the batch is saved)."""
        ...

    @property
    def start(self) -> int:
        """The journal position the delivery begins at: 0, or just after the request a resumed turn was answered at
        (WIRE.md §15.1)."""
        ...

    @property
    def paused(self) -> Callable[[], bool]:
        """Whether the renderer has reached a request that ends the delivery (the turn suspends, WIRE.md §15.1);
        asked once per batch."""
        ...

    async def suspended(self) -> None:
        """The delivery ended at a request to the client (`paused`): record what the client's answer will find the turn
        by, before the end of the delivery is written."""
        ...

    def headers(self) -> Mapping[str, str]:
        """The response head's headers."""
        ...

    def first(self) -> Sequence[SseRecord]:
        """The records written with the stream's head."""
        ...

    def body(self) -> Mapping[str, Any]:
        """The JSON body once the journal settled (or, for background Responses, at once)."""
        ...


class Surface(Planner, Delivery, Protocol[R]):
    """One work-creating surface for one request: it plans the new turn (`Planner`), names what a keyed retry
    needs to re-render it (`reply`), and delivers a turn (`Delivery`) once told which one."""

    def reply(self, turn: Turn | None) -> R:
        """The typed reply of this request's admitted `turn` (None: another gateway's, which this request resumed),
        stored with its key (`to_json`)."""
        ...

    def delivering(self, turn: Turn) -> None:
        """Deliver this request's new turn (called once it is admitted, before anything of it is written)."""
        ...

    def replaying(self, existing: Existing) -> None:
        """Deliver the keyed turn a retry found — attached live or replayed — with the ids its stored reply names."""
        ...


def never_paused() -> bool:
    """The `paused` of a delivery that never ends before its turn settles."""
    return False


def run_headers(
    session_id: str | None, run_id: str | None, session_key: str | None, replayed: bool = False
) -> dict[str, str]:
    """X-Hermes-Session-Id, X-Hermes-Run-Id, the echoed X-Hermes-Session-Key, Idempotency-Replayed (§1.5)."""
    headers: dict[str, str] = {}
    if session_id is not None:
        headers["X-Hermes-Session-Id"] = session_id
    if run_id is not None:
        headers["X-Hermes-Run-Id"] = run_id
    if session_key is not None:
        headers["X-Hermes-Session-Key"] = session_key
    if replayed:
        headers["Idempotency-Replayed"] = "true"
    return headers
