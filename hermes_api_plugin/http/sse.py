"""The only code that writes SSE bytes: head, record framing, keepalive comments, `[DONE]`, disconnects.

Records are compact one-line JSON with raw UTF-8. A failed write marks the stream gone and every later
write becomes a no-op, so handlers stop cleanly instead of raising into the turn.
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


class SseStream:
    """An open event stream on one request."""

    def __init__(self, response: web.StreamResponse) -> None:
        self.response = response
        self.gone = False

    @classmethod
    async def open(cls, request: web.Request, headers: Mapping[str, str], first: Iterable[SseRecord] = ()) -> SseStream:
        """Write the head (and the first records in the same flush) before any agent work."""
        response = web.StreamResponse(status=200, headers={**SSE_HEADERS, **headers})
        response.enable_chunked_encoding()
        await response.prepare(request)
        stream = cls(response)
        await stream.send(first)
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

    async def send(self, records: Iterable[SseRecord]) -> bool:
        """Write records in pieces of about WRITE_BYTES, each awaiting the transport's drain.

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
        return await self._write(b"".join(pending)) if pending else not self.gone

    async def keepalive(self) -> bool:
        return await self._write(KEEPALIVE)

    async def done(self) -> None:
        """`data: [DONE]` (chat streams) and close: nothing is written after it."""
        if await self._write(DONE):
            await self.close()

    async def close(self) -> None:
        if self.gone:
            return
        try:
            await self.response.write_eof()
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
