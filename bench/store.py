"""The `store` part of `python -m bench`: admission latency on the PostgreSQL store versus SQLite, in one run.

Four bench servers (`bench.server`: the reference gateway's plugin app on the scripted runtime), each a short
non-streaming chat turn per request, unkeyed and with a fresh Idempotency-Key:

    sqlite                    the default store (WAL, synchronous=NORMAL: no disk flush per commit)
    postgres                  a PostgreSQL database as a gateway uses it, the server at its defaults (fsync on,
                              synchronous_commit on: every commit waits for its WAL flush)
    postgres_round_trip_check the same with psycopg_pool's own per-borrow check (an empty query) instead of the
                              store's socket poll (`postgres_db.check_lent`)
    postgres_no_pool_check    the same without any per-borrow check: what a check costs
    postgres_async_commit     synchronous_commit=off for its connections: what the commits' WAL flushes cost

PostgreSQL is a temporary cluster this part starts itself (tests/pg.py: initdb + pg_ctl on a free loopback port, as
an unprivileged user when root), destroyed at the end; without server binaries the part reports why it skipped.
After a warm-up, rounds interleave the servers, so that a shared machine's changing load spreads over all of them.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

from .common import Server, admission_samples, p50_p99, write_home

LABELS = ("unkeyed", "keyed")
# name → (database: None = SQLite, else the libpq `options` of its connections; bench.server options)
CONFIGS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "sqlite": (None, ()),
    "postgres": ("", ()),
    "postgres_round_trip_check": ("", ("--pool-check", "round-trip")),
    "postgres_no_pool_check": ("", ("--pool-check", "none")),
    "postgres_async_commit": ("-c synchronous_commit=off", ()),
}


async def _check_costs(url: str, calls: int) -> dict[str, float]:
    """Microseconds per call of each per-borrow check on an idle, healthy connection (measured in this process)."""
    import psycopg
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    from hermes_api_plugin.store.postgres.db import Connection, check_lent

    checks: dict[str, Callable[[Connection], Awaitable[None]]] = {
        "socket_poll": check_lent,
        "round_trip": AsyncConnectionPool.check_connection,
    }
    out = {}
    async with await psycopg.AsyncConnection.connect(url, autocommit=True, row_factory=dict_row) as conn:
        for name, check in checks.items():
            started = time.perf_counter()
            for _ in range(calls):
                await check(conn)
            out[name] = round((time.perf_counter() - started) / calls * 1e6, 1)
    return out


def _url(base: str, options: str) -> str:
    return f"{base}?options={urllib.parse.quote(options)}" if options else base  # libpq decodes %20, not +


async def store(size: dict[str, Any], work: Path) -> dict[str, Any]:
    """p50/p99 per request for each configuration, and the ratios to SQLite."""
    from tests.pg import PostgresUnavailable, launch

    try:
        cluster = launch(fsync=True)
    except PostgresUnavailable as exc:
        return {"skipped": str(exc)}
    servers: dict[str, Server] = {}
    samples: dict[str, dict[str, list[float]]] = {name: {label: [] for label in LABELS} for name in CONFIGS}
    rounds, per_round = size["store_rounds"], size["store_requests"] // size["store_rounds"]
    try:
        check_us = await _check_costs(cluster.new_database(), size["store_requests"])
        for name, (options, server_options) in CONFIGS.items():
            url = None if options is None else _url(cluster.new_database(), options)
            servers[name] = Server(write_home(work / f"store-{name}", 1, url), 10, *server_options)
        timeout = aiohttp.ClientTimeout(total=None)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout) as session:
            for server in servers.values():  # pooled connections, caches, first-request costs: not measured
                for label in LABELS:
                    await admission_samples(session, server.url, label == "keyed", size["store_warmup"])
            for _ in range(rounds):
                for name, server in servers.items():
                    for label in LABELS:
                        samples[name][label] += await admission_samples(
                            session, server.url, label == "keyed", per_round
                        )
    finally:
        for server in servers.values():
            server.stop()
        cluster.destroy()
    out: dict[str, Any] = {"requests": rounds * per_round, "rounds": rounds, "warmup": size["store_warmup"]}
    for name in CONFIGS:
        out[name] = {label: p50_p99(samples[name][label]) for label in LABELS}
    out["postgres_over_sqlite"] = {
        label: {q: round(out["postgres"][label][q] / out["sqlite"][label][q], 2) for q in ("p50_ms", "p99_ms")}
        for label in LABELS
    }
    unchecked = out["postgres_no_pool_check"]["keyed"]["p50_ms"]
    out["pool_check_us_per_borrow"] = check_us
    out["pool_check_keyed_p50_ms"] = {  # what each check adds to the keyed p50, and its share of that p50
        kind: {
            "ms": round(out[name]["keyed"]["p50_ms"] - unchecked, 3),
            "share": round((out[name]["keyed"]["p50_ms"] - unchecked) / out[name]["keyed"]["p50_ms"], 3),
        }
        for kind, name in (("socket_poll", "postgres"), ("round_trip", "postgres_round_trip_check"))
    }
    return out


def report(result: dict[str, Any]) -> list[str]:
    """One line per configuration, then the ratios and the pool check's share."""
    if "skipped" in result:
        return [f"store                      skipped: {result['skipped']}"]
    lines = [
        f"store.{name:<26}unkeyed p50 {r['unkeyed']['p50_ms']} / p99 {r['unkeyed']['p99_ms']} ms, "
        f"keyed p50 {r['keyed']['p50_ms']} / p99 {r['keyed']['p99_ms']} ms"
        for name, r in ((name, result[name]) for name in CONFIGS)
    ]
    ratio = result["postgres_over_sqlite"]
    lines.append(
        f"store.ratio                PostgreSQL / SQLite: unkeyed p50 x{ratio['unkeyed']['p50_ms']} p99 "
        f"x{ratio['unkeyed']['p99_ms']}, keyed p50 x{ratio['keyed']['p50_ms']} p99 x{ratio['keyed']['p99_ms']}"
    )
    check, per_borrow = result["pool_check_keyed_p50_ms"], result["pool_check_us_per_borrow"]
    lines.append(
        f"store.pool_check           keyed p50 over no check: socket poll {check['socket_poll']['ms']} ms "
        f"({check['socket_poll']['share'] * 100:.1f} %), round trip {check['round_trip']['ms']} ms "
        f"({check['round_trip']['share'] * 100:.1f} %); per borrow: socket poll {per_borrow['socket_poll']} us, "
        f"round trip {per_borrow['round_trip']} us"
    )
    return lines
