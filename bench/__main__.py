"""`python -m bench [--quick] [--only NAME ...]`: run the benchmarks, print one line per figure, write results.json.

The server (the real plugin app with the bench runtime, and the raw aiohttp baseline) runs in its own
process (`bench.server`); this process is the client. Every figure is reported with its same-run baseline
or as a ratio. `--quick` runs each benchmark at a tiny size (the CI smoke test uses it).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

from . import answers, replicas, store, websocket
from .common import (
    AUTH,
    HELD_DELTAS,
    ROOT,
    Server,
    admission_samples,
    p50_p99,
    percentile,
    received_stamps,
    ticks_request,
    ticks_stream,
    timed_read,
    write_home,
)

FULL = {
    "deltas": 20000,
    "repeat": 3,
    "latency_streams": [1, 100, 1000],
    "latency_thread_streams": [1, 10, 100],
    "latency_seconds": 3.0,
    "latency_warmup_seconds": 1.0,
    "hz": 20,
    "idle_streams": 10000,
    "cpu_streams": 3000,
    "cpu_concurrency": 100,
    "cpu_warmup": 200,
    "admissions": 300,
    "startups": 3,
    "store_requests": 1000,
    "store_rounds": 10,
    "store_warmup": 20,
    "replicas_deltas": 200,
    "replicas_gap_ms": [10, 25],
    "replicas_turns": [1, 10],
    "replicas_rounds": 3,
    "answers_rounds": 200,
    "answers_warmup": 10,
    "socket_turns": 20,
    "socket_rounds": 10,
}
QUICK = {
    "deltas": 500,
    "repeat": 1,
    "latency_streams": [1, 5],
    "latency_thread_streams": [1, 5],
    "latency_seconds": 1.0,
    "latency_warmup_seconds": 0.2,
    "hz": 20,
    "idle_streams": 50,
    "cpu_streams": 100,
    "cpu_concurrency": 10,
    "cpu_warmup": 10,
    "admissions": 20,
    "startups": 1,
    "store_requests": 10,
    "store_rounds": 1,
    "store_warmup": 2,
    "replicas_deltas": 20,
    "replicas_gap_ms": [10, 25],
    "replicas_turns": [1, 2],
    "replicas_rounds": 1,
    "answers_rounds": 3,
    "answers_warmup": 1,
    "socket_turns": 20,
    "socket_rounds": 1,
}


async def throughput(session: aiohttp.ClientSession, server: Server, size: dict[str, Any]) -> dict[str, Any]:
    """Deltas per second through chat and Responses streams versus the raw baseline."""
    deltas = size["deltas"]
    chat_body = {"stream": True, "messages": [{"role": "user", "content": "deltas"}]}
    results: dict[str, list[float]] = {"chat": [], "responses": [], "raw": [], "producer": []}
    for _ in range(size["repeat"]):
        elapsed, body = await timed_read(
            session, "POST", server.url + "/v1/chat/completions", json=chat_body, headers=AUTH
        )
        text = "".join(
            json.loads(line[6:])["choices"][0]["delta"].get("content", "")
            for line in body.decode().split("\n")
            if line.startswith("data: {")
        )
        assert len(text) == deltas, len(text)
        results["chat"].append(deltas / elapsed)
        elapsed, body = await timed_read(
            session, "POST", server.url + "/v1/responses", json={"input": "deltas", "stream": True}, headers=AUTH
        )
        assert b"response.completed" in body
        results["responses"].append(deltas / elapsed)
        elapsed, body = await timed_read(session, "GET", f"{server.raw_url}/raw?n={deltas}")
        assert body.count(b"data: ") == deltas + 1
        results["raw"].append(deltas / elapsed)
        elapsed, body = await timed_read(session, "GET", f"{server.raw_url}/producer?n={deltas}")
        assert int(body) == deltas
        results["producer"].append(deltas / elapsed)
    best = {k: max(v) for k, v in results.items()}
    return {
        "deltas": deltas,
        "chat_deltas_per_s": round(best["chat"]),
        "responses_deltas_per_s": round(best["responses"]),
        "raw_deltas_per_s": round(best["raw"]),
        "chat_ratio": round(best["chat"] / best["raw"], 3),
        "responses_ratio": round(best["responses"] / best["raw"], 3),
        # the runtime's own production of the deltas, in the same loop, with nothing listening: the ceiling of both
        # streams, and of their ratio to the raw writer
        "producer_deltas_per_s": round(best["producer"]),
        "producer_ratio": round(best["producer"] / best["raw"], 3),
        "chat_of_producer": round(best["chat"] / best["producer"], 3),
        "responses_of_producer": round(best["responses"] / best["producer"], 3),
    }


class Schedule:
    """How the deltas of a latency run kept their turn's schedule (issue 25): per stream, request sent → its first
    delta's stamp (ms), and per delta how much later than its place on the schedule (the stream's first stamp + i/hz)
    its callback ran (ms) — the loop's lag before a callback, which callback → receipt does not see: a runtime on
    the loop (the bench's) runs late itself, one on its own thread (Hermes') would wait that long for the loop."""

    def __init__(self) -> None:
        self.first: list[float] = []
        self.slip: list[float] = []

    def figures(self) -> dict[str, float]:
        return {
            "first_delta_p50_ms": round(percentile(self.first, 50), 3),
            "first_delta_p99_ms": round(percentile(self.first, 99), 3),
            "slip_p50_ms": round(percentile(self.slip, 50), 3),
            "slip_p99_ms": round(percentile(self.slip, 99), 3),
        }


async def _latency_stream(
    session: aiohttp.ClientSession,
    server: Server,
    raw: bool,
    threads: bool,
    ticks: int,
    hz: int,
    samples: list[float],
    schedule: Schedule,
    phase: float,
) -> None:
    # Streams start at spread-out phases of the tick period, as independent clients would: phase-locked
    # tickers would measure a synthetic burst of every stream at once instead of per-event latency.
    await asyncio.sleep(phase)
    request = ticks_request(session, server, "raw" if raw else "chat", ticks, hz, threads=threads)
    sent = time.time()
    stamps: list[float] = []
    async with request as response:
        async for now, received in received_stamps(response):
            for stamp in map(float, received):
                samples.append((now - stamp) * 1000)
                stamps.append(stamp)
    if stamps:
        schedule.first.append((stamps[0] - sent) * 1000)
        schedule.slip.extend((stamp - stamps[0] - i / hz) * 1000 for i, stamp in enumerate(stamps))


async def _latency_samples(
    session: aiohttp.ClientSession,
    server: Server,
    raw: bool,
    threads: bool,
    streams: int,
    size: dict[str, Any],
    seconds: float,
) -> tuple[list[float], dict[str, float]]:
    """The run's latencies, and how busy the server process was: its CPU seconds (every thread) over the run's wall
    time — near 1.0 its event loop has no idle moment left and latency becomes queueing (issue 25) — with how the
    deltas kept their schedule (`Schedule`)."""
    hz = size["hz"]
    ticks = max(1, int(seconds * hz))
    samples: list[float] = []
    schedule = Schedule()
    # The client's own full collections land in whichever run crosses its threshold — mostly the raw writer's, after
    # the plugin's run left its garbage (issue 25, tenth session): each run starts with the client's heap collected.
    gc.collect()
    cpu, began = server.cpu_seconds(), time.perf_counter()
    await asyncio.gather(
        *(
            _latency_stream(session, server, raw, threads, ticks, hz, samples, schedule, i / streams / hz)
            for i in range(streams)
        )
    )
    wall, used = time.perf_counter() - began, server.cpu_seconds() - cpu
    load = {"server_cpu_s": round(used, 2), "wall_s": round(wall, 2), "server_busy": round(used / wall, 3)}
    return samples, {**load, **schedule.figures()}


async def latency(session: aiohttp.ClientSession, server: Server, size: dict[str, Any]) -> dict[str, Any]:
    """Runtime callback → client receipt, p50/p99 in ms, at each concurrency, the turns played on the loop (the bench
    runtime's `ticks`); then the raw writer's callback → receipt at the same rate and concurrency (the physical limit,
    same run), and the plugin's over it as ratios; each after one unmeasured second of both at that concurrency.
    Beside each side's figures, its server's load and how its deltas kept their schedule (`Schedule`)."""
    return await _latency(session, server, size, size["latency_streams"], threads=False)


async def latency_threads(session: aiohttp.ClientSession, server: Server, size: dict[str, Any]) -> dict[str, Any]:
    """The latency part with every turn played from a thread of its own (`thread_ticks`), as Hermes runs its agent, so
    every callback crosses to the loop; its raw partner ticks from a thread per stream as well and hands each stamp
    to the loop (`/raw_thread_ticks`)."""
    return await _latency(session, server, size, size["latency_thread_streams"], threads=True)


async def _latency(
    session: aiohttp.ClientSession, server: Server, size: dict[str, Any], concurrencies: list[int], threads: bool
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for streams in concurrencies:
        # Both once first, unmeasured: the first time a process (the client, the server) holds this many streams it
        # grows its heap, its pools and its garbage collector's generations, and the side measured first paid for
        # that alone (issue 25: 40-50 ms p50 on the first thousand streams, whichever side went first).
        for warm_raw in (False, True):
            await _latency_samples(session, server, warm_raw, threads, streams, size, size["latency_warmup_seconds"])
        seconds = size["latency_seconds"]
        plugin, plugin_load = await _latency_samples(session, server, False, threads, streams, size, seconds)
        raw, raw_load = await _latency_samples(session, server, True, threads, streams, size, seconds)
        out[str(streams)] = {
            "events": len(plugin),
            "p50_ms": round(percentile(plugin, 50), 3),
            "p99_ms": round(percentile(plugin, 99), 3),
            **plugin_load,
            "raw": {
                "events": len(raw),
                "p50_ms": round(percentile(raw, 50), 3),
                "p99_ms": round(percentile(raw, 99), 3),
                **raw_load,
            },
            "ratio": {
                "p50": round(percentile(plugin, 50) / percentile(raw, 50), 3),
                "p99": round(percentile(plugin, 99) / percentile(raw, 99), 3),
            },
        }
    return out


async def idle_streams(session: aiohttp.ClientSession, server: Server, size: dict[str, Any]) -> dict[str, Any]:
    """How many idle SSE streams (scripted sleep, keepalives flowing) the gateway holds, and RSS per stream; the
    objects a full garbage collection walks per idle stream, per delta a running turn has streamed (`hold`: the same
    idle turn after `HELD_DELTAS` deltas), and per open raw writer stream."""
    count = size["idle_streams"]
    await timed_read(
        session,
        "POST",
        server.url + "/v1/chat/completions",
        headers=AUTH,
        json={"stream": True, "messages": [{"role": "user", "content": "warm up"}]},
    )
    await asyncio.sleep(0.5)
    before = server.rss_kb()
    tracked_before = await gc_tracked(session, server)
    started = time.perf_counter()
    responses, ready, errors = await _held_streams(session, server, "idle", count)
    opened = time.perf_counter() - started
    await asyncio.sleep(1.0)
    after = server.rss_kb()
    tracked = await gc_tracked(session, server) - tracked_before
    for response in responses:
        response.close()
    holding = min(count, 500)
    held_before = await settled_tracked(session, server)
    held, held_ready, _ = await _held_streams(session, server, "hold", holding)
    held_tracked = await gc_tracked(session, server) - held_before
    for response in held:
        response.close()
    raw_tracked = await raw_idle_tracked(session, server, count)
    per_stream = tracked / max(ready, 1)
    return {
        "requested": count,
        "held": ready,
        "open_seconds": round(opened, 2),
        "rss_before_kb": before,
        "rss_after_kb": after,
        "rss_per_stream_kb": round((after - before) / max(ready, 1), 2),
        "tracked_per_stream": round(per_stream, 1),
        "tracked_per_delta": round((held_tracked / max(held_ready, 1) - per_stream) / HELD_DELTAS, 3),
        "raw_tracked_per_stream": round(raw_tracked / count, 1),
        "errors": errors,
    }


async def _held_streams(
    session: aiohttp.ClientSession, server: Server, prompt: str, count: int
) -> tuple[list[aiohttp.ClientResponse], int, list[str]]:
    """`count` chat streams of `prompt` (to close), how many reached their first keepalive (their turns idle), and
    the first errors."""
    body = {"stream": True, "messages": [{"role": "user", "content": prompt}]}
    responses: list[aiohttp.ClientResponse] = []
    ready = 0

    async def open_one() -> None:
        nonlocal ready
        response = await session.post(server.url + "/v1/chat/completions", json=body, headers=AUTH)
        responses.append(response)
        assert response.status == 200
        seen = b""
        while b": keepalive" not in seen:
            seen += await response.content.readany()
        ready += 1

    results = await asyncio.gather(*(open_one() for _ in range(count)), return_exceptions=True)
    return responses, ready, [repr(r) for r in results if isinstance(r, BaseException)][:3]


async def gc_tracked(session: aiohttp.ClientSession, server: Server) -> int:
    """Objects the bench server's garbage collector tracks after a full collection (what each one walks)."""
    async with session.get(server.raw_url + "/gc_tracked") as response:
        return int((await response.json())["tracked"])


async def settled_tracked(session: aiohttp.ClientSession, server: Server) -> int:
    """The tracked count once it stops falling: closed streams' turns end, settle and are stored in their own time (a
    few seconds for 10 000)."""
    count = await gc_tracked(session, server)
    for _ in range(60):
        await asyncio.sleep(0.5)
        now = await gc_tracked(session, server)
        if now >= count - count // 1000:
            return now
        count = now
    return count


async def raw_idle_tracked(session: aiohttp.ClientSession, server: Server, count: int) -> int:
    """The same count for `count` open raw writer streams (one tick written, the next 100 s away): the per-stream
    objects of aiohttp and the raw handler alone, the partner of the plugin's."""
    before = await settled_tracked(session, server)  # the plugin's closed streams wound down
    responses: list[aiohttp.ClientResponse] = []

    async def open_one() -> None:
        response = await ticks_request(session, server, "raw", 2, 0.01)
        responses.append(response)
        await response.content.readany()

    await asyncio.gather(*(open_one() for _ in range(count)))
    tracked = await gc_tracked(session, server) - before
    for response in responses:
        response.close()
    return tracked


async def _one_delta_streams(
    session: aiohttp.ClientSession, server: Server, kind: str, count: int, at_once: int
) -> None:
    """`count` one-delta ticks streams of `kind`, `at_once` open at a time."""
    gate = asyncio.Semaphore(at_once)

    async def one() -> None:
        async with gate:
            await ticks_stream(session, server, kind, 1, 1000)

    await asyncio.gather(*(one() for _ in range(count)))


async def process_time(session: aiohttp.ClientSession, server: Server) -> float:
    """The CPU time the bench server has used so far, every thread, in seconds (to the nanosecond)."""
    async with session.get(server.raw_url + "/process_time") as response:
        return float((await response.json())["seconds"])


async def stream_cpu(session: aiohttp.ClientSession, server: Server, size: dict[str, Any]) -> dict[str, Any]:
    """The server's CPU time per stream (issue 25): N one-delta streams, C open at a time, of the raw writer, chat and
    Responses, each after a warm-up of its own; every thread of the process, user and kernel time — what an instruction
    count (bench.cost) leaves out: the system calls, the store's thread, the collector's full collections (rare, so a
    short phase under callgrind may see none). The raw writer goes first: the plugin's settled turns are then not
    yet in the heap its collections walk. Also the objects the collector tracks after each kind."""
    count, at_once = size["cpu_streams"], size["cpu_concurrency"]
    out: dict[str, Any] = {"streams": count, "at_once": at_once}
    for kind in ("raw", "chat", "responses"):
        await _one_delta_streams(session, server, kind, size["cpu_warmup"], at_once)
        before = await process_time(session, server)
        await _one_delta_streams(session, server, kind, count, at_once)
        used = await process_time(session, server) - before
        tracked = await gc_tracked(session, server)
        out[kind] = {"cpu_ms_per_stream": round(1000 * used / count, 4), "tracked_after": tracked}
    for kind in ("chat", "responses"):
        out[kind]["ratio"] = round(out[kind]["cpu_ms_per_stream"] / out["raw"]["cpu_ms_per_stream"], 3)
    return out


async def admissions(session: aiohttp.ClientSession, server: Server, size: dict[str, Any]) -> dict[str, Any]:
    """Per-request latency of a short non-streaming chat turn, without and with an Idempotency-Key."""
    out: dict[str, Any] = {}
    for label in ("unkeyed", "keyed"):
        out[label] = p50_p99(await admission_samples(session, server.url, label == "keyed", size["admissions"]))
    out["overhead_p50_ms"] = round(out["keyed"]["p50_ms"] - out["unkeyed"]["p50_ms"], 3)
    return out


def startup(size: dict[str, Any], work: Path) -> dict[str, Any]:
    """Spawn `python -m hermes_api_plugin gateway` and time until `/health` answers 200."""
    import urllib.request

    times = []
    for i in range(size["startups"]):
        home = write_home(work / f"startup{i}", 10)
        env = {**os.environ, "HERMES_HOME": str(home), "API_SERVER_PORT": "0"}
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "hermes_api_plugin", "gateway"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert proc.stdout is not None
        port = None
        for line in proc.stdout:
            match = re.search(r"listening on http://127.0.0.1:(\d+)", line)
            if match:
                port = int(match.group(1))
                break
        assert port is not None
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                time.sleep(0.005)
        times.append(time.perf_counter() - started)
        proc.terminate()
        proc.wait(30)
        proc.stdout.close()
    return {"runs": len(times), "median_s": round(statistics.median(times), 3), "max_s": round(max(times), 3)}


BENCHES: dict[str, Callable[..., Awaitable[dict[str, Any]]]] = {
    "throughput": throughput,
    "latency": latency,
    "latency_threads": latency_threads,
    "idle_streams": idle_streams,
    "stream_cpu": stream_cpu,
    "admissions": admissions,
    "answers": answers.answers,
    "websocket": websocket.websocket,
}


# The benchmarks `--metrics compare` runs twice, metrics on and off (issue 24: the cost of recording them)
METRICS_OVERHEAD = ("throughput", "latency")


def overhead(name: str, on: dict[str, Any], off: dict[str, Any]) -> dict[str, Any]:
    """Metrics on versus off in the same run: throughput as a ratio (1.0 = no cost), latency as both p99s."""
    if name == "throughput":
        return {
            "chat_ratio": round(on["chat_deltas_per_s"] / off["chat_deltas_per_s"], 3),
            "responses_ratio": round(on["responses_deltas_per_s"] / off["responses_deltas_per_s"], 3),
            **({"paired_median": off["paired"]} if "paired" in off else {}),
        }
    return {n: {"p99_ms_on": v["p99_ms"], "p99_ms_off": off[n]["p99_ms"]} for n, v in on.items()}


def overhead_report(name: str, result: dict[str, Any]) -> list[str]:
    if name == "throughput":
        lines = [
            f"metrics.throughput     chat {result['chat_ratio']} x, responses {result['responses_ratio']} x "
            "(metrics on / off, best rounds, same run)"
        ]
        if "paired_median" in result:
            paired = result["paired_median"]
            lines.append(
                f"metrics.throughput     chat {paired['chat']} x, responses {paired['responses']} x "
                "(median of interleaved rounds' on / off)"
            )
        return lines
    return [f"metrics.latency.{n}     p99 {v['p99_ms_on']} ms on, {v['p99_ms_off']} ms off" for n, v in result.items()]


def report(name: str, result: dict[str, Any]) -> list[str]:
    """One line per figure."""
    if name == "throughput":
        return [
            f"throughput.chat        {result['chat_deltas_per_s']} deltas/s = {result['chat_ratio']} x raw aiohttp "
            f"({result['raw_deltas_per_s']} deltas/s, same run)",
            f"throughput.responses   {result['responses_deltas_per_s']} deltas/s = {result['responses_ratio']} x raw "
            "aiohttp",
            f"throughput.producer    {result['producer_deltas_per_s']} deltas/s = {result['producer_ratio']} x raw "
            f"aiohttp (the runtime alone, nothing listening): chat x {result['chat_of_producer']}, responses "
            f"x {result['responses_of_producer']} of it",
        ]
    if name in ("latency", "latency_threads"):
        return [
            f"{f'{name}.{n}_streams':<25} p50 {v['p50_ms']} ms, p99 {v['p99_ms']} ms ({v['events']} events); raw "
            f"writer p50 {v['raw']['p50_ms']} ms, p99 {v['raw']['p99_ms']} ms "
            f"(x {v['ratio']['p50']} / x {v['ratio']['p99']});"
            f" server busy {v['server_busy']} / raw {v['raw']['server_busy']} "
            f"({v['server_cpu_s']} / {v['raw']['server_cpu_s']} CPU-s); schedule slip p99 {v['slip_p99_ms']} / raw "
            f"{v['raw']['slip_p99_ms']} ms, first delta p50 {v['first_delta_p50_ms']} / raw "
            f"{v['raw']['first_delta_p50_ms']} ms, p99 {v['first_delta_p99_ms']} / {v['raw']['first_delta_p99_ms']} ms"
            for n, v in result.items()
        ]
    if name == "idle_streams":
        return [
            f"idle_streams           {result['held']}/{result['requested']} held, "
            f"{result['rss_per_stream_kb']} KB RSS per stream (server {result['rss_before_kb']} -> "
            f"{result['rss_after_kb']} KB)",
            f"idle_streams           {result['tracked_per_stream']} objects per stream tracked by the collector "
            f"(raw aiohttp writer {result['raw_tracked_per_stream']}); {result['tracked_per_delta']} per delta "
            "a running turn streamed",
        ]
    if name == "stream_cpu":
        raw = result["raw"]
        return [
            f"stream_cpu.{kind:<12} {v['cpu_ms_per_stream']} ms of server CPU per one-delta stream (x {v['ratio']} "
            f"the raw writer's {raw['cpu_ms_per_stream']} ms; {result['streams']} streams, {result['at_once']} at "
            f"once) - {v['tracked_after']} objects tracked after (raw {raw['tracked_after']})"
            for kind, v in result.items()
            if kind in ("chat", "responses")
        ]
    if name == "admissions":
        return [
            f"admissions             unkeyed p50 {result['unkeyed']['p50_ms']} / p99 {result['unkeyed']['p99_ms']} ms, "
            f"keyed p50 {result['keyed']['p50_ms']} / p99 {result['keyed']['p99_ms']} ms "
            f"(+{result['overhead_p50_ms']} ms p50)"
        ]
    if name == "answers":
        return answers.report(result)
    if name == "websocket":
        return websocket.report(result)
    return [f"startup                /health 200 after {result['median_s']} s (median of {result['runs']})"]


async def _one(
    name: str, bench: Callable[..., Awaitable[dict[str, Any]]], size: dict[str, Any], home: Path
) -> dict[str, Any]:
    server = Server(home, size["deltas"])
    connector = aiohttp.TCPConnector(limit=0)
    try:
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as s:
            return await bench(s, server, size)
    finally:
        server.stop()


async def _interleaved(
    bench: Callable[..., Awaitable[dict[str, Any]]], size: dict[str, Any], work: Path
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The benchmark on two servers at once, metrics on and off, one repeat on each in turn: the machine's load drifts
    alike for both. Returns the best round of each, and the off one carries `paired`: the median of the rounds' on/off
    ratios, which measures the metrics rather than the drift."""
    servers = [
        Server(write_home(work / "metrics-on", 1), size["deltas"]),
        Server(write_home(work / "metrics-off", 1, metrics=False), size["deltas"]),
    ]
    rounds: list[list[dict[str, Any]]] = [[], []]
    try:
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as s:
            for r in range(size["repeat"] * 4):
                for i in (0, 1) if r % 2 == 0 else (1, 0):  # which goes first alternates
                    rounds[i].append(await bench(s, servers[i], {**size, "repeat": 1}))
    finally:
        for server in servers:
            server.stop()
    best = [max(r, key=lambda x: x["chat_deltas_per_s"]) for r in rounds]
    paired = {
        kind: round(
            statistics.median(
                on[f"{kind}_deltas_per_s"] / off[f"{kind}_deltas_per_s"] for on, off in zip(*rounds, strict=True)
            ),
            3,
        )
        for kind in ("chat", "responses")
    }
    return best[0], {**best[1], "paired": paired}


async def run(size: dict[str, Any], only: list[str], work: Path, metrics: str = "on") -> dict[str, Any]:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    results: dict[str, Any] = {}
    for name, bench in BENCHES.items():
        if only and name not in only:
            continue
        if metrics == "compare" and name == "throughput":
            results[name], off = await _interleaved(bench, size, work / name)
        else:
            results[name] = await _one(name, bench, size, write_home(work / name, 1, metrics=metrics != "off"))
        for line in report(name, results[name]):
            print(line, flush=True)
        if metrics == "compare" and name in METRICS_OVERHEAD:
            if name != "throughput":
                off = await _one(name, bench, size, write_home(work / f"{name}-metrics-off", 1, metrics=False))
            results.setdefault("metrics_overhead", {})[name] = overhead(name, results[name], off)
            for line in overhead_report(name, results["metrics_overhead"][name]):
                print(line, flush=True)
    if not only or "startup" in only:
        results["startup"] = startup(size, work)
        for line in report("startup", results["startup"]):
            print(line, flush=True)
    if not only or "store" in only:
        results["store"] = await store.store(size, work)
        for line in store.report(results["store"]):
            print(line, flush=True)
    if not only or "replicas" in only:
        results["replicas"] = await replicas.replicas(size, work)
        for line in replicas.report(results["replicas"]):
            print(line, flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument(
        "--only", nargs="*", default=[], help="run only these: " + ", ".join([*BENCHES, "startup", "store", "replicas"])
    )
    parser.add_argument("--out", default=str(ROOT / "results.json"))
    parser.add_argument(
        "--metrics",
        choices=("on", "off", "compare"),
        default="on",
        help="api_server.metrics.enabled for the servers; compare: throughput and latency also with metrics off",
    )
    args = parser.parse_args(argv)
    size = QUICK if args.quick else FULL
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        results = asyncio.run(run(size, args.only, Path(tmp), args.metrics))
    # Merged into what the file holds: a part run alone (--only) and the other scripts' sections (warm,
    # side_by_side) keep the rest.
    path = Path(args.out)
    document = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    document["machine"] = {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    document["size"] = "quick" if args.quick else "full"
    document.setdefault("results", {}).update(results)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
