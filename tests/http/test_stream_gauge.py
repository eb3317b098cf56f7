"""http/stream_gauge.py: the gauge counts a streaming reply from its head until its handler ends, however it ends; whole
replies are never counted; it sums what a client that does not read leaves in the transport. (On the real app,
through `/health/detailed`: tests/routes/test_health.py; 20 stalled readers: tests/load/test_stalled_readers.py.)"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from hermes_api_plugin.http.stream_gauge import StreamGauge
from tests.helpers import wait_for_async


def gauged_app(gauge: StreamGauge, release: asyncio.Event) -> web.Application:
    async def whole(request: web.Request) -> web.Response:
        return web.json_response({"open": gauge.open})

    async def streaming(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"head\n")
        if size := int(request.query.get("bulk", 0)):
            await response.write(b"x" * size)  # returns once the transport drained below aiohttp's 64 KiB
        await release.wait()
        if request.query.get("fail"):
            raise RuntimeError("the handler failed after its head")
        await response.write_eof()
        return response

    app = web.Application(middlewares=[gauge.middleware])
    app.on_response_prepare.append(gauge.on_prepare)
    app.router.add_get("/whole", whole)
    app.router.add_get("/stream", streaming)
    return app


async def test_a_stream_counts_until_its_handler_returns_or_fails_and_whole_replies_never(aiohttp_client: Any) -> None:
    gauge, release = StreamGauge(), asyncio.Event()
    client = await aiohttp_client(gauged_app(gauge, release))
    assert await (await client.get("/whole")).json() == {"open": 0}
    ok = await client.get("/stream")
    failing = await client.get("/stream?fail=1")
    assert await ok.content.readline() == b"head\n" and await failing.content.readline() == b"head\n"
    assert gauge.open == 2
    assert await (await client.get("/whole")).json() == {"open": 2}, "a whole reply adds nothing"
    release.set()
    await ok.read()
    failing.close()
    await wait_for_async(lambda: gauge.open, until=lambda n: n == 0, what="both streams uncounted")


async def test_a_stream_whose_client_leaves_is_uncounted_when_its_handler_is_cancelled(aiohttp_client: Any) -> None:
    gauge, release = StreamGauge(), asyncio.Event()  # never released: only the client's leaving ends the handler
    client = await aiohttp_client(gauged_app(gauge, release))
    resp = await client.get("/stream")
    assert await resp.content.readline() == b"head\n"
    assert gauge.open == 1
    resp.close()
    await wait_for_async(lambda: gauge.open, until=lambda n: n == 0, what="the cancelled handler uncounted")


async def test_buffered_bytes_are_what_a_client_that_does_not_read_leaves_in_the_transport(
    aiohttp_client: Any,
) -> None:
    gauge, release = StreamGauge(), asyncio.Event()
    client = await aiohttp_client(gauged_app(gauge, release))
    bulk = 32 * 2**20  # more than loopback's socket buffers and the client's read-ahead take without a reader
    resp = await client.get(f"/stream?bulk={bulk}")
    assert await resp.content.readline() == b"head\n"
    stalled = await wait_for_async(gauge.buffered_bytes, until=lambda n: n > 2**20, what="a stalled transport")
    assert stalled < bulk
    taken = 0
    while taken < bulk:
        taken += len(await resp.content.read(2**20))
    assert await wait_for_async(gauge.buffered_bytes, until=lambda n: n == 0, what="the transport drained") == 0
    assert gauge.open == 1, "drained, yet the handler still runs"
    release.set()
    await resp.read()
    await wait_for_async(lambda: gauge.open, until=lambda n: n == 0, what="the stream uncounted")
