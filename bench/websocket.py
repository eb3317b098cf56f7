"""The `websocket` part (WIRE.md §16): short Responses one after another on one WebSocket versus as SSE requests on
one keep-alive HTTP connection, on the scripted runtime.

A sequence is N responses of the script's default turn (`hello` → one text delta, `ok`), each sent once the previous
one ended:
- `ws`: one socket (`GET /v1/responses` upgraded, the API key in the handshake), one `response.create` frame per
  response, its event frames read up to `response.completed`;
- `sse`: `POST /v1/responses` with `stream: true`, N times over one keep-alive connection (a connector that holds
  one), each stream read to its end.
Per response: request sent → its first event (`response.created`) and → its terminal event; per sequence: opening
the connection (TCP, and the upgrade for `ws`) → the last terminal event. Rounds alternate which transport goes
first, so drift hits both alike. Ratios are WebSocket / SSE (below 1: the socket is faster).
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from .common import AUTH, Server, p50_p99

PROMPT = "hello"  # runtime.py: the default turn, "ok"
TERMINALS = ("response.completed", "response.incomplete", "response.failed", "response.cancelled", "error")


@dataclass
class Sequence:
    """One transport's N responses; times in ms."""

    first_event_ms: list[float] = field(default_factory=list)
    response_ms: list[float] = field(default_factory=list)
    total_ms: float = 0.0


def _terminal(event: dict[str, Any]) -> bool:
    if event["type"] in TERMINALS:
        assert event["type"] == "response.completed", json.dumps(event)[:300]
        return True
    return False


async def on_websocket(url: str, count: int) -> Sequence:
    done = Sequence()
    frame = json.dumps({"type": "response.create", "input": PROMPT})
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as session:
        opened = time.perf_counter()
        async with session.ws_connect(url + "/v1/responses", headers=AUTH) as socket:
            for _ in range(count):
                sent = time.perf_counter()
                await socket.send_str(frame)
                first: float | None = None
                while True:
                    message = await socket.receive()
                    now = time.perf_counter()
                    assert message.type == aiohttp.WSMsgType.TEXT, message
                    first = now if first is None else first
                    if _terminal(json.loads(message.data)):
                        break
                done.first_event_ms.append((first - sent) * 1000)
                done.response_ms.append((now - sent) * 1000)
        done.total_ms = (now - opened) * 1000
    return done


async def on_sse(url: str, count: int) -> Sequence:
    done = Sequence()
    body = {"input": PROMPT, "stream": True}
    connector = aiohttp.TCPConnector(limit=1)  # one connection, kept alive between the requests
    connections: list[object] = []

    async def connected(*what: object) -> None:
        connections.append(what)

    trace = aiohttp.TraceConfig()
    trace.on_connection_create_end.append(connected)
    async with aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=None), trace_configs=[trace]
    ) as session:
        opened = time.perf_counter()
        for _ in range(count):
            sent = time.perf_counter()
            first: float | None = None
            ended = False
            async with session.post(url + "/v1/responses", json=body, headers=AUTH) as response:
                assert response.status == 200, await response.read()
                async for line in response.content:
                    if not line.startswith(b"data: {"):
                        continue
                    now = time.perf_counter()
                    first = now if first is None else first
                    ended = ended or _terminal(json.loads(line[6:]))
            assert first is not None and ended
            done.first_event_ms.append((first - sent) * 1000)
            done.response_ms.append((now - sent) * 1000)
        done.total_ms = (now - opened) * 1000
    assert len(connections) == 1, f"{len(connections)} HTTP connections for one sequence: keep-alive was not kept"
    return done


def _figures(sequences: list[Sequence]) -> dict[str, Any]:
    return {
        "first_event": p50_p99([ms for s in sequences for ms in s.first_event_ms]),
        "response": p50_p99([ms for s in sequences for ms in s.response_ms]),
        "sequence_ms": round(statistics.median(s.total_ms for s in sequences), 3),
    }


async def websocket(session: aiohttp.ClientSession, server: Server, size: dict[str, Any]) -> dict[str, Any]:
    """Sequential short responses: one WebSocket versus SSE on one keep-alive connection."""
    count, rounds = size["ws_responses"], size["ws_rounds"]
    await on_websocket(server.url, 1)  # warm-up: the first turn of each transport pays one-off costs
    await on_sse(server.url, 1)
    runs: dict[str, list[Sequence]] = {"ws": [], "sse": []}
    for i in range(rounds):
        order = ("ws", "sse") if i % 2 == 0 else ("sse", "ws")
        for name in order:
            runs[name].append(await (on_websocket if name == "ws" else on_sse)(server.url, count))
    ws, sse = _figures(runs["ws"]), _figures(runs["sse"])
    return {
        "responses": count,
        "rounds": rounds,
        "ws": ws,
        "sse": sse,
        "ratio": {
            "first_event_p50": round(ws["first_event"]["p50_ms"] / sse["first_event"]["p50_ms"], 3),
            "response_p50": round(ws["response"]["p50_ms"] / sse["response"]["p50_ms"], 3),
            "sequence": round(ws["sequence_ms"] / sse["sequence_ms"], 3),
        },
    }


def report(result: dict[str, Any]) -> list[str]:
    lines = []
    for name, label in (("ws", "one WebSocket"), ("sse", "SSE, one keep-alive connection")):
        figures = result[name]
        lines.append(
            f"websocket.{name:4s}         first event p50 {figures['first_event']['p50_ms']} / p99 "
            f"{figures['first_event']['p99_ms']} ms, response p50 {figures['response']['p50_ms']} / p99 "
            f"{figures['response']['p99_ms']} ms, {result['responses']} responses in {figures['sequence_ms']} ms "
            f"(median of {result['rounds']}; {label})"
        )
    ratio = result["ratio"]
    lines.append(
        f"websocket.ratio        first event x{ratio['first_event_p50']}, response x{ratio['response_p50']}, "
        f"sequence x{ratio['sequence']} (WebSocket / SSE)"
    )
    return lines
