"""The benchmark server process: the real plugin app (bench runtime) and a raw aiohttp baseline, one loop.

`python -m bench.server HOME DELTAS [--pool-check round-trip|none]` prints `PORTS <plugin> <raw>` once both listen, then
serves until SIGTERM. `--pool-check` (the store part measures what the check costs) replaces the PostgreSQL pool's
per-borrow check (`postgres_db.check_lent`) with psycopg_pool's own round trip, or with nothing. The raw baseline builds
and `json.dumps` the same chunk dicts the chat stream sends, one write per chunk: the minimal honest work of an SSE
endpoint — as fast as it can (`/raw`, the throughput partner), or stamped on the latency part's schedule (`/raw_ticks`,
the latency partner: the bench runtime's `ticks` turn without the plugin between the callback and the socket; POSTed the
chat request itself, so the client's side of both is the same), or on that schedule from a thread per stream that
hands each stamp to the loop (`/raw_thread_ticks`, the partner of `thread_ticks`: what a runtime on its own thread, as
Hermes' is, costs anyway). `/gc_tracked` answers how many objects
the cyclic garbage collector tracks after a full collection (what every later full collection walks; the start-up's,
frozen, are not counted); `/process_time` the CPU time the process has used. `/producer` plays the throughput part's
deltas with the bench runtime to a callback that does nothing: the ceiling of the plugin's throughput on this loop (its
producer is in the same process).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import resource
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from hermes_api_plugin.config.settings import load_settings
from hermes_api_plugin.gateway.server import ReferenceGateway, build_plugin_manager, runner_kwargs
from hermes_api_plugin.runtimes.scripted import ScriptedRuntime

from .runtime import play_on_a_thread, runtime, stamped_offsets, write_script


def _chunk(created: int, content: str) -> bytes:
    """One chat chunk as an SSE record, built and serialised as the chat stream builds it."""
    chunk = {
        "id": "chatcmpl-raw",
        "object": "chat.completion.chunk",
        "created": created,
        "model": "raw",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}],
    }
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


async def _sse(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await response.prepare(request)
    return response


async def raw_stream(request: web.Request) -> web.StreamResponse:
    count = int(request.query.get("n", "20000"))
    response = await _sse(request)
    created = int(time.time())
    for _ in range(count):
        await response.write(_chunk(created, "x"))
    await response.write(b"data: [DONE]\n\n")
    return response


def producer(scripted: ScriptedRuntime) -> Callable[[web.Request], Awaitable[web.Response]]:
    """`/producer?n=N`: the bench runtime plays N one-character deltas to a callback that does nothing, then answers
    `n`: the throughput part's ceiling — what producing the deltas costs the loop without the plugin or a socket."""

    async def play(request: web.Request) -> web.Response:
        count = int(request.query.get("n", "20000"))
        played: list[int] = [0]

        def take(delta: str) -> None:
            played[0] += len(delta)

        await scripted.stream("x" * count, take)
        return web.Response(text=str(played[0]))

    return play


async def _ticks_head(request: web.Request) -> tuple[list[float], web.StreamResponse]:
    """A ticks request's schedule (`?ticks=N&hz=H`, as the bench runtime's `ticks N H`) and its SSE head, written; the
    body, the plugin's own chat request (bench/common.py `ticks_request`), read as the plugin reads it."""
    offsets = stamped_offsets(["ticks", request.query["ticks"], request.query["hz"]]) or []
    await request.read()
    return offsets, await _sse(request)


async def raw_ticks(request: web.Request) -> web.StreamResponse:
    """`?ticks=N&hz=H`: the bench runtime's `ticks N H` schedule, each delta `<time.time()>;` written at once."""
    offsets, response = await _ticks_head(request)
    created = int(time.time())
    loop = asyncio.get_running_loop()
    start = loop.time()
    for offset in offsets:
        delay = start + offset - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        await response.write(_chunk(created, f"{time.time():.6f};"))
    await response.write(b"data: [DONE]\n\n")
    return response


