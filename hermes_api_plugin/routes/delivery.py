"""Delivering a turn's journal to a client: an SSE pump and the padded wait of early-head JSON replies."""

from __future__ import annotations

from typing import Awaitable, Callable, Iterable

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
