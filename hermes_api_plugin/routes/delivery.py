"""Delivering a turn's journal to a client: an SSE pump and the padded wait of early-head JSON replies."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Iterable, Mapping, Sequence

from aiohttp import web

from ..events import TurnEvent, TurnFinished
from ..keys import ADMISSIONS, JOURNALS, SETTINGS
from ..sse import EarlyJson, Record, SseStream
from ..turns import Journal, Turn


def on_client_gone(request: web.Request, turn: Turn, keep: bool) -> None:
    """WIRE.md §5.5: under `auto` keyed and background turns keep running (detached), others are
    cancelled; `cancel` always cancels, `continue` never does."""
    policy = request.app[SETTINGS].on_disconnect
    if policy == "cancel" or (policy == "auto" and not keep):
        turn.cancel()
    else:
        turn.detached = True


async def pump(stream: SseStream, journal: Journal, render: Callable[[list[TurnEvent]], Iterable[Record]],
               keepalive: float, start: int = 0,
               before_send: Callable[[], Awaitable[None]] | None = None) -> bool:
    """Render and write the journal from `start` until its terminal record; False when the client left.

    `before_send` runs before each batch is written (e.g. waiting until the batch is durable).
    """
    async for batch in journal.follow(start, idle_timeout=keepalive):
        if batch is None:
            alive = await stream.keepalive()
        else:
            if before_send is not None:
                await before_send()
            alive = await stream.send(render(batch))
        if not alive:
            return False
    return True


async def await_settled(reply: EarlyJson, journal: Journal, fold: Callable[[list[TurnEvent]], object],
                        keepalive: float) -> bool:
    """Fold the journal until it settles, padding the reply while idle; False when the client left."""
    async for batch in journal.follow(0, idle_timeout=keepalive):
        if batch is not None:
            fold(batch)
        elif not await reply.pad():
            return False
    return True


def keyed_settler(app: web.Application) -> Callable[[Turn, TurnFinished], Awaitable[None]]:
    """The persist step of a keyed turn: its whole journal (terminal record included) is durable before
    its admission is marked settled, so a replay always finds the complete turn."""
    saver, admissions = app[JOURNALS], app[ADMISSIONS]

    async def settle(turn: Turn, finished: TurnFinished) -> None:
        await saver.write_now(turn.run_id, turn.journal, [finished])
        await admissions.settle(turn.run_id)

    return settle


async def deliver(request: web.Request, journal: Journal, turn: Turn | None, *, stream: bool, keep: bool,
                  headers: Mapping[str, str], render: Callable[[list[TurnEvent]], Iterable[Record]],
                  fold: Callable[[list[TurnEvent]], object], body: Callable[[], Mapping[str, Any]],
                  first: Sequence[Record] = (), sse: SseStream | None = None, done_marker: bool = False,
                  before_send: Callable[[], Awaitable[None]] | None = None) -> web.StreamResponse:
    """A turn's journal (live, attached or replayed) as an SSE stream or as an early-head JSON reply.

    `turn` is the turn this request admitted (None for attaches and replays: their clients only watch);
    it is released once the head is out, and a gone client decides its fate per §5.5 (`keep`: keyed or
    background). `sse` is a stream whose head was already written; `done_marker` ends with `[DONE]`.
    """
    keepalive = request.app[SETTINGS].sse_keepalive_seconds
    try:
        if stream:
            if sse is None:
                sse = await SseStream.open(request, headers, first)
            if turn is not None:
                turn.release()
            if await pump(sse, journal, render, keepalive, before_send=before_send):
                await (sse.done() if done_marker else sse.close())
            elif turn is not None:
                on_client_gone(request, turn, keep)
            return sse.response
        reply = await EarlyJson.open(request, headers)
        if turn is not None:
            turn.release()
        if await await_settled(reply, journal, fold, keepalive):
            await reply.finish(body())
        elif turn is not None:
            on_client_gone(request, turn, keep)
        return reply.response
    except asyncio.CancelledError:
        if turn is not None:
            on_client_gone(request, turn, keep)
        raise
