"""Stored Responses across gateway restarts, crashes and dropped connections (WIRE.md §4.6, §4.9, §5.4, §5.5).

Every gateway is the real `python -m hermes_api_plugin gateway` process (tests/live.py). A restart is a
second process on the same Hermes home; a crash is SIGKILL. Plain stdlib HTTP (http.client) so a stream can
be read record by record and its connection dropped at a chosen sequence number.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import sqlite3
import stat
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import (
    MODEL,
    RESPONSE_TERMINALS,
    RESTART_ERROR,
    TOOL_RESULT,
    USAGE_KEYS,
    USE_TOOL_ANSWER,
    Reply,
    SseRecord,
    execution_for,
    live_request,
    parse_sse,
    wait_for,
)
from tests.live import SCRIPTS, LiveGateway, start_gateway, write_home

# slow (left out by ./test --fast): real gateway processes restarted and killed with SIGKILL.
pytestmark = pytest.mark.slow

INSTRUCTIONS = "Answer in one sentence."


# -- HTTP helpers ----------------------------------------------------------------------------------------


def create(live: LiveGateway, **body: Any) -> Reply:
    reply = live_request(live, "POST", "/v1/responses", {"model": MODEL, **body})
    assert reply.status == 200, reply.raw
    return reply


def stream_of(live: LiveGateway, response_id: str, starting_after: int | None = None) -> list[SseRecord]:
    query = "?stream=true" + (f"&starting_after={starting_after}" if starting_after is not None else "")
    reply = live_request(live, "GET", f"/v1/responses/{response_id}{query}")
    assert reply.status == 200, reply.raw
    records = reply.records
    assert all(r.id is None for r in records), "W-2.2: no id: lines on Responses streams"
    return records


def get_object(live: LiveGateway, response_id: str) -> dict[str, Any]:
    reply = live_request(live, "GET", f"/v1/responses/{response_id}")
    assert reply.status == 200, reply.raw
    return reply.json()


def view(records: list[SseRecord]) -> list[tuple[str | None, Any]]:
    return [(r.event, r.json()) for r in records]


def seqs(records: list[SseRecord]) -> list[int]:
    return [r.json()["sequence_number"] for r in records]


@dataclass
class Dropped:
    """The part of a stream read before the connection was dropped."""

    records: list[SseRecord]
    headers: dict[str, str]

    @property
    def response_id(self) -> str:
        return self.records[0].json()["response"]["id"]

    @property
    def last_seq(self) -> int:
        return self.records[-1].json()["sequence_number"]


def post_and_drop(live: LiveGateway, body: dict[str, Any], until_seq: int, *, kill: bool = False) -> Dropped:
    """POST a streaming request, read whole records until `sequence_number >= until_seq`, then drop the TCP
    connection (or SIGKILL the gateway first when `kill`)."""
    conn = http.client.HTTPConnection(live.host, live.port, timeout=30)
    try:
        conn.request(
            "POST",
            "/v1/responses",
            body=json.dumps({"model": MODEL, **body}).encode(),
            headers={**live.headers, "Content-Type": "application/json"},
        )
        resp = conn.getresponse()
        assert resp.status == 200
        headers = {k.lower(): v for k, v in resp.getheaders()}
        raw = b""
        while True:
            line = resp.readline()
            assert line, f"stream ended before sequence_number {until_seq}: {raw[-300:]!r}"
            raw += line
            if line == b"\n" and raw.endswith(b"\n\n"):
                records, _ = parse_sse(raw)
                if records and records[-1].json()["sequence_number"] >= until_seq:
                    break
        if kill:
            live.proc.kill()
        resp.close()
    finally:
        conn.close()
    return Dropped(records, headers)


@contextlib.contextmanager
def running(home: Path) -> Iterator[LiveGateway]:
    live = start_gateway(home)
    try:
        yield live
    finally:
        live.stop()


def slow_home(root: Path) -> Path:
    """A home whose script plays the test turns slowly (2 chars per 30 ms): "use tool" takes ~1.5 s."""
    root.mkdir(parents=True, exist_ok=True)
    home = root / "home"
    script = yaml.safe_load((SCRIPTS / "chat.yaml").read_text(encoding="utf-8"))
    script["options"] = {"chunk_chars": 2, "delay_ms": 30, "execution_log": str(home / "executions.jsonl")}
    path = root / "slow.yaml"
    path.write_text(yaml.safe_dump(script, sort_keys=False), encoding="utf-8")
    return write_home(home, script=None, config={"agent": {"script": str(path)}})


def history_view(history: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    view_ = []
    for message in history:
        text = "".join(p.get("text", "") for p in message.get("content") or [] if isinstance(p, dict))
        calls = tuple((c["id"], c["function"]["name"]) for c in message.get("tool_calls") or [])
        view_.append((message["role"], text, calls, message.get("tool_call_id")))
    return view_


def tool_pair(output: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    calls = [i for i in output if i["type"] == "function_call"]
    results = [i for i in output if i["type"] == "function_call_output"]
    assert len(calls) == 1 and len(results) == 1, output
    return calls[0], results[0]


# -- graceful restart between two turns of a chain (§4.6, §4.7, §5.4) -----------------------------------


@dataclass
class Restarted:
    home: Path
    live: LiveGateway
    first: list[SseRecord]
    first_headers: dict[str, str]
    conversation: str
    conversation_first: dict[str, Any]
    executions_before: int
    exit_code: int

    @property
    def first_id(self) -> str:
        return self.first[0].json()["response"]["id"]

    @property
    def first_terminal(self) -> dict[str, Any]:
        return self.first[-1].json()["response"]


@pytest.fixture(scope="module")
def restarted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restarted]:
    """Turn 1 (streamed "use tool" with instructions) and a conversation's first turn, then SIGTERM and a new
    gateway process on the same home."""
    home = write_home(tmp_path_factory.mktemp("restart") / "home")
    conversation = f"proj-{uuid.uuid4().hex[:10]}"
    with running(home) as before:
        streamed = create(before, input="use tool", stream=True, instructions=INSTRUCTIONS)
        first = streamed.records
        assert first[-1].event == "response.completed"
        conversation_first = create(before, input="use tool", conversation=conversation).json()
        executions_before = len(before.executions())
    exit_code = before.proc.returncode
    with running(home) as after:
        yield Restarted(
            home, after, first, streamed.headers, conversation, conversation_first, executions_before, exit_code
        )


def test_restart_keeps_the_stored_response_object(restarted: Restarted) -> None:
    """W-4.12, §4.6, §5.4: after a graceful restart GET returns the stored object — identical to the terminal
    event's response of the original stream — and nothing was re-executed."""
    assert restarted.exit_code == 0
    assert get_object(restarted.live, restarted.first_id) == restarted.first_terminal
    assert restarted.executions_before == 2
    runs = [e["turn_id"] for e in restarted.live.executions()]
    assert runs.count(restarted.first_headers["x-hermes-run-id"]) == 1, "turn 1 ran again after the restart"


