"""Idempotent admissions across `kill -9` of the real gateway process (WIRE.md §5.3, §5.4; checklist W-5.7, W-5.12).

Every gateway is the real `python -m hermes_api_plugin gateway` process (tests/live.py); a crash is SIGKILL and
a restart is a new process on the same Hermes home. Executions are counted in the scripted runtime's execution
log: every request puts its idempotency key into the user text, so each log line names its key.
"""

from __future__ import annotations

import collections
import http.client
import json
import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from multidict import CIMultiDict, CIMultiDictProxy

from tests.helpers import (
    CHAT,
    CONFLICT,
    PATHS,
    RESPONSE_TERMINALS,
    RESPONSES,
    RESTART_ERROR,
    RUN_ID,
    SURFACES,
    UNKNOWN,
    Reply,
    assert_error_envelope,
    complete_records,
    live_request,
    wait_for,
)
from tests.live import SCRIPTS, LiveGateway, executions, start_gateway, write_home

# slow (left out by ./test --fast): real gateway processes killed with SIGKILL and restarted; 50 kill points.
pytestmark = pytest.mark.slow

CRAWL_SECONDS = 4.0
QUICK_ANSWER = "Quick answer."
# the keyed turns the `crashed` fixture leaves running when it kills the gateway
CRASHED_REQUESTS = ("chat-json", "chat-sse", "responses-json", "responses-sse", "responses-background")


# -- homes, requests ---------------------------------------------------------------------------------------


def crash_home(root: Path) -> Path:
    """A Hermes home whose script is tests/scripts/chat.yaml plus two turns: "crawl" (reasoning, a
    CRAWL_SECONDS sleep, text: reliably running when the gateway is killed) and "quick" (~0.5 s in all)."""
    root.mkdir(parents=True, exist_ok=True)
    home = root / "home"
    script = yaml.safe_load((SCRIPTS / "chat.yaml").read_text(encoding="utf-8"))
    script["turns"][:0] = [
        {"match": "crawl", "steps": [{"reasoning": "Crawling along."}, {"sleep": CRAWL_SECONDS}, {"text": "Crawled."}]},
        {
            "match": "quick",
            "steps": [
                {"reasoning": "Quick thought."},
                {"sleep": 0.45},
                {"text": QUICK_ANSWER},
                {"usage": {"prompt_tokens": 4, "completion_tokens": 2}},
            ],
        },
    ]
    script["options"] = {"chunk_chars": 8, "delay_ms": 2, "execution_log": str(home / "executions.jsonl")}
    path = root / "crash.yaml"
    path.write_text(yaml.safe_dump(script, sort_keys=False), encoding="utf-8")
    return write_home(home, script=None, config={"agent": {"script": str(path)}})


def payload(surface: str, text: str, *, stream: bool, **extra: Any) -> dict[str, Any]:
    if surface == "chat":
        return {"model": "hermes-agent", "stream": stream, "messages": [{"role": "user", "content": text}], **extra}
    return {"model": "hermes-agent", "stream": stream, "input": text, **extra}


def executions_of(home: Path, key: str) -> int:
    return sum(1 for e in executions(home) if key in json.dumps(e["input"], ensure_ascii=False))


