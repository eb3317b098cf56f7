"""sse.py against a client that stops reading: what the server holds for it, and how the stream learns it left.

A real aiohttp server on 127.0.0.1 and a raw socket whose receive buffer is shrunk before connecting (so the kernel
holds little of what it does not read).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

import aiohttp
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


async def _served_body(handler: Any) -> bytes:
    """`handler` served on 127.0.0.1 and requested once: the body the client read."""
    app = web.Application()
    app.router.add_get("/", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return await response.read()
    finally:
        await runner.cleanup()


def _recorded_writes(request: web.Request) -> list[bytes]:
    """What the request's transport is handed, one entry per write (each a send on the socket)."""
    transport: Any = request.transport
    writes: list[bytes] = []
    write, writelines = transport.write, transport.writelines

    def recorded_write(data: bytes) -> None:
        writes.append(bytes(data))
        write(data)

    def recorded_writelines(lines: Any) -> None:
        lines = list(lines)
        writes.append(b"".join(lines))
        writelines(lines)

    transport.write, transport.writelines = recorded_write, recorded_writelines
    return writes


async def test_the_head_leaves_with_the_first_records_and_the_last_ones_with_done_and_the_end_of_the_body() -> None:
    """Issue 25: on loopback every write is a send that also runs the client's side of TCP, the largest part of a
    short stream's cost. A stream of three records is three writes: the head with the first record, the second, and
    the last (`send(last=True)`: the terminal record's batch) with `[DONE]` and the chunked body's end — not six (the
    head alone, `[DONE]` alone, the end alone)."""
    state: dict[str, list[bytes]] = {}

    async def handler(request: web.Request) -> web.StreamResponse:
        writes = state["writes"] = _recorded_writes(request)
        stream = await SseStream.open(request, {}, [SseRecord(None, {"n": 1})])
        assert len(writes) == 1  # the head is out before the caller starts any work
        assert await stream.send([SseRecord(None, {"n": 2})]) and len(writes) == 2  # written at once
        assert await stream.send([SseRecord(None, {"n": 3})], last=True) and len(writes) == 2  # held for the end
        await stream.done()
        return stream.response

    body = await _served_body(handler)
    assert body == b'data: {"n":1}\n\ndata: {"n":2}\n\ndata: {"n":3}\n\ndata: [DONE]\n\n'
    head, second, end = state["writes"]
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and head.endswith(b'data: {"n":1}\n\n\r\n')
    assert second.endswith(b'data: {"n":2}\n\n\r\n')
    assert end.endswith(b'data: {"n":3}\n\ndata: [DONE]\n\n\r\n0\r\n\r\n')


async def test_last_records_beyond_a_piece_are_written_in_pieces_not_held() -> None:
    """A last batch bigger than a piece (what a stalled client's stream gained) is not held whole for the end: its
    pieces go out as `send` makes them, each awaiting the drain; only the rest below a piece waits for the end."""
    state: dict[str, list[bytes]] = {}
    records = [SseRecord(None, {"text": "x" * 1000, "n": n}) for n in range(100)]

    async def handler(request: web.Request) -> web.StreamResponse:
        writes = state["writes"] = _recorded_writes(request)
        stream = await SseStream.open(request, {}, [SseRecord(None, {"n": 0})])
        assert await stream.send(records, last=True)
        state["before_end"] = list(writes)
        await stream.close()
        return stream.response

    body = await _served_body(handler)
    assert body.count(b"data: ") == 101
    _head, piece = state["before_end"]
    assert len(piece) >= WRITE_BYTES
    assert state["writes"][-1].endswith(b"\r\n0\r\n\r\n") and len(state["writes"]) == 3


async def test_a_stream_without_first_records_still_writes_its_head_when_it_opens() -> None:
    """The head goes out before any agent work even with nothing to go with it: a turn never runs behind a head
    that was not written."""
    state: dict[str, Any] = {}

    async def handler(request: web.Request) -> web.StreamResponse:
        writes = _recorded_writes(request)
        stream = await SseStream.open(request, {})
        state["at_open"] = list(writes)
        await stream.close()
        return stream.response

    assert await _served_body(handler) == b""
    (head,) = state["at_open"]
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and head.endswith(b"\r\n\r\n")


async def test_opening_a_stream_whose_client_is_gone_raises_before_any_work() -> None:
    """The head cannot be written: `open` raises ConnectionResetError (the delivery answers 499 and cancels the turn
    it held), as `prepare` did when it wrote the head itself."""
    state: dict[str, Any] = {}

    async def handler(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.close()
        try:
            await SseStream.open(request, {}, [SseRecord(None, {"n": 1})])
        except ConnectionResetError as exc:
            state["raised"] = exc
        return web.Response()

    with contextlib.suppress(aiohttp.ClientError):  # the client sees its connection closed
        await _served_body(handler)
    await wait_for_async(lambda: "raised" in state, what="the handler to run")
    assert isinstance(state["raised"], ConnectionResetError)
