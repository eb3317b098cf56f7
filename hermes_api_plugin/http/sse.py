"""The only code that writes SSE bytes: head, record framing, keepalive comments, `[DONE]`, disconnects.

Records are compact one-line JSON with raw UTF-8. A failed write marks the stream gone and every later
write becomes a no-op, so handlers stop cleanly instead of raising into the turn.

Each write is a send on the socket, and on loopback a send also runs the receiving side of TCP: tens of
microseconds, the largest part of a short stream's cost (issue 25, eleventh session). So the head leaves with the
stream's first records, and the delivery's last records with `[DONE]` and the end of the chunked body: a one-delta
chat stream is three writes (the raw aiohttp writer's four), not six.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from aiohttp import web

from ..dialects.record import SseRecord, wire_json

KEEPALIVE = b": keepalive\n\n"
WRITE_BYTES = 65_536  # a piece of a batch: aiohttp awaits the transport's drain once 64 KiB went out
DONE = b"data: [DONE]\n\n"
SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}


dumps = wire_json


def encode(record: SseRecord) -> bytes:
    """One SSE message: optional `event:` / `id:` lines, exactly one `data:` line, blank line."""
    head = ""
    if record.event is not None:
        head = f"event: {record.event}\n"
    if record.id is not None:
        head += f"id: {record.id}\n"
    return f"{head}data: {dumps(record.data)}\n\n".encode()


class _HeadWithFirstWrite(web.StreamResponse):
    """A stream response whose head waits in aiohttp's buffer for the first body write (as a whole `web.Response`'s
    does) instead of going out alone at `prepare`. The one aiohttp-private name this package sets: an aiohttp without
    the buffer ignores it and writes the head at `prepare`, as before."""

    _send_headers_immediately = False


class SseStream:
    """An open event stream on one request."""

    def __init__(self, response: web.StreamResponse) -> None:
        self.response = response
        self.gone = False
        self._last = b""  # the delivery's last records, held for the end of the body (`send(last=True)`)

    @classmethod
    async def open(cls, request: web.Request, headers: Mapping[str, str], first: Iterable[SseRecord] = ()) -> SseStream:
        """Write the head, and the first records in the same write, before any agent work; ConnectionResetError
        when the client is already gone (the caller answers 499 and the turn never runs)."""
        response = _HeadWithFirstWrite(status=200, headers={**SSE_HEADERS, **headers})
        response.enable_chunked_encoding()
        await response.prepare(request)
        stream = cls(response)
        records = list(first)
        if not await (stream.send(records) if records else stream._write(b"")):  # b"": the head alone
            raise ConnectionResetError("the client left before the head was written")
        return stream

    async def _write(self, data: bytes) -> bool:
        if self.gone:
            return False
        try:
            await self.response.write(data)
        except (ConnectionError, RuntimeError):
            # ConnectionResetError from a closed transport; RuntimeError when the payload writer is gone.
            self.gone = True
            return False
        return True

    async def send(self, records: Iterable[SseRecord], *, last: bool = False) -> bool:
        """Write records in pieces of about WRITE_BYTES, each awaiting the transport's drain; `last`: they end the
        delivery, so what is left below a piece waits for `done`/`close` and leaves in their one write.

        A batch is everything the journal gained since the last write, so after a client stalled it can be the
        rest of a long turn; written whole, it would sit in the transport's buffer in full, and the encoded copy
        with it, for as long as the client does not read. In pieces, a stalled client holds at most about the
        high-water mark plus one piece: the turn is not held back (its events wait in the journal, which every
        view of the turn shares), and an ordinary batch is still one write.
        """
        pending: list[bytes] = []
        size = 0
        for record in records:
            data = encode(record)
            pending.append(data)
            size += len(data)
            if size >= WRITE_BYTES:
                if not await self._write(b"".join(pending)):
                    return False
                pending, size = [], 0
        if last and not self.gone:
            self._last = b"".join(pending)
            return True
        return await self._write(b"".join(pending)) if pending else not self.gone

    async def keepalive(self) -> bool:
        return await self._write(KEEPALIVE)

    async def done(self) -> None:
        """`data: [DONE]` (chat streams) and the end of the body, in one write with the held last records: nothing is
        written after it."""
        await self.close(DONE)

    async def close(self, marker: bytes = b"") -> None:
        """The end of the body, after the held last records and `marker`, in one write."""
        if self.gone:
            return
        try:
            await self.response.write_eof(self._last + marker)
        except (ConnectionError, RuntimeError):
            pass
        self.gone = True


class EarlyJson:
    """A non-streaming reply whose head is written at admission (WIRE.md §1.11).

    Newlines pad the body while the turn runs (JSON parsers skip them) and reveal a gone client.
    """

    PAD = b"\n"

    def __init__(self, response: web.StreamResponse) -> None:
        self.response = response
        self.gone = False

    @classmethod
    async def open(cls, request: web.Request, headers: Mapping[str, str]) -> EarlyJson:
        response = web.StreamResponse(
            status=200, headers={**headers, "Content-Type": "application/json; charset=utf-8"}
        )
        response.enable_chunked_encoding()
        await response.prepare(request)
        return cls(response)

    async def pad(self) -> bool:
        if self.gone:
            return False
        try:
            await self.response.write(self.PAD)
        except (ConnectionError, RuntimeError):
            self.gone = True
        return not self.gone

    async def finish(self, body: Mapping[str, Any]) -> None:
        if self.gone:
            return
        try:
            await self.response.write(dumps(body).encode())
            await self.response.write_eof()
        except (ConnectionError, RuntimeError):
            self.gone = True
