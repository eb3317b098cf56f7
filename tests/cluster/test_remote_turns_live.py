"""Two real gateway processes on one PostgreSQL database (issue 15, part 4): `python -m hermes_api_plugin gateway`
twice (tests/live.py), each with its own Hermes home — so each logs the turns it executes in its own execution log
— and `api_server.store.lease_seconds: 2`. Nothing is mocked.

(a) W-5.2 across gateways: 20 concurrent keyed requests spread over both execute once;
(b) §5.3 attach across gateways: a keyed streaming retry on B while A runs the turn attaches: byte-identical
    records, the same ids (and the attach latency, printed);
(c) W-5.7 across gateways: kill -9 of A mid-turn: with B on the same host (same pid namespace) A's pid says it is gone at once; with B in
    a pid namespace of its own (as on another host) B attaches until A's lease runs out, then the attached stream
    ends unknown_execution and a retry gets 409 unknown_execution — never a second execution;
(d) a run started on A is read (GET, events with Last-Event-ID) and stopped from B; A's turn ends cancelled;
(e) a turn running for several lease periods on a live owner is never judged unknown.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
import signal
import statistics
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from tests.helpers import UNKNOWN, Reply, assert_error_envelope, live_request, parse_sse, wait_for
from tests.live import SCRIPTS, LiveGateway, executions, start_gateway, write_home

pytestmark = pytest.mark.slow  # real gateway processes, leases running out in real time

LEASE_S = 2
MARATHON_S = 5 * LEASE_S  # a turn of five lease periods
CHAT, RESPONSES = "/v1/chat/completions", "/v1/responses"
PACED = "".join(f"chunk {i:02d}; " for i in range(40))  # 40 deltas 25 ms apart: one second of streaming


def home(root: Path, store_url: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    script = yaml.safe_load((SCRIPTS / "chat.yaml").read_text(encoding="utf-8"))
    script["turns"][:0] = [
        {"match": "paced", "steps": [{"reasoning": "Pacing myself."}, {"sleep": 0.3}, {"text": PACED}]},
        {"match": "crawl", "steps": [{"reasoning": "Crawling along."}, {"sleep": 8}, {"text": "Crawled."}]},
        {"match": "marathon", "steps": [{"reasoning": "A long one."}, {"sleep": MARATHON_S}, {"text": "Made it."}]},
        {"match": "long", "steps": [{"reasoning": "Running long."}, {"sleep": 600}, {"text": "never"}]},
    ]
    script["options"] = {"chunk_chars": 9, "delay_ms": 25, "execution_log": str(root / "home" / "executions.jsonl")}
    path = root / "script.yaml"
    path.write_text(yaml.safe_dump(script, sort_keys=False), encoding="utf-8")
    config = {"agent": {"script": str(path)}, "api_server": {"store": {"lease_seconds": LEASE_S}}}
    return write_home(root / "home", env={"API_SERVER_STORE_URL": store_url}, script=None, config=config)


Start = Callable[..., LiveGateway]


@pytest.fixture
def start(postgres_url: str, tmp_path: Path) -> Iterator[Start]:
    """`start(name, prefix=())`: a gateway on the test's database; stopped (or killed) after the test, before the
    database is dropped."""
    started: list[LiveGateway] = []

    def go(name: str, prefix: Sequence[str] = ()) -> LiveGateway:
        live = start_gateway(home(tmp_path / name, postgres_url), prefix=prefix)
        started.append(live)
        return live

    yield go
    for live in started:
        killed = live.proc.poll() is not None
        code = live.stop(timeout=15)
        if not killed:  # a clean shutdown: drained, lease released, nothing logged as broken
            output = live.output()
            assert code == 0 and "Traceback" not in output, output[-3000:]
            assert "could not" not in output, output[-3000:]


def executed(gateways: Sequence[LiveGateway], text: str) -> int:
    return sum(1 for g in gateways for e in executions(g.home) if text in json.dumps(e["input"]))


def chat(text: str, *, stream: bool) -> dict[str, Any]:
    return {"model": "hermes-agent", "stream": stream, "messages": [{"role": "user", "content": text}]}


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        yield session


class Timed:
    """An SSE stream read to its end, with the arrival time of every complete record."""

    def __init__(self) -> None:
        self.raw = b""
        self.arrivals: list[float] = []
        self.status = 0
        self.headers: Any = {}

    async def read(self, resp: aiohttp.ClientResponse, until: bytes | None = None) -> None:
        self.status, self.headers = resp.status, resp.headers
        while until is None or until not in self.raw:
            piece = await resp.content.readany()
            if not piece:
                return
            now = time.monotonic()
            self.raw += piece
            complete = len(parse_sse(self.raw[: self.raw.rfind(b"\n\n") + 2])[0]) if b"\n\n" in self.raw else 0
            self.arrivals += [now] * (complete - len(self.arrivals))

    @property
    def reply(self) -> Reply:
        return Reply(self.status, self.headers, self.raw)


def auth(live: LiveGateway, key: str | None = None) -> dict[str, str]:
    return {**live.headers, **({"Idempotency-Key": key} if key else {})}


# -- (a) ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_twenty_concurrent_keyed_requests_spread_over_two_gateways_execute_once(start: Start, stream: bool) -> None:
    a, b = start("a"), start("b")
    key, text = "k-" + secrets.token_hex(8), f"use tool {secrets.token_hex(4)}"
    with ThreadPoolExecutor(20) as pool:
        replies = list(
            pool.map(
                lambda live: live_request(
                    live, "POST", CHAT, chat(text, stream=stream), headers={"Idempotency-Key": key}
                ),
                [a, b] * 10,
            )
        )
    assert [r.status for r in replies] == [200] * 20, [r.raw[:200] for r in replies if r.status != 200]
    assert executed((a, b), text) == 1
    assert len({json.dumps(r.answer()) for r in replies}) == 1, "twenty identical answers"
    assert len({r.run_id for r in replies}) == 1
    assert sorted(r.replayed for r in replies) == [False] + [True] * 19


# -- (b) ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [CHAT, RESPONSES], ids=["chat", "responses"])
async def test_a_keyed_stream_retry_on_b_attaches_to_a_with_identical_records(
    start: Start, http: aiohttp.ClientSession, path: str
) -> None:
    a, b = start("a"), start("b")
    key, text = "k-" + secrets.token_hex(8), f"paced {secrets.token_hex(4)}"
    payload = chat(text, stream=True) if path == CHAT else {"model": "hermes-agent", "stream": True, "input": text}
    first, retry = Timed(), Timed()
    async with http.post(a.url + path, json=payload, headers=auth(a, key)) as resp_a:
        await first.read(resp_a, until=b"Pacing")
        async with http.post(b.url + path, json=payload, headers=auth(b, key)) as resp_b:
            await asyncio.gather(first.read(resp_a), retry.read(resp_b))
    one, two = first.reply, retry.reply
    assert one.status == two.status == 200
    assert two.replayed and not one.replayed
    assert two.run_id == one.run_id and two.headers["X-Hermes-Session-Id"] == one.headers["X-Hermes-Session-Id"]
    assert two.records == one.records, "byte for byte: the same ids, sequence numbers and content"
    assert two.answer_text("chat" if path == CHAT else "responses") == PACED
    assert executed((a, b), text) == 1
    # B followed live: compare when the same record arrived on both streams (the tail that was live for both)
    tail = [t2 - t1 for t1, t2 in zip(first.arrivals[-30:], retry.arrivals[-30:], strict=True)]
    print(
        f"\nattach latency B - A over the last 30 records: p50 {statistics.median(tail) * 1000:.1f} ms, "
        f"max {max(tail) * 1000:.1f} ms"
    )
    assert statistics.median(tail) < 0.5


# -- (c) ------------------------------------------------------------------------------------------------------


def crawl(live: LiveGateway, key: str, text: str) -> subprocess.Popen[bytes]:
    """A keyed chat stream of a "crawl" turn on `live`, read by curl in the background (killed with the gateway)."""
    return subprocess.Popen(
        ["curl", "-sN", "-H", f"Authorization: {live.headers['Authorization']}", "-H", f"Idempotency-Key: {key}",
         "-H", "Content-Type: application/json", "-d", json.dumps(chat(text, stream=True)), live.url + CHAT],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def kill_mid_turn(a: LiveGateway, key: str, text: str) -> None:
    client = crawl(a, key, text)
    try:
        wait_for(lambda: executed((a,), text) == 1, what="A started the turn")
        time.sleep(0.3)  # its first events are journaled
        a.stop(signal.SIGKILL)
    finally:
        client.wait(10)


def test_kill_9_of_the_owner_on_this_host_is_unknown_execution_at_once_on_the_other(start: Start) -> None:
    """Same host, same pid namespace: B reads A's pid in A's lease and sees the process gone — no need to wait for the
    lease to run out. 409 unknown_execution at once, the journal closed, never a second execution."""
    a, b = start("a"), start("b")
    key, text = "k-" + secrets.token_hex(8), f"crawl {secrets.token_hex(4)}"
    kill_mid_turn(a, key, text)
    reply = live_request(b, "POST", CHAT, chat(text, stream=False), headers={"Idempotency-Key": key})
    assert reply.status == 409 and reply.json() == UNKNOWN
    assert executed((a, b), text) == 1


def other_pid_namespace() -> Sequence[str]:
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1): B cannot get a pid namespace of its own")
    probe = subprocess.run(["unshare", "--pid", "--fork", "--kill-child", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"unshare --pid is not allowed here: {probe.stderr.decode().strip()}")
    return ("unshare", "--pid", "--fork", "--kill-child")


async def test_kill_9_of_the_owner_elsewhere_attaches_until_its_lease_runs_out_then_is_unknown(
    start: Start, http: aiohttp.ClientSession
) -> None:
    """A in a pid namespace of its own, as on another host: B cannot see A's process, only its lease. A retry before
    the lease ran out attaches (200, the journal so far, no second execution); when the lease runs out B settles
    the turn — the attached stream ends with the unknown_execution chunk — and the next retry gets 409."""
    a = start("a", prefix=other_pid_namespace())
    b = start("b")
    key, text = "k-" + secrets.token_hex(8), f"crawl {secrets.token_hex(4)}"
    kill_mid_turn(a, key, text)
    killed_at = time.monotonic()
    attached = Timed()
    async with http.post(b.url + CHAT, json=chat(text, stream=True), headers=auth(b, key)) as resp:
        await attached.read(resp, until=b"Crawling")
        answered_after = time.monotonic() - killed_at
        await attached.read(resp)
    reply = attached.reply
    ended_after = time.monotonic() - killed_at
    assert answered_after < LEASE_S, "the retry attached while A's lease still ran"
    assert reply.status == 200 and reply.replayed
    finish = reply.chunks[-1]
    assert finish["choices"][0]["finish_reason"] == "error" and finish["error"]["code"] == "unknown_execution"
    assert ended_after >= LEASE_S - 0.7 - 0.3, "it ended when the lease ran out, not before"
    again = live_request(b, "POST", CHAT, chat(text, stream=False), headers={"Idempotency-Key": key})
    assert again.status == 409 and again.json() == UNKNOWN
    assert executed((a, b), text) == 1


# -- (d) ------------------------------------------------------------------------------------------------------


async def test_a_run_started_on_a_is_read_followed_and_stopped_from_b(
    start: Start, http: aiohttp.ClientSession
) -> None:
    a, b = start("a"), start("b")
    created = live_request(a, "POST", "/v1/runs", {"input": "long run"})
    assert created.status == 202, created.raw
    run_id = created.json()["run_id"]
    wait_for(lambda: live_request(b, "GET", f"/v1/runs/{run_id}").json().get("last_event") == "reasoning.delta",
             what="B sees the run's reasoning")  # fmt: skip
    run = live_request(b, "GET", f"/v1/runs/{run_id}").json()
    assert (run["status"], run["output"], run["error"]) == ("running", "", None)
    events = Timed()
    async with http.get(f"{b.url}/v1/runs/{run_id}/events", headers={**auth(b), "Last-Event-ID": "1"}) as resp:
        reading = asyncio.ensure_future(events.read(resp))
        await asyncio.sleep(0.5)
        stopped = live_request(b, "POST", f"/v1/runs/{run_id}/stop")
        assert stopped.status == 200 and stopped.json() == {"run_id": run_id, "status": "stopping"}
        await asyncio.wait_for(reading, 15)
    names = [e["event"] for e in events.reply.events]
    assert names[-1] == "run.cancelled" and int(events.reply.records[0].id or 0) >= 2, events.raw
    for live in (a, b):
        assert live_request(live, "GET", f"/v1/runs/{run_id}").json()["status"] == "cancelled"
    full = live_request(b, "GET", f"/v1/runs/{run_id}/events")
    assert full.events[1:] == live_request(a, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "1"}).events
    missing = live_request(b, "GET", "/v1/runs/run_0123456789abcdef0123456789abcdef")
    assert_error_envelope(missing, 404, "run_not_found")


# -- (e) ------------------------------------------------------------------------------------------------------


async def test_a_turn_running_for_several_lease_periods_is_never_judged_unknown(
    start: Start, http: aiohttp.ClientSession
) -> None:
    """A's turn runs for MARATHON_S (several lease periods); meanwhile both gateways sweep for gone owners after every
    lease renewal, and every LEASE_S a keyed stream retry on B attaches (200, replayed, A's journal — never the
    unknown_execution chunk) and leaves again, and GET /v1/runs/{id} on B says running. The turn completes; one
    execution."""
    a, b = start("a"), start("b")
    key, text = "k-" + secrets.token_hex(8), f"marathon {secrets.token_hex(4)}"
    first = Timed()
    async with http.post(a.url + CHAT, json=chat(text, stream=True), headers=auth(a, key)) as resp_a:
        await first.read(resp_a, until=b"A long")
        run_id = resp_a.headers["X-Hermes-Run-Id"]
        started = time.monotonic()
        probes = 0
        while time.monotonic() - started < MARATHON_S - 2 * LEASE_S:
            await asyncio.sleep(LEASE_S)
            probe = Timed()
            async with http.post(b.url + CHAT, json=chat(text, stream=True), headers=auth(b, key)) as resp_b:
                await probe.read(resp_b, until=b"A long")
            assert probe.status == 200 and probe.headers["Idempotency-Replayed"] == "true"
            assert b"unknown_execution" not in probe.raw
            assert live_request(b, "GET", f"/v1/runs/{run_id}").json()["status"] == "running"
            probes += 1
        await first.read(resp_a)
    assert probes >= 3, "the retries covered several lease periods"
    assert first.reply.chat_text()[0] == "Made it."
    retry = live_request(b, "POST", CHAT, chat(text, stream=False), headers={"Idempotency-Key": key})
    assert retry.status == 200 and retry.replayed
    assert retry.json()["choices"][0]["message"]["content"] == "Made it."
    assert executed((a, b), text) == 1