async def raw_thread_ticks(request: web.Request) -> web.StreamResponse:
    """`?ticks=N&hz=H`: the schedule of `raw_ticks` played from a thread of its own, each stamp handed to the loop
    (`call_soon_threadsafe`) and written there: the least a runtime on its own thread can cost."""
    offsets, response = await _ticks_head(request)
    created = int(time.time())
    loop = asyncio.get_running_loop()
    stamps: asyncio.Queue[str | None] = asyncio.Queue()

    def deliver(text: str | None) -> None:
        loop.call_soon_threadsafe(stamps.put_nowait, text)

    def ended() -> None:
        deliver(None)

    def interrupted() -> bool:
        return False

    play_on_a_thread(offsets, deliver, interrupted, ended)
    while (text := await stamps.get()) is not None:
        await response.write(_chunk(created, text))
    await response.write(b"data: [DONE]\n\n")
    return response


async def process_time(request: web.Request) -> web.Response:
    """The CPU time this process has used, every thread (`time.process_time()`: to the nanosecond, where /proc counts
    clock ticks of 10 ms)."""
    return web.json_response({"seconds": time.process_time()})


async def gc_tracked(request: web.Request) -> web.Response:
    gc.collect()
    return web.json_response({"tracked": len(gc.get_objects())})


def replace_pool_check(kind: str) -> None:
    """psycopg_pool's check (an empty query per borrow) or none in place of the store's own, before the pool opens."""
    from psycopg_pool import AsyncConnectionPool

    from hermes_api_plugin.store.postgres import db as postgres_db

    async def unchecked(conn: object) -> None:
        return None

    checks = {"round-trip": AsyncConnectionPool.check_connection, "none": unchecked}
    postgres_db.check_lent = checks[kind]  # type: ignore[assignment]


async def main(home: Path, deltas: int) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    script = home / "bench-script.yaml"
    write_script(str(script), deltas)
    # The OpenTelemetry variables pass through: `OTEL_EXPORTER_OTLP_ENDPOINT=… python -m bench` measures tracing on.
    otel = {name: value for name, value in os.environ.items() if name.startswith("OTEL_")}
    settings = load_settings(home, environ={"HERMES_HOME": str(home), **otel})
    pm = build_plugin_manager()
    agent_runtime = runtime(str(script))
    gateway = ReferenceGateway(settings, agent_runtime, pm)
    pm.hook.hermes_api_gateway_startup(gateway=gateway)
    plugin_runner = web.AppRunner(gateway.apps[0], **runner_kwargs())
    raw_app = web.Application()
    raw_app.router.add_get("/raw", raw_stream)
    raw_app.router.add_post("/raw_ticks", raw_ticks)
    raw_app.router.add_post("/raw_thread_ticks", raw_thread_ticks)
    raw_app.router.add_get("/producer", producer(agent_runtime))
    raw_app.router.add_get("/gc_tracked", gc_tracked)
    raw_app.router.add_get("/process_time", process_time)
    raw_runner = web.AppRunner(raw_app, **runner_kwargs())
    await plugin_runner.setup()
    await raw_runner.setup()
    plugin_site = web.TCPSite(plugin_runner, "127.0.0.1", 0, backlog=4096)
    raw_site = web.TCPSite(raw_runner, "127.0.0.1", 0, backlog=4096)
    await plugin_site.start()
    await raw_site.start()
    print("PORTS", plugin_runner.addresses[0][1], raw_runner.addresses[0][1], flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    for result in pm.hook.hermes_api_gateway_shutdown(gateway=gateway):
        if result is not None:
            await result
    await plugin_runner.cleanup()
    await raw_runner.cleanup()


if __name__ == "__main__":
    if sys.argv[3:4] == ["--pool-check"]:
        replace_pool_check(sys.argv[4])
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))
