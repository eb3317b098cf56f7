"""The live pump writes in place (http/delivery.py `InPlace`, issue 25): an event appended while the pump waits is
rendered and written before the append returns; a client that stops reading, leaves, or a renderer that pauses or
fails hands the rest back to the pump, and nothing is lost or reordered.

A real aiohttp server on 127.0.0.1 runs `pump` over a journal the test appends to; clients are real sockets.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import pytest
from aiohttp import web

from hermes_api_plugin.core.events import TextDelta, TurnEvent, TurnFinished, TurnStatus
from hermes_api_plugin.dialects.record import SseRecord
from hermes_api_plugin.http.delivery import pump
from hermes_api_plugin.http.sse import SseStream
from hermes_api_plugin.turns import Journal
from tests.helpers import wait_for_async
from tests.load.support import close_abruptly


class CountingStream(SseStream):
    """An SseStream that counts its sends (to see where they happen)."""

    sends = 0

    async def send(self, records: Iterable[SseRecord], *, last: bool = False) -> bool:
        self.sends += 1
        return await super().send(records, last=last)


def render(batch: list[TurnEvent]) -> list[SseRecord]:
    return [SseRecord(None, {"t": e.text}) for e in batch if isinstance(e, TextDelta)]


class Served:
    """One SSE endpoint pumping `journal`; `outcome` is what pump returned (or raised)."""

    def __init__(self, journal: Journal, rendering: Callable[[list[TurnEvent]], list[SseRecord]], paused: Any) -> None:
        self.journal = journal
        self.rendering = rendering
        self.paused = paused
        self.stream: CountingStream | None = None
        self.outcome: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    async def handler(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        self.stream = CountingStream(response)
        try:
            alive = await pump(self.stream, self.journal, self.rendering, 30.0, paused=self.paused)
            if alive:
                await self.stream.close()  # as every delivery ends its stream (the last batch may wait for it)
            self.outcome.set_result(alive)
        except Exception as exc:
            self.outcome.set_exception(exc)
        return response


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., Any]]:
    runners: list[web.AppRunner] = []

    async def start(
        journal: Journal, rendering: Any = render, paused: Any = lambda: False
    ) -> tuple[Served, socket.socket]:
        served = Served(journal, rendering, paused)
        app = web.Application()
        app.router.add_get("/", served.handler)
        runner = web.AppRunner(app, handler_cancellation=False)
        await runner.setup()
        runners.append(runner)
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        loop = asyncio.get_running_loop()
        await loop.sock_connect(sock, ("127.0.0.1", runner.addresses[0][1]))
        await loop.sock_sendall(sock, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        await wait_for_async(lambda: served.stream is not None and bool(journal._offers), what="the pump parked")
        return served, sock

    yield start
    for runner in runners:
        await runner.cleanup()


async def _read_until(sock: socket.socket, marker: bytes) -> bytes:
    loop = asyncio.get_running_loop()
    data = b""
    while marker not in data:
        piece = await asyncio.wait_for(loop.sock_recv(sock, 65536), 10)
        assert piece, f"the server closed before {marker!r}"
        data += piece
    return data


async def test_an_event_appended_while_the_pump_waits_is_written_before_the_append_returns(serve: Any) -> None:
    journal = Journal()
    served, sock = await serve(journal)
    stream = served.stream
    before = stream.sends
    journal.extend([TextDelta("now")])
    assert stream.sends == before + 1  # written in the append itself: no task switch, no loop iteration
    journal.extend([TextDelta("next")])
    assert stream.sends == before + 2
    journal.extend([TurnFinished(TurnStatus.COMPLETED)])
    assert await asyncio.wait_for(served.outcome, 5) is True
    body = await _read_until(sock, b'{"t":"next"}')
    sock.close()
    assert body.index(b'{"t":"now"}') < body.index(b'{"t":"next"}')


async def test_a_client_that_stops_reading_gets_every_event_in_order_once_it_reads(serve: Any) -> None:
    """The transport fills up: a write in place waits for the drain in a task, the pump takes over, what the journal
    gains meanwhile waits in the journal — and the client that reads again gets all of it, in order."""
    journal = Journal()
    served, sock = await serve(journal)
    count = 3000
    for n in range(count):
        journal.extend([TextDelta(f"{n:05d}" + "x" * 1000)])
        if n % 100 == 0:
            await asyncio.sleep(0)
    journal.extend([TurnFinished(TurnStatus.COMPLETED)])
    body = await _read_until(sock, f'"t":"{count - 1:05d}'.encode())
    assert await asyncio.wait_for(served.outcome, 10) is True
    sock.close()
    seen = [int(body[i + 6 : i + 11]) for i in range(len(body)) if body.startswith(b'{"t":"', i)]
    assert seen == list(range(count))


async def test_a_gone_client_ends_the_pump_and_the_appender_never_sees_it(serve: Any) -> None:
    journal = Journal()
    served, sock = await serve(journal)
    close_abruptly(sock, reset=True)
    await asyncio.sleep(0.05)
    for n in range(50):  # the appender (the agent's callback) goes on as if nothing happened
        journal.extend([TextDelta(str(n))])
        await asyncio.sleep(0)
        if served.outcome.done():
            break
    assert await asyncio.wait_for(served.outcome, 5) is False


async def test_a_renderer_that_pauses_hands_the_end_to_the_pump(serve: Any) -> None:
    journal = Journal()
    state = {"paused": False}

    def pausing(batch: list[TurnEvent]) -> list[SseRecord]:
        if any(isinstance(e, TextDelta) and e.text == "ask" for e in batch):
            state["paused"] = True
        return render(batch)

    served, sock = await serve(journal, pausing, lambda: state["paused"])
    journal.extend([TextDelta("hello")])
    journal.extend([TextDelta("ask")])
    assert await asyncio.wait_for(served.outcome, 5) is True
    journal.extend([TextDelta("after the pause")])  # nobody takes it: the delivery ended
    assert journal._offers == []
    body = await _read_until(sock, b'{"t":"ask"}')
    sock.close()
    assert b"after the pause" not in body


async def test_a_render_error_is_raised_in_the_pump_not_into_the_appender(serve: Any) -> None:
    journal = Journal()

    def failing(batch: list[TurnEvent]) -> list[SseRecord]:
        if any(isinstance(e, TextDelta) and e.text == "bad" for e in batch):
            raise ValueError("renderer bug")
        return render(batch)

    served, sock = await serve(journal, failing)
    journal.extend([TextDelta("bad")])  # does not raise here
    with pytest.raises(ValueError, match="renderer bug"):
        await asyncio.wait_for(served.outcome, 5)
    sock.close()
