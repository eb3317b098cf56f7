"""The feed of the PostgreSQL store: LISTEN/NOTIFY between gateways sharing one database (issue 15).

Five channels:

    hermes_api_journal   "<turn id> <end>"    sent by `append_journals` in the transaction that writes the rows,
                                               so a follower woken by it finds them committed (`end` = the
                                               highest sequence number written + 1)
    hermes_api_stop      "<owner> <turn id>"  sent by a gateway asked to stop a run another gateway owns
    hermes_api_follow    "<owner> <turn id>"  sent by a gateway that starts following a turn another gateway owns:
                                               the owner then commits that turn's rows as they come
    hermes_api_answer    "<owner> <message>"  a client's answer for a run `owner` runs, forwarded by the gateway
                                               that took it (WIRE.md §15.1; the message is cluster/remote_turns.py's)
    hermes_api_answered  "<to> <message>"     the owner's reply to the gateway `to` that forwarded it

An answer or reply longer than a NOTIFY payload may be (PostgreSQL refuses payloads of 8000 bytes or more) is stored
in `feed_messages` and its notification carries `#<row id>` instead of the message, sent in the same transaction, so
the row is committed when the notification arrives. Only the addressee (the sink's `address`) takes the row —
`DELETE … RETURNING`, so it is read once — and hands its message to the sink as if it had come inline. Rows whose
addressee never took them (it died) are dropped by the next long message once STALE_S old.

Each gateway keeps ONE connection of its own listening on all of them (`PostgresDatabase.listener`) and hands every
notification to its sink (`replicas.py`). When that connection is lost — a database restart, a network cut noticed
by TCP keepalives — the feed reconnects with a growing pause (0.2 s … 5 s) and then tells the sink `reconnected()`:
notifications sent meanwhile are gone, so every follower reads its journal again from where it stands.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import psycopg

from ...core.digits import ascii_int
from ..base import FeedSink, StoreError
from .db import Connection, PostgresDatabase

log = logging.getLogger("hermes_api_plugin")

JOURNAL_CHANNEL = "hermes_api_journal"
STOP_CHANNEL = "hermes_api_stop"
FOLLOW_CHANNEL = "hermes_api_follow"
ANSWER_CHANNEL = "hermes_api_answer"
ANSWERED_CHANNEL = "hermes_api_answered"
CHANNELS = (JOURNAL_CHANNEL, STOP_CHANNEL, FOLLOW_CHANNEL, ANSWER_CHANNEL, ANSWERED_CHANNEL)
INLINE_MAX = 7000  # bytes of a message sent in the notification itself (PostgreSQL's payloads stay under 8000)
REFERENCE = "#"  # a payload's message part that starts with it names a `feed_messages` row (messages are JSON)
STALE_S = 300.0  # a stored message nobody took for this long is dropped: its addressee is gone
RECONNECT_FIRST_S = 0.2
RECONNECT_MAX_S = 5.0


_NOTIFY = "SELECT pg_notify(%s, %s)"
_DROP_STALE = "DELETE FROM feed_messages WHERE created_at < EXTRACT(EPOCH FROM clock_timestamp()) - %s"
_STORE_MESSAGE = "INSERT INTO feed_messages (body) VALUES (%s) RETURNING id"
_TAKE_MESSAGE = "DELETE FROM feed_messages WHERE id = %s RETURNING body"


class PostgresFeed:
    """One listening connection per gateway, reconnected whenever it is lost."""

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db
        self._task: asyncio.Task[None] | None = None
        self._takes: set[asyncio.Task[None]] = set()  # stored messages being taken for this gateway

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
        takes = list(self._takes)
        for take in takes:
            take.cancel()
        await asyncio.gather(*takes, return_exceptions=True)

    async def request_stop(self, owner: str, turn_id: str) -> None:
        await self._notify(STOP_CHANNEL, f"{owner} {turn_id}")

    async def announce_follow(self, owner: str, turn_id: str) -> None:
        await self._notify(FOLLOW_CHANNEL, f"{owner} {turn_id}")

    async def forward_answer(self, owner: str, message: str) -> None:
        await self._send(ANSWER_CHANNEL, owner, message)

    async def reply_answer(self, to: str, message: str) -> None:
        await self._send(ANSWERED_CHANNEL, to, message)

    async def _send(self, channel: str, address: str, message: str) -> None:
        """Notify `address` of `message`: inline when it fits a payload, else stored and named by its row id."""
        if len(message.encode()) <= INLINE_MAX and not message.startswith(REFERENCE):
            await self._notify(channel, f"{address} {message}")
            return
        async with self.db.transaction() as conn:
            await conn.execute(_DROP_STALE, (STALE_S,))
            cursor = await conn.execute(_STORE_MESSAGE, (message,))
            row = await cursor.fetchone()
            assert row is not None
            await conn.execute(_NOTIFY, (channel, f"{address} {REFERENCE}{row['id']}"))

    async def _notify(self, channel: str, payload: str) -> None:
        async with self.db.connection() as conn:
            await conn.execute(_NOTIFY, (channel, payload))

    async def _take(self, row_id: int, deliver: Callable[[str], None]) -> None:
        """Take the stored message `row_id` addressed to this gateway and deliver it as if it had come inline."""
        try:
            async with self.db.connection() as conn:
                cursor = await conn.execute(_TAKE_MESSAGE, (row_id,))
                row = await cursor.fetchone()
        except StoreError as exc:
            log.warning("[API Server] feed: could not read a long message sent to this gateway: %s", exc)
            return
        if row is None:
            log.warning("[API Server] feed: a long message sent to this gateway was gone before it was read")
            return
        try:
            deliver(row["body"])
        except Exception:
            log.exception("[API Server] feed: could not handle a long message")

    def _dispatch(self, sink: FeedSink, channel: str, payload: str) -> None:
        first, _, second = payload.partition(" ")
        if not first or not second:
            return  # not ours: some other client notified on our channel
        try:
            if channel == JOURNAL_CHANNEL and (count := ascii_int(second)) is not None:
                sink.journal_written(first, count)
            elif channel == STOP_CHANNEL:
                sink.stop_requested(first, second)
            elif channel == FOLLOW_CHANNEL:
                sink.follow_requested(first, second)
            elif channel in (ANSWER_CHANNEL, ANSWERED_CHANNEL):
                handle = sink.answer_requested if channel == ANSWER_CHANNEL else sink.answer_replied
                if not second.startswith(REFERENCE):
                    handle(first, second)
                elif first == sink.address and (row_id := ascii_int(second[1:])) is not None:
                    take = asyncio.get_running_loop().create_task(
                        self._take(row_id, lambda message: handle(first, message)), name="hermes-api feed take"
                    )
                    self._takes.add(take)
                    take.add_done_callback(self._takes.discard)
        except Exception:  # a failing sink must not end the gateway's only listener
            log.exception("[API Server] feed: could not handle a notification on %s", channel)

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
                    self._dispatch(sink, notify.channel, notify.payload)
            except psycopg.Error as exc:
                log.warning("[API Server] feed: lost the PostgreSQL listening connection (%s); reconnecting", exc)
            finally:
                with contextlib.suppress(psycopg.Error, OSError):
                    await conn.close()
                conn = None