def test_restart_replays_the_original_stream_with_same_sequence_numbers_and_item_ids(restarted: Restarted) -> None:
    """W-4.12, W-2.2, §4.6: GET ?stream=true after the restart renders exactly the original events (same names,
    payloads, sequence numbers and item ids); starting_after=N yields the events after N; starting_after at the
    terminal event yields no records."""
    original = restarted.first
    replay = stream_of(restarted.live, restarted.first_id)
    assert view(replay) == view(original)
    assert seqs(replay) == list(range(len(original)))
    cut = len(original) // 2
    assert view(stream_of(restarted.live, restarted.first_id, starting_after=cut)) == view(original[cut + 1 :])
    assert stream_of(restarted.live, restarted.first_id, starting_after=len(original) - 1) == []


def test_chain_by_previous_response_id_continues_after_restart(restarted: Restarted) -> None:
    """W-4.10, §4.1, §4.6, §4.7 row 1: turn 2 chained by id after the restart runs on turn 1's session, inherits
    its instructions and gives the agent turn 1's transcript: user input, tool call, tool result, answer."""
    text = f"after restart {uuid.uuid4().hex[:8]}"
    reply = create(restarted.live, input=text, previous_response_id=restarted.first_id)
    second = reply.json()
    assert second["status"] == "completed"
    assert second["previous_response_id"] == restarted.first_id
    assert second["instructions"] == INSTRUCTIONS
    assert reply.headers["x-hermes-session-id"] == restarted.first_headers["x-hermes-session-id"]
    execution = execution_for(restarted.live, text)
    call, _ = tool_pair(restarted.first_terminal["output"])
    assert history_view(execution["history"]) == [
        ("user", "use tool", (), None),
        ("assistant", "", ((call["call_id"], "terminal"),), None),
        ("tool", TOOL_RESULT, (), call["call_id"]),
        ("assistant", USE_TOOL_ANSWER, (), None),
    ]
    assert execution["system_prompt"] == INSTRUCTIONS
    assert execution["session_id"] == restarted.first_headers["x-hermes-session-id"]


