"""The `replicas` part of `python -m bench`: cross-gateway attach latency on one PostgreSQL database (issue 15).

Two bench servers (`bench.server`: the reference gateway's plugin app on the bench runtime), A and B, on one database
of a temporary cluster (tests/pg.py, fsync on, as the store part). One pair = a keyed streaming chat on A of a
`paced N MIN_MS MAX_MS` turn (N text deltas MIN–MAX ms apart, each carrying the time.time() of its runtime callback,
the moment it enters A's journal) and, once A's client has its first bytes, the same request with the same
Idempotency-Key on B, which attaches: B follows A's journal rows, group-committed every SHARED_INTERVAL_S and woken by
NOTIFY. Counted are the deltas stamped after B's response head arrived (B's replay of the turn's beginning is not
attach latency); per delta, receipt − stamp on A's own client (the same-run baseline) and on B's, and B − A.
`turns` pairs run at once, `rounds` times for each concurrency.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from pathlib import Path
from typing import Any

import aiohttp

from hermes_api_plugin.turns.durable import SHARED_INTERVAL_S

from .common import AUTH, Server, p50_p99, received_stamps, write_home

CHAT = "/v1/chat/completions"
WARMUP_DELTAS = 10


class Samples:
    """Per delta, ms from its stamp to its receipt on A's own client and on B's attached one, and B − A."""

    def __init__(self) -> None:
        self.own: list[float] = []
        self.attached: list[float] = []
        self.difference: list[float] = []

    def add(self, stamp: bytes, on_a: float, on_b: float) -> None:
        journaled = float(stamp)
        self.own.append((on_a - journaled) * 1000)
        self.attached.append((on_b - journaled) * 1000)
        self.difference.append((on_b - on_a) * 1000)

    def summary(self, pairs: int) -> dict[str, Any]:
        return {
            "pairs": pairs,
            "events": len(self.own),
            "own": p50_p99(self.own),
            "attached": p50_p99(self.attached),
            # min: a delta the group commit took at once, so the fixed cost of commit, NOTIFY, B's read and write
            "difference": {
                **p50_p99(self.difference),
                "min_ms": round(min(self.difference, default=0.0), 3),
                "max_ms": round(max(self.difference, default=0.0), 3),
            },
        }


async def _receive(response: aiohttp.ClientResponse, into: dict[bytes, float], first: asyncio.Event) -> None:
    async for now, stamps in received_stamps(response):
        first.set()
        for stamp in stamps:
            into.setdefault(stamp, now)


async def _pair(session: aiohttp.ClientSession, a: Server, b: Server, prompt: str, samples: Samples | None) -> None:
    """One turn on A with a keyed retry on B attached to it; every delta's receipt on both, into `samples`."""
    body = {"stream": True, "messages": [{"role": "user", "content": f"{prompt} {secrets.token_hex(4)}"}]}
    headers = {**AUTH, "Idempotency-Key": "bench-replicas-" + secrets.token_hex(8)}
    on_a: dict[bytes, float] = {}
    on_b: dict[bytes, float] = {}
    async with session.post(a.url + CHAT, json=body, headers=headers) as owner:
        assert owner.status == 200, await owner.read()
        running = asyncio.Event()
        reading_a = asyncio.ensure_future(_receive(owner, on_a, running))
        await running.wait()  # A's first record: the turn is admitted and running
        async with session.post(b.url + CHAT, json=body, headers=headers) as attached:
            attached_at = time.time()
            assert attached.status == 200, await attached.read()
            assert attached.headers.get("Idempotency-Replayed") == "true", dict(attached.headers)
            await asyncio.gather(reading_a, _receive(attached, on_b, asyncio.Event()))
    assert list(on_b) == list(on_a), "B delivered every delta of A's turn, in order"
    if samples is not None:
        for stamp, received in on_a.items():
            if float(stamp) > attached_at:
                samples.add(stamp, received, on_b[stamp])


async def replicas(size: dict[str, Any], work: Path) -> dict[str, Any]:
    """Own-client and attached-client latency per delta, p50/p99, at each number of concurrent pairs."""
    from tests.pg import PostgresUnavailable, launch

    try:
        cluster = launch(fsync=True)
    except PostgresUnavailable as exc:
        return {"skipped": str(exc)}
    deltas, (low, high) = size["replicas_deltas"], size["replicas_gap_ms"]
    servers: list[Server] = []
    out: dict[str, Any] = {
        "deltas": deltas,
        "gap_ms": [low, high],
        "rounds": size["replicas_rounds"],
        "group_commit_ms": SHARED_INTERVAL_S * 1000,
    }
    try:
        url = cluster.new_database()
        for name in ("a", "b"):
            servers.append(Server(write_home(work / f"replicas-{name}", 1, url), 10))
        a, b = servers
        timeout = aiohttp.ClientTimeout(total=None)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as session:
            await _pair(session, a, b, f"paced {WARMUP_DELTAS} {low} {high}", None)  # pools, caches: not measured
            for turns in size["replicas_turns"]:
                samples = Samples()
                for _ in range(size["replicas_rounds"]):
                    prompt = f"paced {deltas} {low} {high}"
                    await asyncio.gather(*(_pair(session, a, b, prompt, samples) for _ in range(turns)))
                out[str(turns)] = samples.summary(turns * size["replicas_rounds"])
    finally:
        for server in servers:
            server.stop()
        cluster.destroy()
    return out


def report(result: dict[str, Any]) -> list[str]:
    """One line per concurrency: A's own client, B's attached client, and B − A per delta."""
    if "skipped" in result:
        return [f"replicas                   skipped: {result['skipped']}"]
    lines = []
    for key, r in result.items():
        if not key.isdigit():
            continue
        own, attached, diff = r["own"], r["attached"], r["difference"]
        lines.append(
            f"replicas.{key}_turns{'':<{15 - len(key)}}own client p50 {own['p50_ms']} / p99 {own['p99_ms']} ms, "
            f"attached on B p50 {attached['p50_ms']} / p99 {attached['p99_ms']} ms, B - A p50 {diff['p50_ms']} / "
            f"p99 {diff['p99_ms']} ms, min {diff['min_ms']} ms ({r['events']} deltas)"
        )
    return lines
