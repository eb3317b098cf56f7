"""sse.py against a client that stops reading: what the server holds for it, and how the stream learns it left.

A real aiohttp server on 127.0.0.1 and a raw socket whose receive buffer is shrunk before connecting (so the kernel
holds little of what it does not read).
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from aiohttp import web

from hermes_api_plugin.dialects.record import SseRecord
from hermes_api_plugin.http.sse import WRITE_BYTES, SseStream
from tests.helpers import wait_for_async
from tests.load.support import close_abruptly

HIGH_WATER = 65_536  # asyncio's default transport high-water mark, which aiohttp keeps


async def test_a_big_batch_to_a_stalled_client_is_held_in_pieces_not_whole() -> None:
    """One batch of 4 MiB of records (what the journal gained while the client stalled) to a client that reads
    nothing: the transport buffers at most the high-water mark plus one piece, and `send` waits on the drain
    instead of queueing the rest. Written whole (one write per batch, before this test), the transport kept all of
    the batch the kernel did not take — 1.4 MB measured here — for as long as the client stayed. When the client
    goes, `send` reports the stream gone."""
    records = [SseRecord(None, {"text": "x" * 1000, "n": n}) for n in range(4 * 1024)]
    state: dict[str, Any] = {}
    done = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        stream = await SseStream.open(request, {})
        state["transport"] = request.transport
        state["alive"] = await stream.send(records)
        state["gone"] = stream.gone
        done.set()
        return stream.response

    app = web.Application()
    app.router.add_get("/", handler)
    # Without handler cancellation (the gateways cancel the handler too), so that `send` itself sees the loss.
    runner = web.AppRunner(app, handler_cancellation=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    try:
        loop = asyncio.get_running_loop()
        await loop.sock_connect(sock, ("127.0.0.1", port))
        await loop.sock_sendall(sock, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        # The writer is parked on the drain once the transport holds more than its high-water mark.
        held = await wait_for_async(
            lambda: state["transport"].get_write_buffer_size() if "transport" in state else 0,
            until=lambda size: size > HIGH_WATER,
            what="the transport filling up",
        )
        assert not done.is_set(), "send finished although the client reads nothing"
        assert held <= HIGH_WATER + WRITE_BYTES + 2048, held
        close_abruptly(sock, reset=True)
        await asyncio.wait_for(done.wait(), 10)
        assert state["alive"] is False and state["gone"] is True
    finally:
        sock.close()
        await runner.cleanup()
