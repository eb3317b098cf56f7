"""websocket.py on a real aiohttp server on 127.0.0.1: messages handed on one at a time and in order, the one being
handled cancelled when the client closes, one text frame per record, a stream that knows its client left, and the
shutdown close (1001) after the last delivery wrote its end."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from hermes_api_plugin.config.settings import Settings
from hermes_api_plugin.dialects.record import SseRecord
from hermes_api_plugin.http.websocket import OpenSockets, WebSocketStream, serve
from tests.helpers import wait_for_async


async def _serve(aiohttp_client: Any, on_message: Any) -> tuple[TestClient, OpenSockets]:
    sockets = OpenSockets()

    async def handler(request: web.Request) -> web.StreamResponse:
        stream = await WebSocketStream.open(request, Settings(Path(".")), 1_000_000)
        await serve(stream, sockets, lambda text: on_message(stream, text))
        return stream.response

    app = web.Application()
    app.router.add_get("/ws", handler)
    return await aiohttp_client(TestServer(app)), sockets


async def test_messages_are_handled_one_at_a_time_in_order_one_frame_per_record(aiohttp_client: Any) -> None:
    running: list[str] = []

    async def on_message(stream: WebSocketStream, text: str | None) -> None:
        running.append(text or "")
        assert len(running) == 1, running  # never two at once
        await asyncio.sleep(0.05)
        await stream.send([SseRecord("x", {"type": "x", "of": text}), SseRecord("y", {"type": "y", "of": text})])
        running.pop()

    client, sockets = await _serve(aiohttp_client, on_message)
    async with client.ws_connect("/ws") as ws:
        for n in range(3):
            await ws.send_str(str(n))
        await ws.send_bytes(b"binary")
        frames = [json.loads((await ws.receive(timeout=5)).data) for _ in range(8)]
        assert len(sockets) == 1
    assert [(f["type"], f["of"]) for f in frames] == [(kind, of) for of in ("0", "1", "2", None) for kind in ("x", "y")]
    await wait_for_async(lambda: len(sockets) == 0, what="the socket unregistered")


async def test_a_closed_socket_cancels_the_message_being_handled(aiohttp_client: Any) -> None:
    outcome: dict[str, Any] = {}
    started = asyncio.Event()

    async def on_message(stream: WebSocketStream, text: str | None) -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            outcome["cancelled"] = True
            raise

    client, _ = await _serve(aiohttp_client, on_message)
    ws = await client.ws_connect("/ws")
    await ws.send_str("long")
    await asyncio.wait_for(started.wait(), 5)
    await ws.close()
    await wait_for_async(lambda: outcome.get("cancelled"), what="the handler cancelled")


async def test_a_stream_whose_client_left_is_gone_and_writes_nothing(aiohttp_client: Any) -> None:
    seen: dict[str, Any] = {}
    release = asyncio.Event()

    async def on_message(stream: WebSocketStream, text: str | None) -> None:
        seen["stream"] = stream
        await asyncio.shield(release.wait())

    client, _ = await _serve(aiohttp_client, on_message)
    ws = await client.ws_connect("/ws")
    await ws.send_str("x")
    await wait_for_async(lambda: "stream" in seen, what="the message handled")
    stream: WebSocketStream = seen["stream"]
    assert await stream.keepalive() and await stream.event({"type": "error"})
    await ws.close()
    await wait_for_async(lambda: stream.gone, what="the stream gone")
    assert not await stream.send([SseRecord(None, {"type": "late"})]) and not await stream.keepalive()
    release.set()


async def test_close_all_waits_for_the_delivery_then_closes_1001(aiohttp_client: Any) -> None:
    async def on_message(stream: WebSocketStream, text: str | None) -> None:
        await asyncio.sleep(0.2)
        await stream.send([SseRecord(None, {"type": "response.completed"})])

    client, sockets = await _serve(aiohttp_client, on_message)
    ws = await client.ws_connect("/ws")
    await ws.send_str("x")
    await wait_for_async(lambda: len(sockets) == 1, what="the socket registered")
    await asyncio.sleep(0.05)
    closing = asyncio.ensure_future(sockets.close_all())
    last = await ws.receive(timeout=5)
    assert json.loads(last.data)["type"] == "response.completed"
    assert (await ws.receive(timeout=5)).type is aiohttp.WSMsgType.CLOSE and ws.close_code == 1001
    await closing