def test_conversation_name_survives_restart(restarted: Restarted) -> None:
    """W-4.10, §4.7 row 2, §4.6: a conversation name created before the restart still resolves to its latest
    response afterwards; the new turn chains from it and sees its transcript."""
    text = f"conversation after restart {uuid.uuid4().hex[:8]}"
    second = create(restarted.live, input=text, conversation=restarted.conversation).json()
    assert second["previous_response_id"] == restarted.conversation_first["id"]
    execution = execution_for(restarted.live, text)
    history = history_view(execution["history"])
    call, _ = tool_pair(restarted.conversation_first["output"])
    assert history[0] == ("user", "use tool", (), None)
    assert ("tool", TOOL_RESULT, (), call["call_id"]) in history
    assert history[-1] == ("assistant", USE_TOOL_ANSWER, (), None)


def test_store_file_is_private_and_holds_the_turn_journal(restarted: Restarted) -> None:
    """§5.4, §4.6: the store is $HERMES_HOME/hermes_api.sqlite3 with mode 0600 (and so are its WAL files); the
    streamed turn's journal rows (run id from X-Hermes-Run-Id) are there after the restart: contiguous, one
    terminal record, last."""
    db = restarted.home / "hermes_api.sqlite3"
    assert db.is_file()
    assert stat.S_IMODE(os.stat(db).st_mode) == 0o600
    for suffix in ("-wal", "-shm"):
        side = Path(f"{db}{suffix}")
        if side.exists():
            assert stat.S_IMODE(os.stat(side).st_mode) & 0o077 == 0, side
    run_id = restarted.first_headers["x-hermes-run-id"]
    assert re.fullmatch(r"run_[0-9a-f]{32}", run_id)
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        rows = conn.execute(
            "SELECT seq, event FROM journal_events WHERE turn_id = ? ORDER BY seq", (run_id,)
        ).fetchall()
        stored = conn.execute("SELECT id, status FROM responses WHERE turn_id = ?", (run_id,)).fetchall()
    assert stored == [(restarted.first_id, "completed")]
    assert len(rows) > 10, rows
    assert [seq for seq, _ in rows] == list(range(len(rows)))
    events = [json.loads(event) for _, event in rows]
    finished = [e for e in events if e["t"] == "TurnFinished"]
    assert len(finished) == 1 and events[-1] is finished[0]
    assert (finished[0]["status"], finished[0]["prompt_tokens"], finished[0]["completion_tokens"]) == (
        "completed",
        42,
        17,
    )
    assert any(e["t"] == "ToolCompleted" and e.get("result") == TOOL_RESULT for e in events)


# -- background stream: drop and resume (§4.9, §5.5, W-4.12, W-4.13) ---------------------------------------


@pytest.fixture(scope="module")
def slow_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    with running(slow_home(tmp_path_factory.mktemp("slow"))) as live:
        yield live


