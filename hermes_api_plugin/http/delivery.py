"""Delivering a turn's journal to a client: an SSE pump, or an early-head JSON reply padded while the turn runs.

The third step of every work-creating POST (parse → submit → deliver). A new turn arrives *held*
(`HeldTurn`): it starts only once its head is written, and a head that cannot be written (the client is
already gone) cancels it — the `async with` block guarantees one or the other. Attaches and replays
only watch: their client going away never affects the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from aiohttp import web

from ..core.errors import client_gone
from ..core.events import TurnEvent
from ..dialects.record import SseRecord
from ..turns import HeldTurn, Journal, Turn
from .app_keys import SETTINGS
from .sse import EarlyJson, SseStream

H = TypeVar("H")
Render = Callable[[list[TurnEvent]], Iterable[SseRecord]]


def on_client_gone(request: web.Request, turn: Turn, keep: bool) -> None:
    """WIRE.md §5.5: under `auto` keyed and background turns keep running (detached), others are
    cancelled; `cancel` always cancels, `continue` never does."""
    policy = request.app[SETTINGS].on_disconnect
    if policy == "cancel" or (policy == "auto" and not keep):
        turn.cancel()
    else:
        turn.detached = True


async def pump(
    stream: SseStream,
    journal: Journal,
    render: Render,
    keepalive: float,
    before_send: Callable[[], Awaitable[None]] | None = None,
) -> bool:
    """Render and write the journal from its start until its terminal record; False when the client left.

    `before_send` runs before each batch is written (e.g. waiting until the batch is durable).
    """
    async for batch in journal.follow(0, idle_timeout=keepalive):
        if batch is None:
            alive = await stream.keepalive()
        else:
            if before_send is not None:
                await before_send()
            alive = await stream.send(render(batch))
        if not alive:
            return False
    return True


async def await_settled(
    reply: EarlyJson, journal: Journal, fold: Callable[[list[TurnEvent]], object], keepalive: float
) -> bool:
    """Fold the journal until it settles, padding the reply while idle; False when the client left."""
    async for batch in journal.follow(0, idle_timeout=keepalive):
        if batch is not None:
            fold(batch)
        elif not await reply.pad():
            return False
    return True


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
    *,
    stream: bool,
    keep: bool,
    headers: Mapping[str, str],
    render: Render,
    fold: Callable[[list[TurnEvent]], object],
    body: Callable[[], Mapping[str, Any]],
    first: Sequence[SseRecord] = (),
    sse: SseStream | None = None,
    done_marker: bool = False,
    before_send: Callable[[], Awaitable[None]] | None = None,
) -> web.StreamResponse:
    """A turn's journal (live, attached or replayed) as an SSE stream or as an early-head JSON reply.

    `held` is the turn this request admitted (None for attaches and replays: their clients only watch);
    it starts once the head is out, and a gone client decides its fate per §5.5 (`keep`: keyed or
    background). `sse` is a stream whose head was already written; `done_marker` ends with `[DONE]`.
    """
    keepalive = request.app[SETTINGS].sse_keepalive_seconds
    guard: contextlib.AbstractAsyncContextManager[Turn | None] = held if held is not None else contextlib.nullcontext()
    async with guard as turn:
        try:
            if stream:
                if sse is None:
                    sse = await open_stream(request, headers, first)
                if held is not None:
                    held.start()
                if await pump(sse, journal, render, keepalive, before_send=before_send):
                    await (sse.done() if done_marker else sse.close())
                elif turn is not None:
                    on_client_gone(request, turn, keep)
                return sse.response
            reply = await _head(EarlyJson.open(request, headers))
            if held is not None:
                held.start()
            if await await_settled(reply, journal, fold, keepalive):
                await reply.finish(body())
            elif turn is not None:
                on_client_gone(request, turn, keep)
            return reply.response
        except asyncio.CancelledError:
            if turn is not None:
                on_client_gone(request, turn, keep)
            raise
