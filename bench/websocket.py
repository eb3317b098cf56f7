"""Part `websocket`: N sequential short Responses on one WebSocket connection (WIRE.md §16) against the same N as SSE
requests on one keep-alive HTTP connection, same server, same run.

Per transport and round: the connection opened (the handshake, or the first request's connect), then N responses
one after another, each the script's default turn (`ok`), `store: false`; a response is sent → first event received
(`response.created`), and sent → its terminal event. Reported: first-event p50/p99 over every response, the
round's total (connect to the last terminal event) median over rounds, and socket / SSE ratios. One warm-up round
of each is not counted.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

import aiohttp

from .common import AUTH, p50_p99

BODY = {"model": "hermes-agent", "input": "hello", "store": False}


async def _over_socket(url: str, turns: int) -> tuple[list[float], float]:
    firsts: list[float] = []
    started = time.perf_counter()
    async with aiohttp.ClientSession() as session, session.ws_connect(url + "/v1/responses", headers=AUTH) as ws:
        for _ in range(turns):
            sent = time.perf_counter()
            await ws.send_str(json.dumps({"type": "response.create", **BODY}))
            first = True
            while True:
                frame = await ws.receive()
                assert frame.type is aiohttp.WSMsgType.TEXT, frame
                if first:
                    firsts.append((time.perf_counter() - sent) * 1000)
                    first = False
                kind = json.loads(frame.data)["type"]
                assert kind != "error", frame.data
                if kind in ("response.completed", "response.failed", "response.incomplete"):
                    break
    return firsts, (time.perf_counter() - started) * 1000


async def _over_sse(url: str, turns: int) -> tuple[list[float], float]:
    firsts: list[float] = []
    started = time.perf_counter()
    connector = aiohttp.TCPConnector(limit=1)  # one keep-alive connection for every request
    async with aiohttp.ClientSession(connector=connector) as session:
        for _ in range(turns):
            sent = time.perf_counter()
            async with session.post(url + "/v1/responses", json={**BODY, "stream": True}, headers=AUTH) as response:
                assert response.status == 200
                body = await response.content.readany()
                firsts.append((time.perf_counter() - sent) * 1000)
                while not response.content.at_eof():
                    body += await response.content.readany()
            assert b"response.completed" in body, body[-300:]
    return firsts, (time.perf_counter() - started) * 1000


async def websocket(session: aiohttp.ClientSession, server: Any, size: dict[str, Any]) -> dict[str, Any]:
    turns, rounds = size["socket_turns"], size["socket_rounds"]
    firsts: dict[str, list[float]] = {"socket": [], "sse": []}
    totals: dict[str, list[float]] = {"socket": [], "sse": []}
    for round_ in range(rounds + 1):
        for name, run in (("socket", _over_socket), ("sse", _over_sse)):
            first, total = await run(server.url, turns)
            if round_:  # the first round warms both paths up
                firsts[name] += first
                totals[name].append(total)
    out: dict[str, Any] = {"turns": turns, "rounds": rounds}
    for name in ("socket", "sse"):
        out[name] = {"first_event": p50_p99(firsts[name]), "total_ms": round(statistics.median(totals[name]), 3)}
    out["ratio"] = {
        "first_event_p50": round(out["socket"]["first_event"]["p50_ms"] / out["sse"]["first_event"]["p50_ms"], 3),
        "total": round(out["socket"]["total_ms"] / out["sse"]["total_ms"], 3),
    }
    return out


def report(result: dict[str, Any]) -> list[str]:
    socket, sse, ratio = result["socket"]["first_event"], result["sse"]["first_event"], result["ratio"]
    return [
        f"websocket.first_event  socket p50 {socket['p50_ms']} / p99 {socket['p99_ms']} ms,"
        f" SSE p50 {sse['p50_ms']} / p99 {sse['p99_ms']} ms"
        f" (ratio {ratio['first_event_p50']})",
        f"websocket.total        {result['turns']} responses: socket {result['socket']['total_ms']} ms,"
        f" SSE {result['sse']['total_ms']} ms"
        f" on one keep-alive connection (ratio {ratio['total']})",
    ]