def test_background_stream_dropped_mid_turn_resumes_without_gap(slow_gateway: LiveGateway) -> None:
    """Issue acceptance; W-4.12, W-4.13, W-2.2, §4.6, §4.9, §5.5: a background stream dropped at sequence K keeps
    running; GET ?stream=true&starting_after=K (while it runs) continues with K+1 live; the two parts together
    equal an uninterrupted replay of the settled response, with sequence numbers 0..n contiguous."""
    dropped = post_and_drop(slow_gateway, {"input": "use tool", "stream": True, "background": True}, until_seq=10)
    response_id, k = dropped.response_id, dropped.last_seq
    assert seqs(dropped.records) == list(range(k + 1))
    time.sleep(0.3)
    during = get_object(slow_gateway, response_id)
    assert during["status"] == "in_progress", "the disconnect must not stop a background turn"
    resumed = stream_of(slow_gateway, response_id, starting_after=k)
    assert resumed and resumed[0].json()["sequence_number"] == k + 1
    assert resumed[-1].event == "response.completed"
    settled = get_object(slow_gateway, response_id)
    assert settled["status"] == "completed"
    full = stream_of(slow_gateway, response_id)
    union = dropped.records + resumed
    assert seqs(union) == list(range(len(full)))
    assert view(union) == view(full)
    assert resumed[-1].json()["response"] == settled
    assert len([e for e in slow_gateway.executions() if e["turn_id"] == dropped.headers["x-hermes-run-id"]]) == 1


def test_background_stream_completes_without_any_client(slow_gateway: LiveGateway) -> None:
    """Issue acceptance; W-4.13, W-5.8, §4.9, §5.5: after the drop nobody is connected, yet the turn settles
    completed (polled with plain GET); resuming afterwards from K replays the rest, and first part + rest equal
    the full stream."""
    dropped = post_and_drop(slow_gateway, {"input": "use tool", "stream": True, "background": True}, until_seq=6)
    response_id, k = dropped.response_id, dropped.last_seq
    settled = wait_for(
        lambda: get_object(slow_gateway, response_id),
        timeout=15,
        until=lambda o: o["status"] not in ("queued", "in_progress"),
        what="a settled response",
    )
    assert settled["status"] == "completed"
    call, result = tool_pair(settled["output"])
    assert result["call_id"] == call["call_id"] and result["output"] == TOOL_RESULT
    rest = stream_of(slow_gateway, response_id, starting_after=k)
    full = stream_of(slow_gateway, response_id)
    assert view(dropped.records + rest) == view(full)
    assert seqs(full) == list(range(len(full)))
    assert full[-1].event == "response.completed" and full[-1].json()["response"] == settled


# -- kill -9 while stored responses run (§5.4, W-5.12, W-4.17) ----------------------------------------------


@dataclass
class Crashed:
    live: LiveGateway
    hang_id: str
    hang_run_id: str
    hang_input: str
    streamed: Dropped
    executions_before: int


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crashed]:
    """A stored background "hang" response whose tool is running (journal flushed), plus a background stream
    read up to a mid-turn sequence number; then SIGKILL and a new gateway on the same home."""
    home = slow_home(tmp_path_factory.mktemp("crash"))
    hang_input = "hang on the long command"
    before = start_gateway(home)
    try:
        reply = create(before, input=hang_input, background=True)
        hang = reply.json()
        assert hang["status"] in ("queued", "in_progress")
        wait_for(
            lambda: get_object(before, hang["id"]),
            timeout=15,  # the tool started
            until=lambda o: any(i["type"] == "reasoning" for i in o["output"]),
            what="the hang turn's tool",
        )
        time.sleep(0.6)  # a few journal flush intervals
        streamed = post_and_drop(
            before, {"input": "use tool", "stream": True, "background": True}, until_seq=12, kill=True
        )
        executions_before = len(before.executions())
    finally:
        before.stop(signal.SIGKILL)
    assert before.proc.returncode == -signal.SIGKILL
    with running(home) as after:
        yield Crashed(after, hang["id"], reply.headers["x-hermes-run-id"], hang_input, streamed, executions_before)