class Sent:
    """A keyed POST running in a thread, reading whatever arrives until the answer ends or the gateway dies."""

    def __init__(self, live: LiveGateway, path: str, body: dict[str, Any], key: str) -> None:
        self.surface = "chat" if path == CHAT else "responses"
        self.stream = bool(body.get("stream"))
        self.status: int | None = None
        self.headers: CIMultiDictProxy[str] = CIMultiDictProxy(CIMultiDict())
        self.raw = b""
        self.error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(live.host, live.port, live.headers, path, body, key), daemon=True
        )
        self._thread.start()

    def _run(self, host: str, port: int, auth: dict[str, str], path: str, body: dict[str, Any], key: str) -> None:
        conn = http.client.HTTPConnection(host, port, timeout=30)
        try:
            conn.request(
                "POST",
                path,
                body=json.dumps(body).encode(),
                headers={**auth, "Content-Type": "application/json", "Idempotency-Key": key},
            )
            resp = conn.getresponse()
            self.headers = CIMultiDictProxy(CIMultiDict(resp.getheaders()))
            self.status = resp.status
            while True:
                piece = resp.read1(65536)
                if not piece:
                    break
                self.raw += piece
        except (OSError, http.client.HTTPException) as exc:  # the gateway was killed under the request
            self.error = exc
        finally:
            conn.close()

    def join(self, timeout: float = 15.0) -> None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the request thread did not end after the gateway died"

    @property
    def complete(self) -> bool:
        """The client received the whole answer (so the turn had settled before the kill)."""
        if self.status != 200:
            return False
        if self.stream:
            if self.surface == "chat":
                return self.raw.endswith(b"data: [DONE]\n\n")
            return any(f"event: {t}\n".encode() in self.raw for t in RESPONSE_TERMINALS) and self.raw.endswith(b"\n\n")
        try:
            json.loads(self.raw)
        except ValueError:
            return False
        return True

    @property
    def reply(self) -> Reply:
        """What the client received before the answer ended or the gateway died."""
        return Reply(self.status or 0, self.headers, self.raw)


