"""Delivering a turn's journal to a client: an SSE pump, or an early-head JSON reply padded while the turn runs.

The third step of every work-creating POST (parse → submit → deliver), driven by the request's surface
(surfaces/surface.py: its headers, first records, renderer and JSON body). A new turn arrives *held*
(`HeldTurn`): it starts only once its head is written, and a head that cannot be written (the client is
already gone) cancels it — the `async with` block guarantees one or the other. Attaches and replays
only watch: their client going away never affects the turn.

The journal is written into an event stream (`EventStream`): an SSE stream (http/sse.py) over HTTP, or a WebSocket
connection (http/websocket.py, WIRE.md §16) — one renderer, two framings. A socket's deliveries run one after another
on the stream its handshake opened, so `deliver` takes an opened stream instead of writing a head.

A delivery covers the journal from the surface's `start` (0, or just after the request a resumed turn was answered
at) to the terminal record — or to a request that suspends the turn (WIRE.md §15.1): the surface's renderer then
reports `paused`, and the delivery ends cleanly in its dialect's way while the turn waits for the client's answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from aiohttp import web

from ..core.eager import run_eagerly
from ..core.errors import client_gone
from ..core.events import TurnEvent, TurnFinished
from ..dialects.record import SseRecord
from ..submission.submit import Existing, NewTurn, Resumed
from ..surfaces.surface import Delivery, Render, Surface, never_paused
from ..turns import HeldTurn, Journal, Turn
from .app_keys import SETTINGS
from .metrics import count_client_gone
from .sse import EarlyJson, SseStream

H = TypeVar("H")


class EventStream(Protocol):
    """Where a delivery writes its records: `SseStream` (one SSE message each) or `WebSocketStream` (one text frame
    each). A failed write marks it `gone`; every write says whether the client is still there."""

    @property
    def response(self) -> web.StreamResponse: ...

    @property
    def gone(self) -> bool: ...

    async def send(self, records: Iterable[SseRecord], *, last: bool = False) -> bool:
        """`last`: the records end the delivery (the terminal record's batch): the stream may hold them for its
        `done`/`close`, which follow at once."""
        ...

    async def keepalive(self) -> bool: ...

    async def done(self) -> None:
        """The end of the delivery, with the stream's end marker (chat's `[DONE]`)."""
        ...

    async def close(self) -> None:
        """The end of the delivery."""
        ...


def on_client_gone(request: web.Request, turn: Turn, keep: bool) -> None:
    """WIRE.md §5.5: under `auto` keyed and background turns keep running (detached), others are
    cancelled; `cancel` always cancels, `continue` never does."""
    policy = request.app[SETTINGS].on_disconnect
    if policy == "cancel" or (policy == "auto" and not keep):
        turn.cancel()
    else:
        turn.detached = True


class InPlace:
    """A live delivery's writes made where the journal gains its events (`Journal.follow`'s `take`): render, then the
    stream's write run eagerly — no task switch and no loop iteration between the agent's callback and the socket
    (issue 25). Anything but a write that completed at once with the delivery still going wakes the pump: a write
    waiting for the client to drain, a gone client, a pause, an error (raised in the pump, never into the agent)."""

    __slots__ = ("_left", "paused", "render", "stream")

    def __init__(self, stream: EventStream, render: Render, paused: Callable[[], bool]) -> None:
        self.stream = stream
        self.render = render
        self.paused = paused
        self._left: bool | asyncio.Task[bool] | BaseException = True

    def __call__(self, batch: list[TurnEvent]) -> bool:
        try:
            done, sent = run_eagerly(send_batch(self.stream, self.render, batch))
        except Exception as exc:  # raised in the pump, not into the agent
            self._left = exc
            return False
        if done and sent is True and not self.paused():
            return True
        self._left = sent
        return False

    async def left(self) -> bool:
        """What the last write in place came to: whether the client is still there."""
        left, self._left = self._left, True
        if isinstance(left, BaseException):
            raise left
        return await left if isinstance(left, asyncio.Task) else left


def send_batch(stream: EventStream, render: Render, batch: list[TurnEvent]) -> Coroutine[Any, Any, bool]:
    """`stream.send` of a rendered batch, `last` when it holds the terminal record (always its last event)."""
    return stream.send(render(batch), last=bool(batch) and isinstance(batch[-1], TurnFinished))


async def pump(
    stream: EventStream,
    journal: Journal,
    render: Render,
    keepalive: float,
    before_send: Callable[[], Awaitable[None]] | None = None,
    *,
    start: int = 0,
    paused: Callable[[], bool] = never_paused,
) -> bool:
    """Render and write the journal from `start` until its terminal record, or until the renderer is `paused` at a
    request to the client; False when the client left. The caller ends the stream (`done` or `close`): the batch
    with the terminal record is sent `last`, and a stream may hold it for that end.

    `before_send` runs before each batch is written (e.g. waiting until the batch is durable); without it, a batch
    appended while the pump waits is written in place (`InPlace`).
    """
    in_place = InPlace(stream, render, paused) if before_send is None else None
    async for batch in journal.follow(start, idle_timeout=keepalive, take=in_place):
        if batch is None:
            alive = await stream.keepalive()
        elif not batch and in_place is not None:  # woken by what was written in place
            alive = await in_place.left()
            if alive and paused():
                return True
        else:
            if before_send is not None:
                await before_send()
            alive = await send_batch(stream, render, batch)
            if alive and paused():
                return True
        if not alive:
            return False
    return True


async def await_settled(
    reply: EarlyJson,
    journal: Journal,
    fold: Callable[[list[TurnEvent]], object],
    keepalive: float,
    *,
    start: int = 0,
    paused: Callable[[], bool] = never_paused,
) -> bool:
    """Fold the journal from `start` until it settles or the fold is `paused` at a request to the client, padding
    the reply while idle; False when the client left."""
    async for batch in journal.follow(start, idle_timeout=keepalive):
        if batch is not None:
            fold(batch)
            if paused():
                return True
        elif not await reply.pad():
            return False
    return True


def _gone(request: web.Request, turn: Turn | None, keep: bool) -> None:
    """The client left mid-delivery: counted (http/metrics.py), and the turn this request admitted decided (§5.5)."""
    count_client_gone(request)
    if turn is not None:
        on_client_gone(request, turn, keep)


def start_detached(held: HeldTurn) -> Turn:
    """Start a turn nobody streams (runs, background Responses): its reply does not wait for it."""
    held.start()
    return held.turn


async def _head(opening: Awaitable[H]) -> H:
    """Write a response head; 499 when the client is already gone (nothing of the turn has run yet)."""
    try:
        return await opening
    except (ConnectionError, RuntimeError):
        raise client_gone() from None


async def open_stream(request: web.Request, headers: Mapping[str, str], first: Sequence[SseRecord] = ()) -> SseStream:
    """The SSE head (and the first records in the same write); 499 when the client is already gone."""
    return await _head(SseStream.open(request, headers, first))


async def deliver(
    request: web.Request,
    journal: Journal,
    held: HeldTurn | None,
    surface: Delivery,
    sse: EventStream | None = None,
    *,
    into: EventStream | None = None,
) -> web.StreamResponse:
    """A turn's journal (live, attached or replayed) as an event stream or as an early-head JSON reply.

    `held` is the turn this request admitted (None for attaches and replays: their clients only watch);
    it starts once the head is out, and a gone client decides its fate per §5.5 (`surface.keep`: keyed or
    background). `sse` is a stream whose head was already written (a keyed chat stream's early head); `into` an open
    stream this delivery begins on, its first records written as a head would carry them (a WebSocket connection,
    WIRE.md §16).
    """
    keepalive = request.app[SETTINGS].sse_keepalive_seconds
    keep = surface.keep
    guard: contextlib.AbstractAsyncContextManager[Turn | None] = held if held is not None else contextlib.nullcontext()
    async with guard as turn:
        try:
            if surface.stream:
                if sse is None and into is not None:
                    sse = into
                    if not await sse.send(surface.first()):
                        raise client_gone()  # as a head that cannot be written: nothing of the turn has run
                if sse is None:
                    sse = await open_stream(request, surface.headers(), surface.first())
                if held is not None:
                    held.start()
                if await pump(
                    sse,
                    journal,
                    surface.render,
                    keepalive,
                    before_send=surface.before_send,
                    start=surface.start,
                    paused=surface.paused,
                ):
                    if surface.paused():
                        await surface.suspended()  # before the end is written: the client may answer at once
                    await (sse.done() if surface.done_marker else sse.close())
                else:
                    _gone(request, turn, keep)
                return sse.response
            reply = await _head(EarlyJson.open(request, surface.headers()))
            if held is not None:
                held.start()
            if await await_settled(reply, journal, surface.fold, keepalive, start=surface.start, paused=surface.paused):
                if surface.paused():
                    await surface.suspended()
                await reply.finish(surface.body())
            else:
                _gone(request, turn, keep)
            return reply.response
        except asyncio.CancelledError:
            _gone(request, turn, keep)
            raise


async def deliver_outcome(
    request: web.Request,
    outcome: NewTurn[Any] | Existing | Resumed,
    surface: Surface[Any],
    into: EventStream | None = None,
) -> web.StreamResponse:
    """The turn a submission found: this request's new one (held until its head is out; `outcome.head` is a keyed chat
    stream's early head), the suspended one it answered (watched from where it resumes, WIRE.md §15.1), or the keyed
    one a retry attaches to or replays — `into` an open stream (a WebSocket connection) when there is one."""
    if isinstance(outcome, Resumed):
        return await deliver(request, outcome.journal, None, surface, into=into)
    if isinstance(outcome, Existing):
        surface.replaying(outcome)
        return await deliver(request, outcome.journal, None, surface, into=into)
    async with outcome.held as turn:  # a failure before the head is out cancels the turn: no slot stays held
        surface.delivering(turn)
        return await deliver(request, turn.journal, outcome.held, surface, outcome.head, into=into)


def early_stream(request: web.Request, surface: Surface[Any]) -> Callable[[Turn], Awaitable[SseStream]]:
    """The SSE head of a new turn written right after its admission, before the turn is reserved or stored (a keyed
    chat stream, WIRE.md §5.3): a refused reservation is then reported in-stream."""

    async def open_head(turn: Turn) -> SseStream:
        surface.delivering(turn)
        return await open_stream(request, surface.headers(), surface.first())

    return open_head