def test_crash_settles_running_background_response_failed_unknown_execution(crashed: Crashed) -> None:
    """W-5.12 (Responses part), §5.4, §4.5: after kill -9 and a restart, GET of the background response that was
    running reports status failed with error unknown_execution, its running tool closed with "[interrupted]";
    the restart logs the settlement and nothing is re-executed."""
    obj = get_object(crashed.live, crashed.hang_id)
    assert obj["status"] == "failed"
    assert obj["error"] == RESTART_ERROR
    assert obj["incomplete_details"] is None
    assert isinstance(obj["usage"], dict) and set(obj["usage"]) == USAGE_KEYS
    assert [i["type"] for i in obj["output"]] == ["reasoning", "function_call", "function_call_output"]
    call, result = tool_pair(obj["output"])
    assert call["status"] == "completed" and call["name"] == "terminal"
    assert result == {**result, "call_id": call["call_id"], "output": "[interrupted]", "status": "completed"}
    assert crashed.live.wait_for_line(rf"{crashed.hang_id}.*unknown_execution", timeout=1), crashed.live.output()
    assert crashed.executions_before == 2
    runs = [e["turn_id"] for e in crashed.live.executions()]
    assert runs.count(crashed.hang_run_id) == 1, "an unsettled turn is never re-executed (§5.4)"
    assert runs.count(crashed.streamed.headers["x-hermes-run-id"]) == 1


def test_crash_settled_response_stream_ends_with_response_failed(crashed: Crashed) -> None:
    """W-5.12, W-4.17, W-4.2, W-4.8, §5.4: GET ?stream=true of the crash-settled response is a complete stream:
    created, in_progress, the done reasoning, the function_call done `completed` followed by its
    function_call_output "[interrupted]", then one response.failed (unknown_execution) equal to GET."""
    records = stream_of(crashed.live, crashed.hang_id)
    assert seqs(records) == list(range(len(records)))
    assert [r.event for r in records[:2]] == ["response.created", "response.in_progress"]
    assert [r.event for r in records if r.event in RESPONSE_TERMINALS] == ["response.failed"]
    terminal = records[-1].json()
    assert records[-1].event == "response.failed"
    assert terminal["response"]["error"] == RESTART_ERROR
    assert terminal["response"] == get_object(crashed.live, crashed.hang_id)
    done = [r.json()["item"] for r in records if r.event == "response.output_item.done"]
    assert [i["type"] for i in done] == ["reasoning", "function_call", "function_call_output"]
    assert done[1]["status"] == "completed"
    assert done[2]["call_id"] == done[1]["call_id"] and done[2]["output"] == "[interrupted]"
    events = [r.event for r in records]
    fc_done = events.index("response.output_item.done", events.index("response.function_call_arguments.done"))
    assert events[fc_done + 1 : fc_done + 3] == ["response.output_item.added", "response.output_item.done"]


def test_chain_from_a_crash_settled_response_keeps_its_transcript(crashed: Crashed) -> None:
    """§5.4 ("queued or chained requests therefore all see that outcome"), §4.1, §4.6: a request chained from the
    crash-settled response gives the agent that turn's transcript — its user input, the tool call and the
    "[interrupted]" result — just as a chain from a cancelled turn does."""
    text = f"after the crash {uuid.uuid4().hex[:8]}"
    reply = create(crashed.live, input=text, previous_response_id=crashed.hang_id).json()
    assert reply["status"] == "completed"
    history = history_view(execution_for(crashed.live, text)["history"])
    call, _ = tool_pair(get_object(crashed.live, crashed.hang_id)["output"])
    assert history[:3] == [
        ("user", crashed.hang_input, (), None),
        ("assistant", "", ((call["call_id"], "terminal"),), None),
        ("tool", "[interrupted]", (), call["call_id"]),
    ], history


def test_events_streamed_before_a_crash_keep_their_sequence_numbers(crashed: Crashed) -> None:
    """§4.6 ("a client that drops a stream reconnects with the last sequence_number it saw and loses nothing"),
    §2.3, W-4.12, W-5.12: events a client already received before kill -9 are part of the durable journal, so
    after the restart the replay starts with exactly those events and resuming from the last one seen still
    delivers the response.failed terminal event."""
    seen = crashed.streamed.records
    response_id, k = crashed.streamed.response_id, crashed.streamed.last_seq
    assert get_object(crashed.live, response_id)["status"] == "failed"
    full = stream_of(crashed.live, response_id)
    assert full[-1].event == "response.failed"
    assert view(full[: len(seen)]) == view(seen), (
        f"client saw {[r.event for r in seen]}; after the restart the journal renders {[r.event for r in full]}"
    )
    rest = stream_of(crashed.live, response_id, starting_after=k)
    assert rest and rest[-1].event == "response.failed"