def keyed(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


def check_unknown_chunk(reply: Reply) -> None:
    """§3.5, §5.3: a keyed chat stream retry of a turn a dead process left running: 200, role chunk, the
    unknown_execution finish chunk (type conflict_error), [DONE]; no run id (nothing was admitted)."""
    assert reply.status == 200, reply.raw
    assert reply.raw.endswith(b"data: [DONE]\n\n")
    records = reply.records
    assert len(records) == 3 and records[-1].data == "[DONE]"
    role, finish = records[0].json(), records[1].json()
    assert role["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert finish["id"] == role["id"]
    assert finish["choices"] == [{"index": 0, "delta": {}, "finish_reason": "error"}]
    assert finish["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    assert finish["error"] == UNKNOWN["error"]
    assert finish["hermes"] == {"completed": False, "partial": False, "failed": True, "error_code": "unknown_execution"}
    assert "x-hermes-run-id" not in reply.headers


# -- W-5.7, W-5.12: one kill -9 during five keyed turns ------------------------------------------------------


@dataclass
class Crashed:
    live: LiveGateway
    home: Path
    requests: dict[str, tuple[str, dict[str, Any], str]]  # name → (path, body, key)
    firsts: dict[str, Sent]
    background: dict[str, Any]


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crashed]:
    """Five keyed "crawl" turns running — chat JSON and stream, Responses JSON and stream (stored) and a stored
    background Response — when the gateway is killed with SIGKILL; then a new gateway on the same home."""
    home = crash_home(tmp_path_factory.mktemp("crash"))
    keys = {name: f"crash-{name}-{i}" for i, name in enumerate(CRASHED_REQUESTS)}
    requests = {
        "chat-json": (CHAT, payload("chat", f"crawl {keys['chat-json']}", stream=False)),
        "chat-sse": (CHAT, payload("chat", f"crawl {keys['chat-sse']}", stream=True)),
        "responses-json": (RESPONSES, payload("responses", f"crawl {keys['responses-json']}", stream=False)),
        "responses-sse": (RESPONSES, payload("responses", f"crawl {keys['responses-sse']}", stream=True)),
        "responses-background": (
            RESPONSES,
            payload("responses", f"crawl {keys['responses-background']}", stream=False, background=True),
        ),
    }
    before = start_gateway(home)
    firsts: dict[str, Sent] = {}
    try:
        for name in ("chat-json", "chat-sse", "responses-json", "responses-sse"):
            path, body = requests[name]
            firsts[name] = Sent(before, path, body, keys[name])
        path, body = requests["responses-background"]
        background = live_request(before, "POST", path, body, keyed(keys["responses-background"]))
        assert background.status == 200, background.raw
        wait_for(
            lambda: all(executions_of(home, key) for key in keys.values()), timeout=15, what="every turn executing"
        )
        time.sleep(0.6)  # a few journal group commits: the turns' first events are durable
    finally:
        before.stop(signal.SIGKILL)
    assert before.proc.returncode == -signal.SIGKILL
    for sent in firsts.values():
        sent.join()
        assert not sent.complete, "the kill must land while the turn runs"
    with_keys = {name: (path, body, keys[name]) for name, (path, body) in requests.items()}
    after = start_gateway(home)
    try:
        yield Crashed(after, home, with_keys, firsts, background.json())
    finally:
        after.stop()


@pytest.mark.parametrize("name", ["chat-json", "chat-sse"])
def test_keyed_chat_retry_after_kill_is_unknown_execution(crashed: Crashed, name: str) -> None:
    """W-5.7, §5.3, §5.4: after kill -9 during a keyed chat turn and a restart, the retry with the same key and
    body gets 409 unknown_execution (JSON) or the unknown_execution chunk (stream), whichever mode the first
    request used; the turn ran exactly once."""
    path, body, key = crashed.requests[name]
    for stream in (False, True):
        retry = live_request(crashed.live, "POST", path, {**body, "stream": stream}, keyed(key))
        if stream:
            check_unknown_chunk(retry)
        else:
            assert_error_envelope(retry, 409, **UNKNOWN["error"])
    assert executions_of(crashed.home, key) == 1


@pytest.mark.parametrize("name", ["responses-json", "responses-sse", "responses-background"])
def test_keyed_responses_retry_after_kill_is_unknown_execution(crashed: Crashed, name: str) -> None:
    """W-5.7, §5.3: the Responses retry of a turn the killed gateway left running gets 409 unknown_execution in
    both modes, before any head; nothing re-executes."""
    path, body, key = crashed.requests[name]
    for stream in (False, True):
        retry = live_request(crashed.live, "POST", path, {**body, "stream": stream}, keyed(key))
        assert_error_envelope(retry, 409, **UNKNOWN["error"])
    assert executions_of(crashed.home, key) == 1


@pytest.mark.parametrize("name", ["chat-json", "responses-json"])
def test_changed_request_under_a_crashed_key_is_admission_conflict(crashed: Crashed, name: str) -> None:
    """§5.3: a different request under a key left unknown conflicts (409 admission_conflict); nothing runs."""
    path, _, key = crashed.requests[name]
    surface = "chat" if path == CHAT else "responses"
    changed = payload(surface, f"crawl {key} but different", stream=False)
    retry = live_request(crashed.live, "POST", path, changed, keyed(key))
    assert_error_envelope(retry, 409, **CONFLICT["error"])
    assert executions_of(crashed.home, key) == 1


def test_keyed_stored_responses_running_at_kill_settle_failed_unknown_execution(crashed: Crashed) -> None:
    """W-5.12 (Responses part), §5.4, §4.4: the keyed stored background Response (and the keyed stored foreground
    stream) running at kill -9 read back after the restart as `failed` with error.code unknown_execution; GET
    ?stream=true ends with the matching response.failed."""
    streamed_id = complete_records(crashed.firsts["responses-sse"].raw)[0].json()["response"]["id"]
    assert crashed.background["status"] in ("queued", "in_progress")
    for response_id in (crashed.background["id"], streamed_id):
        got = live_request(crashed.live, "GET", f"{RESPONSES}/{response_id}")
        assert got.status == 200, got.raw
        obj = got.json()
        assert obj["status"] == "failed"
        assert obj["error"] == RESTART_ERROR
        replay = live_request(crashed.live, "GET", f"{RESPONSES}/{response_id}?stream=true")
        assert replay.status == 200
        records = replay.records
        assert [r.json()["sequence_number"] for r in records] == list(range(len(records)))
        assert records[-1].event == "response.failed"
        assert records[-1].json()["response"] == obj
    assert live_request(crashed.live, "GET", f"{RESPONSES}/{crashed.background['id']}").json()["background"] is True


def test_nothing_left_running_by_the_killed_gateway_is_executed_again(crashed: Crashed) -> None:
    """W-5.7, §5.4: the restart never re-executes a turn the killed process left running: every key has exactly
    one execution line."""
    executed = {name: executions_of(crashed.home, key) for name, (_, _, key) in crashed.requests.items()}
    assert executed == dict.fromkeys(CRASHED_REQUESTS, 1)


# -- W-5.7: fifty randomized kill points ------------------------------------------------------------------


SEED = 5_070_050
KILL_POINTS = 50
LANES = 2  # independent homes killed and restarted side by side, to keep the test near one minute
MAX_DELAY_S = 1.1  # the "quick" turn takes ~0.5 s: later kills land after it settled


@dataclass(frozen=True)
class KillPoint:
    index: int
    key: str
    surface: str
    stream: bool
    delay: float

    @property
    def body(self) -> dict[str, Any]:
        return payload(self.surface, f"quick {self.key}", stream=self.stream)


@dataclass
class Outcome:
    point: KillPoint
    first: Sent
    retry: Reply
    executions: int

    @property
    def kind(self) -> str:
        if self.retry.status == 409:
            return "unknown"
        if self.retry.status == 200:
            return "replay" if self.retry.replayed else "fresh"
        return f"status {self.retry.status}"


def plan_kill_points(rng: random.Random) -> list[KillPoint]:
    points = []
    for i in range(KILL_POINTS):
        key = f"kp{i:02d}x{rng.getrandbits(40):010x}"
        surface = rng.choice(SURFACES)
        stream = rng.random() < 0.5
        delay = 0.0 if i % 10 == 0 else round(rng.uniform(0.0, MAX_DELAY_S), 3)
        points.append(KillPoint(i, key, surface, stream, delay))
    return points


def run_lane(root: Path, points: list[KillPoint]) -> tuple[Path, list[Outcome]]:
    """For each point: send the keyed request, SIGKILL the gateway after the point's delay, restart on the same
    home, retry with the same key (JSON). The restart for the retry serves the next point."""
    home = crash_home(root)
    live = start_gateway(home)
    outcomes: list[Outcome] = []
    try:
        for point in points:
            first = Sent(live, PATHS[point.surface], point.body, point.key)
            time.sleep(point.delay)
            live.stop(signal.SIGKILL)
            first.join()
            live = start_gateway(home)
            retry = live_request(live, "POST", PATHS[point.surface], {**point.body, "stream": False}, keyed(point.key))
            outcomes.append(Outcome(point, first, retry, executions_of(home, point.key)))
    finally:
        live.stop()
    return home, outcomes


def check_outcome(o: Outcome) -> None:
    where = f"kill point {o.point}: retry {o.retry.status} {o.retry.raw[:200]!r}, {o.executions} execution(s)"
    if o.kind == "unknown":
        assert o.retry.json() == UNKNOWN, where
        assert o.executions <= 1, where
        assert not o.first.complete, f"{where}: a client that got the whole answer must get a replay"
    elif o.kind == "replay":
        assert o.executions == 1, where
        assert RUN_ID.match(o.retry.headers["x-hermes-run-id"]), where
        assert o.retry.answer_text(o.point.surface) == QUICK_ANSWER, where
        if o.first.complete:
            assert o.retry.headers["x-hermes-run-id"] == o.first.headers["x-hermes-run-id"], where
            if not o.point.stream:
                assert o.retry.json() == json.loads(o.first.raw), where
            assert o.first.reply.answer_text(o.point.surface) == QUICK_ANSWER, where
    elif o.kind == "fresh":  # the kill landed before the reservation committed: this is the first execution
        assert o.executions == 1, where
        assert not o.first.complete, where
        assert o.retry.answer_text(o.point.surface) == QUICK_ANSWER, where
    else:
        raise AssertionError(where)


def test_fifty_random_kill_points_never_execute_a_keyed_turn_twice(tmp_path: Path) -> None:
    """W-5.7, §5.3, §5.4 (issue acceptance): 50 keyed requests (chat or Responses, JSON or stream, seeded), each
    followed by kill -9 after a random delay in [0, 1.1 s] and a restart on the same home, then a retry with the
    same key. The retry is 409 unknown_execution (killed mid-turn), a replay with Idempotency-Replayed: true
    (killed after it settled; always so when the client had the whole answer) or a first execution (killed
    before the reservation committed). No key ever executes twice."""
    points = plan_kill_points(random.Random(SEED))
    lanes = [points[i::LANES] for i in range(LANES)]
    started = time.monotonic()
    with ThreadPoolExecutor(LANES) as pool:
        futures = [pool.submit(run_lane, tmp_path / f"lane{i}", lane) for i, lane in enumerate(lanes)]
        results = [f.result() for f in futures]
    elapsed = time.monotonic() - started
    outcomes = sorted((o for _, lane in results for o in lane), key=lambda o: o.point.index)
    assert len(outcomes) == KILL_POINTS
    for outcome in outcomes:
        check_outcome(outcome)
    per_key = collections.Counter()
    for home, _ in results:
        for line in executions(home):
            text = json.dumps(line["input"])
            per_key.update(p.key for p in points if p.key in text)
    twice = {k: n for k, n in per_key.items() if n > 1}
    assert not twice, f"keys executed more than once: {twice}"
    kinds = collections.Counter(o.kind for o in outcomes)
    assert kinds["unknown"] >= 1 and kinds["replay"] >= 1, f"kill points did not spread: {kinds}"
    assert set(kinds) <= {"unknown", "replay", "fresh"}, kinds
    print(f"kill points: {dict(kinds)} in {elapsed:.1f} s")


def test_issue_20_a_keyed_retry_after_kill_does_not_wait_for_an_unreaped_zombie_owner(tmp_path: Path) -> None:
    """Issue 20 (zombie owners), §5.3: the killed gateway is left an unreaped zombie (its parent, this test, does not
    wait for it), so kill(pid, 0) still finds its pid. The keyed retry on a new gateway on the same home is 409
    unknown_execution at once, not after the killed owner's 15 s lease runs out; nothing re-executes."""
    home = crash_home(tmp_path)
    key = "zombie-owner-1"
    path, body = CHAT, payload("chat", f"crawl {key}", stream=False)
    before = start_gateway(home)
    try:
        first = Sent(before, path, body, key)
        wait_for(lambda: executions_of(home, key) == 1, timeout=15, what="the turn executing")
        time.sleep(0.6)  # a journal group commit: the admission is durable
        os.kill(before.proc.pid, signal.SIGKILL)  # no wait(): the process stays a zombie of this test
        first.join()
        stat = Path(f"/proc/{before.proc.pid}/stat")
        wait_for(lambda: stat.read_bytes().rsplit(b")", 1)[1].split()[0] == b"Z", timeout=10, what="a zombie")
        after = start_gateway(home)
        try:
            started = time.monotonic()
            retry = live_request(after, "POST", path, body, keyed(key))
            elapsed = time.monotonic() - started
            assert_error_envelope(retry, 409, **UNKNOWN["error"])
            assert elapsed < 8.0, f"the retry waited {elapsed:.1f} s for a zombie's lease"
            assert executions_of(home, key) == 1
        finally:
            after.stop()
    finally:
        before.stop(signal.SIGKILL)  # reaps the zombie
