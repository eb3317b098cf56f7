"""The only code that reads and writes WebSocket frames (WIRE.md §16): the handshake, the messages handed on one at a
time, one JSON text frame per record, the error events, pings while a delivery is idle, the close — and the app's
open sockets, closed at shutdown.

`WebSocketStream` is the event stream a delivery writes into (http/delivery.py), as `SseStream` is over HTTP: the
same renderer's records, framed one per text frame (the record's `data`; the SSE `event:` name is its `type` field
already). A failed write marks the stream gone and every later write is a no-op. The end of one delivery writes
nothing: the socket stays open for the next `response.create`; only `shut` closes it.

`serve` reads the client's messages as they come and hands them to the route's handler one at a time, in order: a
message that arrives while another is handled waits (at most MAX_WAITING; past that the socket is not read until one
is done, so a client cannot queue without bound). When the client closes the socket, or the connection is lost, the
message being handled is cancelled: its delivery ends as a gone client's does (WIRE.md §5.5).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web

from ..config.settings import Settings
from ..core.errors import ApiError
from ..dialects.record import SseRecord
from .sse import dumps

MIN_HEARTBEAT_S = 10.0  # pings at least this far apart: a client must answer within half of it
SHUTDOWN_GRACE_S = 5.0  # at shutdown, how long a socket's last delivery may take to write its end before the close
MAX_WAITING = 16  # messages that wait while one is handled; past that the socket is not read

Handle = Callable[[str | None], Awaitable[None]]  # one message's text (None: a binary frame)


def upgrade_required() -> ApiError:
    return ApiError(
        426,
        "GET /v1/responses is the WebSocket mode of the Responses API: send Upgrade: websocket (or POST a create body)",
        type="invalid_request_error",
        code="upgrade_required",
        headers={"Upgrade": "websocket", "Connection": "Upgrade"},
    )


class WebSocketStream:
    """One open WebSocket connection, as the event stream of its deliveries."""

    def __init__(self, response: web.WebSocketResponse) -> None:
        self.response = response
        self.gone = False

    @classmethod
    async def open(cls, request: web.Request, settings: Settings, max_message: int) -> WebSocketStream:
        """The handshake (101), or 426 for a request that asks for no upgrade. Pings every keepalive interval (at
        least MIN_HEARTBEAT_S): a client that does not answer is gone. A message may be `max_message` bytes (a
        request body's limit); frames are never compressed (a deflate context per idle socket costs more memory
        than its bandwidth saves here)."""
        heartbeat = max(settings.sse_keepalive_seconds, MIN_HEARTBEAT_S)
        response = web.WebSocketResponse(heartbeat=heartbeat, max_msg_size=max_message, compress=False)
        if not response.can_prepare(request).ok:
            raise upgrade_required()
        await response.prepare(request)
        return cls(response)

    async def _write(self, text: str) -> bool:
        if self.gone:
            return False
        try:
            await self.response.send_str(text)
        except (ConnectionError, RuntimeError):
            # ClientConnectionResetError from a closing transport; RuntimeError once the socket is closed.
            self.gone = True
            return False
        return True

    async def send(self, records: Iterable[SseRecord], *, last: bool = False) -> bool:
        """One text frame per record (aiohttp awaits the transport's drain past its writer limit); `last` changes
        nothing: a frame is one write either way."""
        for record in records:
            if not await self._write(dumps(record.data)):
                return False
        return not self.gone

    async def event(self, payload: Mapping[str, Any]) -> bool:
        """One event that is not a record of a delivery (the error event)."""
        return await self._write(dumps(payload))

    async def keepalive(self) -> bool:
        """A ping while the delivery has nothing to send: a gone client shows on the write."""
        if self.gone:
            return False
        try:
            await self.response.ping()
        except (ConnectionError, RuntimeError):
            self.gone = True
        return not self.gone

    async def done(self) -> None:
        """The end of one response: nothing is written (no `[DONE]`: the terminal event ends it)."""

    async def close(self) -> None:
        """The end of one delivery: the socket stays open for the next response."""

    async def shut(self, code: int = WSCloseCode.OK, message: bytes = b"") -> None:
        """Close the socket (a no-op once closed)."""
        self.gone = True
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.response.close(code=code, message=message)


class OpenSockets:
    """The app's open WebSocket connections, so that a shutdown ends each once its last delivery wrote its end: after
    the drain has settled every turn (its stream's terminal event), each socket closes with 1001 going away."""

    def __init__(self) -> None:
        self._open: dict[WebSocketStream, asyncio.Task[Any] | None] = {}
        self.closing = False

    def __len__(self) -> int:
        return len(self._open)

    def add(self, stream: WebSocketStream) -> None:
        self._open[stream] = None

    def discard(self, stream: WebSocketStream) -> None:
        self._open.pop(stream, None)

    def working(self, stream: WebSocketStream, task: asyncio.Task[Any] | None) -> None:
        """The task that handles the socket's messages now (None: idle)."""
        if stream in self._open:
            self._open[stream] = task

    async def close_all(self, grace_s: float = SHUTDOWN_GRACE_S) -> None:
        self.closing = True
        busy = [task for task in self._open.values() if task is not None]
        if busy:
            await asyncio.wait(busy, timeout=grace_s)
        await asyncio.gather(
            *(stream.shut(WSCloseCode.GOING_AWAY, b"gateway shutting down") for stream in list(self._open))
        )


async def serve(stream: WebSocketStream, sockets: OpenSockets, handle: Handle) -> None:
    """Hand the socket's messages to `handle` one at a time until the client closes it (then the one being handled is
    cancelled), registered with the app's open sockets meanwhile."""
    waiting: asyncio.Queue[str | None] = asyncio.Queue(MAX_WAITING)
    worker: asyncio.Task[None] | None = None

    async def work() -> None:
        nonlocal worker
        try:
            while not waiting.empty() and not stream.gone:
                await handle(waiting.get_nowait())
        finally:
            worker = None  # no await between the last emptiness check and this: nothing is left unhandled
            sockets.working(stream, None)

    sockets.add(stream)
    try:
        async for message in stream.response:
            if message.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                break  # an error of the connection: as a close
            await waiting.put(message.data if message.type is WSMsgType.TEXT else None)
            if worker is None:
                worker = asyncio.ensure_future(work())
                sockets.working(stream, worker)
    finally:
        stream.gone = True
        if worker is not None:
            worker.cancel()
            await asyncio.gather(worker, return_exceptions=True)
        sockets.discard(stream)
