"""The feed of the PostgreSQL store: LISTEN/NOTIFY between gateways sharing one database (issue 15).

Four channels:

    hermes_api_journal   "<turn id> <end>"    sent by `append_journals` in the transaction that writes the rows,
                                               so a follower woken by it finds them committed (`end` = the
                                               highest sequence number written + 1)
    hermes_api_stop      "<owner> <turn id>"  sent by a gateway asked to stop a run another gateway owns
    hermes_api_answer    "<owner> <message>"  a client's answer for a run `owner` runs, forwarded by the gateway
                                               that took it (WIRE.md §15.1; the message is cluster/remote_turns.py's)
    hermes_api_answered  "<to> <message>"     the owner's reply to the gateway `to` that forwarded it

Each gateway keeps ONE connection of its own listening on all of them (`PostgresDatabase.listener`) and hands every
notification to its sink (`replicas.py`). When that connection is lost — a database restart, a network cut noticed
by TCP keepalives — the feed reconnects with a growing pause (0.2 s … 5 s) and then tells the sink `reconnected()`:
notifications sent meanwhile are gone, so every follower reads its journal again from where it stands.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import psycopg

from ...core.digits import ascii_int
from ..base import FeedSink, StoreError
from .db import Connection, PostgresDatabase

log = logging.getLogger("hermes_api_plugin")

JOURNAL_CHANNEL = "hermes_api_journal"
STOP_CHANNEL = "hermes_api_stop"
ANSWER_CHANNEL = "hermes_api_answer"
ANSWERED_CHANNEL = "hermes_api_answered"
CHANNELS = (JOURNAL_CHANNEL, STOP_CHANNEL, ANSWER_CHANNEL, ANSWERED_CHANNEL)
RECONNECT_FIRST_S = 0.2
RECONNECT_MAX_S = 5.0


class PostgresFeed:
    """One listening connection per gateway, reconnected whenever it is lost."""

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db
        self._task: asyncio.Task[None] | None = None

    async def start(self, sink: FeedSink) -> None:
        """Listen (StoreError when the database cannot be reached now), then dispatch in the background."""
        conn = await self.db.listener(CHANNELS)
        self._task = asyncio.get_running_loop().create_task(self._run(conn, sink), name="hermes-api feed")

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def request_stop(self, owner: str, turn_id: str) -> None:
        await self._notify(STOP_CHANNEL, f"{owner} {turn_id}")

    async def forward_answer(self, owner: str, message: str) -> None:
        await self._notify(ANSWER_CHANNEL, f"{owner} {message}")

    async def reply_answer(self, to: str, message: str) -> None:
        await self._notify(ANSWERED_CHANNEL, f"{to} {message}")

    async def _notify(self, channel: str, payload: str) -> None:
        async with self.db.connection() as conn:
            await conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))

    async def _run(self, conn: Connection | None, sink: FeedSink) -> None:
        pause = RECONNECT_FIRST_S
        while True:
            if conn is None:
                try:
                    conn = await self.db.listener(CHANNELS)
                except StoreError as exc:
                    log.debug("[API Server] feed: %s; again in %.1f s", exc, pause)
                    await asyncio.sleep(pause)
                    pause = min(pause * 2, RECONNECT_MAX_S)
                    continue
                log.info("[API Server] feed: listening again on PostgreSQL at %s", self.db.where)
                pause = RECONNECT_FIRST_S
                sink.reconnected()
            try:
                async for notify in conn.notifies():
                    _dispatch(sink, notify.channel, notify.payload)
            except psycopg.Error as exc:
                log.warning("[API Server] feed: lost the PostgreSQL listening connection (%s); reconnecting", exc)
            finally:
                with contextlib.suppress(psycopg.Error, OSError):
                    await conn.close()
                conn = None


def _dispatch(sink: FeedSink, channel: str, payload: str) -> None:
    first, _, second = payload.partition(" ")
    if not first or not second:
        return  # not ours: some other client notified on our channel
    try:
        if channel == JOURNAL_CHANNEL and (count := ascii_int(second)) is not None:
            sink.journal_written(first, count)
        elif channel == STOP_CHANNEL:
            sink.stop_requested(first, second)
        elif channel == ANSWER_CHANNEL:
            sink.answer_requested(first, second)
        elif channel == ANSWERED_CHANNEL:
            sink.answer_replied(first, second)
    except Exception:  # a failing sink must not end the gateway's only listener
        log.exception("[API Server] feed: could not handle a notification on %s", channel)
