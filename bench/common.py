"""What the benchmark parts share: the bench Hermes home, the server process (`bench.server`), percentiles, timed
requests (one admission = one short non-streaming chat turn), and the streams of timestamped deltas (`ticks_stream`)
and their receipt."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

KEY = "bench-key-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {KEY}"}
ROOT = Path(__file__).resolve().parent
ADMISSION_BODY = {"messages": [{"role": "user", "content": "hello"}]}  # the script's default turn: "ok"
HELD_DELTAS = 200  # what the bench runtime's `hold` turn streams before it idles like `idle` (runtime.py)
STAMP = re.compile(rb"(\d{10}\.\d{6});")  # a bench runtime delta: time.time() of its runtime callback (runtime.py)


def write_home(home: Path, keepalive: int, store_url: str | None = None, *, metrics: bool = True) -> Path:
    """A Hermes home for the bench server; `store_url`: the PostgreSQL store instead of SQLite; `metrics`: False turns
    `api_server.metrics.enabled` off (no instrument recorded, no /metrics)."""
    home.mkdir(parents=True, exist_ok=True)
    env = f"API_SERVER_ENABLED=true\nAPI_SERVER_KEY={KEY}\n"
    if store_url is not None:
        env += f"API_SERVER_STORE_URL={store_url}\n"
    (home / ".env").write_text(env, encoding="utf-8")
    (home / "config.yaml").write_text(
        f"api_server:\n  max_concurrent_runs: 0\n  sse_keepalive_seconds: {keepalive}\n"
        f"  metrics:\n    enabled: {'true' if metrics else 'false'}\n",
        encoding="utf-8",
    )
    return home


class Server:
    """`python -m bench.server` in its own process; `options` are passed on (e.g. `--pool-check none`), `wrap` runs it
    under another program (bench/cost.py: callgrind)."""

    def __init__(self, home: Path, deltas: int, *options: str, wrap: tuple[str, ...] = ()) -> None:
        self.proc = subprocess.Popen(
            [*wrap, sys.executable, "-m", "bench.server", str(home), str(deltas), *options],
            cwd=ROOT.parent,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("PORTS"):
            self.proc.kill()
            raise RuntimeError(f"bench server did not start: {line!r}")
        _, plugin, raw = line.split()
        self.url = f"http://127.0.0.1:{plugin}"
        self.raw_url = f"http://127.0.0.1:{raw}"

    def rss_kb(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def cpu_seconds(self) -> float:
        """CPU time the server process has used, every thread (its utime + stime in /proc)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def p50_p99(samples_ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(samples_ms, 50), 3), "p99_ms": round(percentile(samples_ms, 99), 3)}


async def timed_read(session: aiohttp.ClientSession, method: str, url: str, **kwargs: Any) -> tuple[float, bytes]:
    started = time.perf_counter()
    async with session.request(method, url, **kwargs) as response:
        body = await response.read()
        assert response.status == 200, body[:300]
    return time.perf_counter() - started, body


async def admission_samples(session: aiohttp.ClientSession, url: str, keyed: bool, count: int) -> list[float]:
    """`count` sequential admissions, each with a fresh Idempotency-Key when `keyed`; ms per request."""
    samples = []
    for i in range(count):
        headers = {**AUTH, "Idempotency-Key": f"bench-{time.time_ns()}-{i}"} if keyed else AUTH
        elapsed, _ = await timed_read(
            session, "POST", url + "/v1/chat/completions", json=ADMISSION_BODY, headers=headers
        )
        samples.append(elapsed * 1000)
    return samples


async def received_stamps(response: aiohttp.ClientResponse) -> AsyncIterator[tuple[float, list[bytes]]]:
    """The delta stamps of an SSE stream as its records complete, with the time.time() they arrived. A record split
    over two reads counts when its end arrives: a stamp is never cut in two nor received before it was whole."""
    pending = b""
    async for piece in response.content.iter_any():
        now = time.time()
        pending += piece
        end = pending.rfind(b"\n\n") + 2
        if end > 1:
            whole, pending = pending[:end], pending[end:]
            yield now, STAMP.findall(whole)


TICKS_KINDS = ("chat", "responses", "raw")  # a ticks stream: the plugin's chat and Responses streams, the raw writer's


def ticks_request(
    session: aiohttp.ClientSession, server: Server, kind: str, ticks: int, hz: float, *, threads: bool = False
) -> Any:
    """The request of one stream of the bench runtime's `ticks T HZ` turn (`thread_ticks` with `threads`). The raw
    writer is sent the chat request itself — the same body and headers, the schedule also in its query — so that the
    client's work per request is the same on both sides and only the server's differs (a GET without a body cost the
    client less, and its own share of a stream's start then favoured the raw writer: issue 25, thirteenth session)."""
    prompt = f"{'thread_ticks' if threads else 'ticks'} {ticks} {hz}"
    chat = {"stream": True, "messages": [{"role": "user", "content": prompt}]}
    if kind == "chat":
        return session.post(server.url + "/v1/chat/completions", json=chat, headers=AUTH)
    if kind == "responses":
        return session.post(server.url + "/v1/responses", json={"input": prompt, "stream": True}, headers=AUTH)
    path = "/raw_thread_ticks" if threads else "/raw_ticks"
    return session.post(f"{server.raw_url}{path}?ticks={ticks}&hz={hz}", json=chat, headers=AUTH)


async def ticks_stream(
    session: aiohttp.ClientSession, server: Server, kind: str, ticks: int, hz: int, phase: float = 0.0
) -> int:
    """One ticks stream read to its end, `phase` seconds from now; its deltas, each checked received once."""
    await asyncio.sleep(phase)
    received: set[bytes] = set()  # a Responses stream repeats the text in its `done` and `completed` events
    async with ticks_request(session, server, kind, ticks, hz) as response:
        assert response.status == 200, await response.text()
        async for _now, stamps in received_stamps(response):
            received.update(stamps)
    assert len(received) == ticks, (kind, len(received), ticks)
    return ticks
