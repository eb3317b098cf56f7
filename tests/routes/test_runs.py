"""Runs: POST /v1/runs, GET /v1/runs/{id}, its SSE events and stop, against the real app (WIRE.md §6; W-6.x).

In-process tests go through the plugin's startup hook, the real middlewares, the SQLite store and the scripted
runtime (tests/scripts/chat.yaml); nothing on the server side is mocked. The restart and credential-scope tests
at the end run the real gateway process (tests/live.py).
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.helpers import (
    CHAT,
    CONFLICT,
    DEFAULT_ANSWER,
    NEW_SESSION,
    RESPONSES,
    RESTART_ERROR,
    RUN_ID,
    RUNS,
    USE_TOOL_ANSWER,
    USE_TOOL_REASONING,
    assert_error_envelope,
    complete_records,
    execution_for,
    fetch,
    history_texts,
    live_request,
    parse_sse,
    read_reply,
    read_until,
    wait_for,
    wait_for_async,
)
from tests.live import LiveGateway, executions, start_gateway, write_home

from .support import RunEvents, check_run_events, get_run, post_run, read_events, settled, start_run

RUN_NOT_FOUND = {
    "error": {"message": "No run with that id", "type": "not_found_error", "param": None, "code": "run_not_found"}
}


# -- helpers ------------------------------------------------------------------------------------------------------


async def wait_for_last_event(
    api: TestClient, auth: dict[str, str], run_id: str, name: str, timeout: float = 10.0
) -> dict[str, Any]:
    """The run as soon as its last event is `name`."""
    return await wait_for_async(
        lambda: get_run(api, auth, run_id),
        timeout,
        until=lambda run: run["last_event"] == name,
        what=f"last_event {name}",
    )


async def stop(api: TestClient, auth: dict[str, str], run_id: str) -> tuple[int, dict[str, Any]]:
    async with api.post(f"{RUNS}/{run_id}/stop", headers=auth) as resp:
        return resp.status, await resp.json()


# -- W-6.1: submission ----------------------------------------------------------------------------------------------


async def test_post_run_answers_202_started_with_a_run_id(api: TestClient, auth: dict[str, str]) -> None:
    """W-6.1, §6.1: 202 {"run_id":"run_<32 hex>","status":"started"} as compact JSON; the key header is echoed."""
    async with api.post(RUNS, json={"input": "hello"}, headers={**auth, "X-Hermes-Session-Key": "desk"}) as resp:
        assert resp.status == 202
        assert resp.headers["Content-Type"] == "application/json; charset=utf-8"
        assert resp.headers["X-Hermes-Session-Key"] == "desk"
        raw = await resp.read()
    body = json.loads(raw)
    assert body == {"run_id": body["run_id"], "status": "started"}
    assert RUN_ID.match(body["run_id"])
    assert b" " not in raw, "compact JSON"
    await settled(api, auth, body["run_id"])


async def test_post_run_without_session_key_header_does_not_echo_one(api: TestClient, auth: dict[str, str]) -> None:
    """§6.1: `X-Hermes-Session-Key` is echoed only when sent; every run gets its own id."""
    status, headers, first = await post_run(api, auth, "hello")
    _, _, second = await post_run(api, auth, "hello")
    assert status == 202 and "X-Hermes-Session-Key" not in headers
    assert first["run_id"] != second["run_id"]
    for body in (first, second):
        await settled(api, auth, body["run_id"])


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({}, "missing_required_parameter", "input"),
        ({"input": None}, "missing_required_parameter", "input"),
        ({"input": ""}, "missing_user_message", "input"),
        ({"input": []}, "missing_user_message", "input"),
        ({"input": "   "}, "missing_user_message", "input"),
        (
            {"input": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]},
            "missing_user_message",
            "input",
        ),
        ({"input": 42}, "invalid_parameter", "input"),
        ({"input": "hi", "session_id": "a/b"}, "invalid_session_id", "session_id"),
        (
            {"input": "hi", "model_options": {"reasoning": {"effort": "enormous"}}},
            "invalid_parameter",
            "model_options.reasoning.effort",
        ),
        ({"input": [{"role": ["user"], "content": "hi"}]}, "invalid_parameter", "input[0].role"),
    ],
    ids=[
        "absent",
        "null",
        "empty-string",
        "empty-list",
        "blank",
        "assistant-last",
        "number",
        "bad-session-id",
        "bad-effort",
        "role-is-a-list",  # found by tests/fuzz: an unhashable role used to be a 500
    ],
)
async def test_post_run_rejects_invalid_input_before_anything_runs(
    api: TestClient, auth: dict[str, str], body: dict[str, Any], code: str, param: str
) -> None:
    """§6.1, §1.7, W-1.7: invalid runs get 400 with the envelope and `param`; nothing is executed."""
    reply = await fetch(api, "POST", RUNS, json=body, headers=auth)
    assert_error_envelope(reply, 400, code, param=param, type="invalid_request_error")
    assert executions(api.home) == []  # type: ignore[attr-defined]


async def test_post_run_with_unknown_previous_response_is_404(api: TestClient, auth: dict[str, str]) -> None:
    """§6.1: an unknown `previous_response_id` → 404 response_not_found; nothing runs."""
    reply = await fetch(
        api, "POST", RUNS, json={"input": "hi", "previous_response_id": "resp_" + "0" * 32}, headers=auth
    )
    assert_error_envelope(reply, 404, "response_not_found", param="previous_response_id")
    assert executions(api.home) == []  # type: ignore[attr-defined]


# -- W-6.2: the run object -------------------------------------------------------------------------------------------


async def test_settled_run_object_carries_every_field(api: TestClient, auth: dict[str, str]) -> None:
    """W-6.2, §6.2: a completed run reads back as a hermes.run with output, usage, float timestamps, the new
    session (`api_<unix>_<8 hex>`) and `last_event` equal to its terminal event."""
    before = time.time()
    run_id = await start_run(api, auth, "use tool")
    run = await settled(api, auth, run_id)
    assert run == {
        "object": "hermes.run",
        "run_id": run_id,
        "status": "completed",
        "created_at": run["created_at"],
        "updated_at": run["updated_at"],
        "session_id": run["session_id"],
        "model": "hermes-agent",
        "last_event": "run.completed",
        "output": USE_TOOL_ANSWER,
        "usage": {"input_tokens": 42, "output_tokens": 17, "total_tokens": 59},
        "error": None,
        "turn_exit_reason": None,
    }
    assert isinstance(run["created_at"], float) and isinstance(run["updated_at"], float)
    assert before - 1 <= run["created_at"] <= run["updated_at"] <= time.time() + 1
    match = NEW_SESSION.match(run["session_id"])
    assert match and abs(int(match.group(1)) - before) <= 2


async def test_a_run_read_while_its_settlement_is_stored_is_the_settled_run(
    api: TestClient, auth: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """§6.2: between the decision (status settled, what another gateway reads from the store) and the terminal record
    in the journal, the run reads as settled in every field — never `completed` with the last event of a delta."""
    from hermes_api_plugin.turns.registry import TurnRegistry

    gate, held = asyncio.Event(), asyncio.Event()
    persist = TurnRegistry._persist

    async def slow_persist(self: TurnRegistry, turn: Any, finished: Any) -> None:
        held.set()
        await gate.wait()
        await persist(self, turn, finished)

    monkeypatch.setattr(TurnRegistry, "_persist", slow_persist)
    run_id = await start_run(api, auth, "use tool")
    await asyncio.wait_for(held.wait(), 10)
    during = (await fetch(api, "GET", f"/v1/runs/{run_id}", headers=auth)).json()
    assert await stop(api, auth, run_id) == (200, {"run_id": run_id, "status": "completed"})  # decided: no stop
    late = await fetch(api, "POST", f"/v1/runs/{run_id}/approval", json={"choice": "once"}, headers=auth)
    assert_error_envelope(late, 409, "approval_not_active", type="conflict_error")  # no approval session any more
    gate.set()
    after = await settled(api, auth, run_id)
    assert during["status"] == "completed" and during["last_event"] == "run.completed"
    assert {k: during[k] for k in ("output", "usage", "error", "last_event")} == {
        k: after[k] for k in ("output", "usage", "error", "last_event")
    }


async def test_run_model_echoes_the_requested_model(api: TestClient, auth: dict[str, str]) -> None:
    """§6.2, §8.1: `model` is the request's model, else the advertised name."""
    run_id = await start_run(api, auth, "hello", model="my-frontend-model")
    assert (await settled(api, auth, run_id))["model"] == "my-frontend-model"


async def test_running_run_reports_running_with_the_answer_so_far(api: TestClient, auth: dict[str, str]) -> None:
    """§6.2: while a tool runs the status is `running`, `last_event` the last journaled event, no usage or error."""
    run_id = await start_run(api, auth, "hang")
    run = await wait_for_last_event(api, auth, run_id, "tool.started")
    assert run["status"] == "running"
    assert run["output"] == "" and run["usage"] is None
    assert run["error"] is None and run["turn_exit_reason"] is None
    assert run["updated_at"] >= run["created_at"]
    assert (await stop(api, auth, run_id))[0] == 200
    assert (await settled(api, auth, run_id))["status"] == "cancelled"


async def test_second_run_on_a_busy_session_is_queued_until_the_first_settles(
    api: TestClient, auth: dict[str, str]
) -> None:
    """§6.2, §1.8, W-1.14: a run on a session whose earlier turn still runs is `queued`, then runs once the first
    settles (here: stopped) and sees the first turn in its history."""
    first = await start_run(api, auth, "hang", session_id="busy-session")
    await wait_for_last_event(api, auth, first, "tool.started")
    second = await start_run(api, auth, "queued follow up", session_id="busy-session")
    await asyncio.sleep(0.1)
    queued = await get_run(api, auth, second)
    assert queued["status"] == "queued" and queued["last_event"] is None
    await stop(api, auth, first)
    assert (await settled(api, auth, second))["status"] == "completed"
    assert history_texts(execution_for(api, "queued follow up"))[0] == ("user", "hang")


async def test_unknown_run_is_404_on_every_run_route(api: TestClient, auth: dict[str, str]) -> None:
    """§6.2, §6.4, §1.7: unknown id → 404 run_not_found with the exact envelope on GET, /events and /stop."""
    unknown = "run_" + "0" * 32
    for method, path in (
        ("GET", f"{RUNS}/{unknown}"),
        ("GET", f"{RUNS}/{unknown}/events"),
        ("POST", f"{RUNS}/{unknown}/stop"),
        ("GET", f"{RUNS}/not-a-run-id"),
    ):
        async with api.request(method, path, headers=auth) as resp:
            assert resp.status == 404, path
            assert resp.headers["Content-Type"] == "application/json; charset=utf-8"
            assert await resp.json() == RUN_NOT_FOUND, path


async def test_run_routes_need_the_key(api: TestClient) -> None:
    """W-1.3: the run routes answer 401 without the Bearer key."""
    for method, path in (
        ("POST", RUNS),
        ("GET", f"{RUNS}/run_x"),
        ("GET", f"{RUNS}/run_x/events"),
        ("POST", f"{RUNS}/run_x/stop"),
    ):
        async with api.request(method, path, json={"input": "hi"}) as resp:
            assert resp.status == 401, path
            assert (await resp.json())["error"]["code"] == "gateway_auth_failed"


# -- W-6.3: events --------------------------------------------------------------------------------------------------


async def test_run_events_number_records_and_end_after_the_terminal_event(
    api: TestClient, auth: dict[str, str]
) -> None:
    """W-6.3, §6.3: `id:` 1…n, no `event:` lines, {event, run_id, timestamp, …} payloads in journal order; the
    stream closes right after run.completed, whose output and usage equal the run object's."""
    run_id = await start_run(api, auth, "use tool")
    events = await read_events(api, auth, run_id)
    check_run_events(events, run_id)
    names = events.names
    collapsed = [n for i, n in enumerate(names) if i == 0 or n != names[i - 1]]
    assert collapsed == [
        "reasoning.delta",
        "tool.started",
        "tool.completed",
        "message.interim",
        "reasoning.delta",
        "message.delta",
        "run.completed",
    ]
    payloads = events.payloads
    assert "".join(p["delta"] for p in payloads if p["event"] == "reasoning.delta") == USE_TOOL_REASONING
    assert "".join(p["delta"] for p in payloads if p["event"] == "message.delta") == USE_TOOL_ANSWER
    started = next(p for p in payloads if p["event"] == "tool.started")
    completed = next(p for p in payloads if p["event"] == "tool.completed")
    assert set(started) == {"event", "run_id", "timestamp", "tool", "tool_call_id", "preview"}
    assert started["tool"] == "terminal" and started["preview"] == "ls -la"
    assert set(completed) == {"event", "run_id", "timestamp", "tool", "tool_call_id", "duration", "error"}
    assert completed["tool_call_id"] == started["tool_call_id"] and completed["error"] is False
    assert isinstance(completed["duration"], float) and 0.15 <= completed["duration"] < 5
    assert completed["duration"] == round(completed["duration"], 3)
    interim = next(p for p in payloads if p["event"] == "message.interim")
    assert (interim["text"], interim["already_streamed"]) == ("Listed the files.", False)
    terminal = events.terminal
    assert set(terminal) == {"event", "run_id", "timestamp", "output", "usage"}
    assert terminal["output"] == USE_TOOL_ANSWER
    assert terminal["usage"] == {"input_tokens": 42, "output_tokens": 17, "total_tokens": 59}
    timestamps = [p["timestamp"] for p in payloads]
    assert timestamps == sorted(timestamps)
    run = await get_run(api, auth, run_id)
    assert run["status"] == "completed" and run["last_event"] == terminal["event"]
    assert run["updated_at"] == terminal["timestamp"]


async def test_last_event_id_yields_exactly_the_events_after_it(api: TestClient, auth: dict[str, str]) -> None:
    """W-6.3, §6.3: for every N of a settled run, `Last-Event-ID: N` yields exactly the records after N (same ids,
    same payloads); N = n yields no records and the stream still closes."""
    run_id = await start_run(api, auth, "use tool")
    full = await read_events(api, auth, run_id)
    for n in range(len(full.records) + 1):
        resumed = await read_events(api, auth, run_id, last_event_id=str(n))
        assert resumed.view() == full.view()[n:], n
    assert full.ids[-1] == len(full.records)


async def test_resumed_stream_equals_the_uninterrupted_one(api: TestClient, auth: dict[str, str]) -> None:
    """W-6.3, §6.3: a subscriber that drops mid-run and reconnects with `Last-Event-ID` of the last record it saw
    ends up with exactly the records an uninterrupted subscriber got."""
    run_id = await start_run(api, auth, "use tool")
    uninterrupted = asyncio.create_task(read_events(api, auth, run_id))
    async with api.get(f"{RUNS}/{run_id}/events", headers=auth) as resp:
        raw = await read_until(resp, b'"tool.started"')
    seen = complete_records(raw)
    assert seen and seen[-1].json()["event"] in ("tool.started", "reasoning.delta")
    rest = await read_events(api, auth, run_id, last_event_id=seen[-1].id)
    full = await uninterrupted
    check_run_events(full, run_id)
    assert [(r.id, r.data) for r in seen] + rest.view() == full.view()
    assert rest.terminal["event"] == "run.completed"


@pytest.mark.parametrize("value", ["999", "abc", "-1", "0", ""])
async def test_unknown_last_event_id_replays_from_the_start(api: TestClient, auth: dict[str, str], value: str) -> None:
    """§6.3: a `Last-Event-ID` that is not a known id replays the whole journal."""
    run_id = await start_run(api, auth, "use tool")
    full = await read_events(api, auth, run_id)
    resumed = await read_events(api, auth, run_id, last_event_id=value)
    check_run_events(resumed, run_id)
    assert resumed.view() == full.view()


async def test_events_of_a_settled_run_replay_the_journal(api: TestClient, auth: dict[str, str]) -> None:
    """§6.3: subscribing after the end replays the same journal (ids, payloads, timestamps) and closes."""
    run_id = await start_run(api, auth, "use tool")
    live = await read_events(api, auth, run_id)
    await asyncio.sleep(0.05)
    for _ in range(2):
        replay = await read_events(api, auth, run_id)
        check_run_events(replay, run_id)
        assert replay.view() == live.view()


async def test_several_subscribers_follow_one_run(api: TestClient, auth: dict[str, str]) -> None:
    """§6.3: several concurrent subscribers each receive the whole journal, identical to a later replay."""
    run_id = await start_run(api, auth, "use tool")
    streams = await asyncio.gather(*(read_events(api, auth, run_id) for _ in range(3)))
    replay = await read_events(api, auth, run_id)
    for stream in streams:
        check_run_events(stream, run_id)
        assert stream.view() == replay.view()


@pytest.mark.parametrize("policy", ["auto", "cancel"])
async def test_subscriber_disconnect_never_affects_the_run(make_api: Any, auth: dict[str, str], policy: str) -> None:
    """§6.3, §5.5, W-5.11: a subscriber that leaves mid-run (even with `on_disconnect: cancel`) does not stop the
    run: it completes and a later subscriber gets the whole journal."""
    api = await make_api(config={"api_server": {"on_disconnect": policy}})
    run_id = await start_run(api, auth, "use tool")
    async with api.get(f"{RUNS}/{run_id}/events", headers=auth) as resp:
        await read_until(resp, b'"tool.started"')
    run = await settled(api, auth, run_id)
    assert run["status"] == "completed" and run["output"] == USE_TOOL_ANSWER


async def test_run_events_keep_alive_while_idle(api: TestClient, auth: dict[str, str]) -> None:
    """W-2.4, §6.3: with a 1 s keepalive, an idle runs stream writes `: keepalive` comments, never data records."""
    run_id = await start_run(api, auth, "hang")
    async with api.get(f"{RUNS}/{run_id}/events", headers=auth) as resp:
        raw = await read_until(resp, b'"tool.started"')
        raw = await read_until(resp, b": keepalive\n\n", raw)
        await stop(api, auth, run_id)
        raw += await asyncio.wait_for(resp.content.read(), 10)
    records, keepalives = parse_sse(raw)
    assert keepalives >= 1
    assert b"data: : keepalive" not in raw
    assert records[-1].json()["event"] == "run.cancelled"


async def test_runs_answers_carry_cors_and_security_headers(make_api: Any, auth: dict[str, str]) -> None:
    """W-1.5, W-1.6, §6.3 ("CORS headers as §1.4, unlike the upstream server"), §1.5: for an allowed Origin the 202,
    the run object and the events stream carry Access-Control-Allow-Origin, Vary: Origin and the expose list; every
    answer carries the security headers."""
    origin = "http://localhost:3000"
    api = await make_api(env={"API_SERVER_CORS_ORIGINS": origin})
    headers = {**auth, "Origin": origin}
    async with api.post(RUNS, json={"input": "hello"}, headers=headers) as resp:
        assert resp.status == 202
        run_id = (await resp.json())["run_id"]
        answers = [resp.headers]
    async with api.get(f"{RUNS}/{run_id}/events", headers=headers) as resp:
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        await resp.read()
        answers.append(resp.headers)
    async with api.get(f"{RUNS}/{run_id}", headers=headers) as resp:
        answers.append(resp.headers)
    for got in answers:
        assert got["Access-Control-Allow-Origin"] == origin
        assert "Origin" in got["Vary"]
        exposed = {h.strip().lower() for h in got["Access-Control-Expose-Headers"].split(",")}
        assert {"x-hermes-session-id", "x-hermes-run-id", "idempotency-replayed"} <= exposed
        assert got["X-Content-Type-Options"] == "nosniff" and got["X-Frame-Options"] == "DENY"


# -- W-6.4: stop ----------------------------------------------------------------------------------------------------


async def test_stop_returns_stopping_at_once_and_settles_cancelled(api: TestClient, auth: dict[str, str]) -> None:
    """W-6.4, W-3.13, §6.4: stop answers 200 {"run_id","status":"stopping"} without waiting; the open events stream
    gets tool.completed (error:true) for the running tool, then run.cancelled, and closes; GET says cancelled."""
    run_id = await start_run(api, auth, "hang")
    async with api.get(f"{RUNS}/{run_id}/events", headers=auth) as resp:
        raw = await read_until(resp, b'"tool.started"')
        began = time.monotonic()
        status, body = await stop(api, auth, run_id)
        assert time.monotonic() - began < 2
        assert (status, body) == (200, {"run_id": run_id, "status": "stopping"})
        raw += await asyncio.wait_for(resp.content.read(), 10)
    events = RunEvents(resp.status, resp.headers, raw)
    check_run_events(events, run_id)
    assert events.names[-2:] == ["tool.completed", "run.cancelled"]
    stopped = events.payloads[-2]
    assert stopped["error"] is True and stopped["tool"] == "terminal"
    terminal = events.terminal
    assert set(terminal) == {"event", "run_id", "timestamp", "output", "usage"}
    assert terminal["output"] == ""
    run = await get_run(api, auth, run_id)
    assert (run["status"], run["last_event"], run["error"], run["turn_exit_reason"]) == (
        "cancelled",
        "run.cancelled",
        None,
        None,
    )
    assert "never reached" not in run["output"]


async def test_second_stop_returns_the_settled_status(api: TestClient, auth: dict[str, str]) -> None:
    """W-6.4, §6.4: stop is safe to repeat: a settled run answers 200 with its settled status."""
    run_id = await start_run(api, auth, "hang")
    await wait_for_last_event(api, auth, run_id, "tool.started")
    assert await stop(api, auth, run_id) == (200, {"run_id": run_id, "status": "stopping"})
    assert (await settled(api, auth, run_id))["status"] == "cancelled"
    assert await stop(api, auth, run_id) == (200, {"run_id": run_id, "status": "cancelled"})
    completed = await start_run(api, auth, "hello")
    await settled(api, auth, completed)
    assert await stop(api, auth, completed) == (200, {"run_id": completed, "status": "completed"})
    assert (await get_run(api, auth, completed))["status"] == "completed"


async def test_stop_of_a_queued_run_cancels_it_before_it_runs(api: TestClient, auth: dict[str, str]) -> None:
    """§6.4, §1.8: stopping a queued run settles it cancelled without executing it."""
    first = await start_run(api, auth, "hang", session_id="stop-queued")
    await wait_for_last_event(api, auth, first, "tool.started")
    second = await start_run(api, auth, "never executed", session_id="stop-queued")
    assert (await stop(api, auth, second))[0] == 200
    events = await read_events(api, auth, second)
    check_run_events(events, second)
    assert events.names == ["run.cancelled"]
    assert (await stop(api, auth, first))[0] == 200
    await settled(api, auth, first)
    assert [e for e in executions(api.home) if e["turn_id"] == second] == []  # type: ignore[attr-defined]


# -- W-6.5: session selection -----------------------------------------------------------------------------------------


async def test_session_key_continues_the_keys_latest_session(api: TestClient, auth: dict[str, str]) -> None:
    """W-6.5, §6.1: runs with one `X-Hermes-Session-Key` continue one session: the second run's agent sees the
    first run's turn as history."""
    key = {"X-Hermes-Session-Key": "desk-1"}
    first = await settled(api, auth, await start_run(api, auth, "first keyed turn", headers=key))
    second = await settled(api, auth, await start_run(api, auth, "second keyed turn", headers=key))
    assert NEW_SESSION.match(first["session_id"])
    assert second["session_id"] == first["session_id"]
    assert history_texts(execution_for(api, "second keyed turn")) == [
        ("user", "first keyed turn"),
        ("assistant", DEFAULT_ANSWER),
    ]
    other = await settled(api, auth, await start_run(api, auth, "other key", headers={"X-Hermes-Session-Key": "x"}))
    assert other["session_id"] != first["session_id"]


async def test_explicit_session_id_wins_and_leaves_the_key_binding(api: TestClient, auth: dict[str, str]) -> None:
    """W-6.5, §6.1: body `session_id` beats the key's session, and the key stays bound to its own session."""
    key = {"X-Hermes-Session-Key": "desk-2"}
    bound = (await settled(api, auth, await start_run(api, auth, "bound turn", headers=key)))["session_id"]
    explicit = await settled(
        api, auth, await start_run(api, auth, "explicit turn", headers=key, session_id="explicit-run-session")
    )
    assert explicit["session_id"] == "explicit-run-session"
    assert history_texts(execution_for(api, "explicit turn")) == []
    after = await settled(api, auth, await start_run(api, auth, "back on the key", headers=key))
    assert after["session_id"] == bound
    assert history_texts(execution_for(api, "back on the key")) == [
        ("user", "bound turn"),
        ("assistant", DEFAULT_ANSWER),
    ]


async def test_previous_response_id_wins_and_leaves_the_key_binding(api: TestClient, auth: dict[str, str]) -> None:
    """W-6.5, §6.1: a Responses chain beats the key's session (history from the chain), and the key keeps its
    binding."""
    key = {"X-Hermes-Session-Key": "desk-3"}
    bound = (await settled(api, auth, await start_run(api, auth, "keyed opening", headers=key)))["session_id"]
    async with api.post(RESPONSES, json={"model": "hermes-agent", "input": "chain root"}, headers=auth) as resp:
        assert resp.status == 200
        chain_session = resp.headers["X-Hermes-Session-Id"]
        root = json.loads(await resp.text())
    chained = await settled(
        api, auth, await start_run(api, auth, "chained run", headers=key, previous_response_id=root["id"])
    )
    assert chained["session_id"] == chain_session != bound
    assert history_texts(execution_for(api, "chained run")) == [("user", "chain root"), ("assistant", DEFAULT_ANSWER)]
    after = await settled(api, auth, await start_run(api, auth, "keyed again", headers=key))
    assert after["session_id"] == bound


async def test_session_id_header_selects_the_session_and_the_body_wins(api: TestClient, auth: dict[str, str]) -> None:
    """§6.1, §1.6: `X-Hermes-Session-Id` is equivalent to body `session_id`; the body wins when both are sent."""
    header = {"X-Hermes-Session-Id": "header-session"}
    by_header = await settled(api, auth, await start_run(api, auth, "header turn", headers=header))
    assert by_header["session_id"] == "header-session"
    both = await settled(api, auth, await start_run(api, auth, "both turn", headers=header, session_id="body-session"))
    assert both["session_id"] == "body-session"
    again = await settled(api, auth, await start_run(api, auth, "header again", headers=header))
    assert again["session_id"] == "header-session"
    assert history_texts(execution_for(api, "header again")) == [("user", "header turn"), ("assistant", DEFAULT_ANSWER)]


async def test_input_messages_are_the_history_of_the_run(api: TestClient, auth: dict[str, str]) -> None:
    """§6.1: with an input array, the earlier messages are the history and the last user message the turn input;
    system messages and `instructions` become the system prompt."""
    run_id = await start_run(
        api,
        auth,
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "earlier question"},
            {"role": "assistant", "content": "earlier answer"},
            {"role": "user", "content": "array input"},
        ],
        instructions="Answer in English.",
    )
    await settled(api, auth, run_id)
    execution = execution_for(api, "array input")
    assert history_texts(execution) == [("user", "earlier question"), ("assistant", "earlier answer")]
    assert "Be brief." in execution["system_prompt"] and "Answer in English." in execution["system_prompt"]


# -- W-6.6: every admitted turn is a run ---------------------------------------------------------------------------


async def _reply_run_ids(api: TestClient, auth: dict[str, str]) -> dict[str, tuple[str, str]]:
    """surface → (X-Hermes-Run-Id, the answer text the surface delivered) for one completed turn each."""
    found: dict[str, tuple[str, str]] = {}
    async with api.post(
        CHAT, json={"model": "hermes-agent", "messages": [{"role": "user", "content": "use tool"}]}, headers=auth
    ) as resp:
        body = json.loads(await resp.text())
        found["chat-json"] = (resp.headers["X-Hermes-Run-Id"], body["choices"][0]["message"]["content"])
    async with api.post(
        CHAT,
        json={"model": "hermes-agent", "stream": True, "messages": [{"role": "user", "content": "use tool"}]},
        headers=auth,
    ) as resp:
        text = (await read_reply(resp)).chat_text()[0]
        found["chat-stream"] = (resp.headers["X-Hermes-Run-Id"], text)
    async with api.post(RESPONSES, json={"model": "hermes-agent", "input": "use tool"}, headers=auth) as resp:
        body = json.loads(await resp.text())
        found["responses-json"] = (resp.headers["X-Hermes-Run-Id"], body["output"][-1]["content"][0]["text"])
    async with api.post(
        RESPONSES, json={"model": "hermes-agent", "input": "use tool", "stream": True}, headers=auth
    ) as resp:
        records, _ = parse_sse(await resp.read())
        terminal = records[-1].json()["response"]
        found["responses-stream"] = (resp.headers["X-Hermes-Run-Id"], terminal["output"][-1]["content"][0]["text"])
    async with api.post("/api/sessions/run-ids/chat", json={"message": "use tool"}, headers=auth) as resp:
        body = json.loads(await resp.text())
        assert body["run_id"] == resp.headers["X-Hermes-Run-Id"]
        found["session-json"] = (body["run_id"], body["message"]["content"])
    async with api.post("/api/sessions/run-ids/chat/stream", json={"message": "use tool"}, headers=auth) as resp:
        records, _ = parse_sse(await resp.read())
        completed = next(r.json() for r in records if r.event == "assistant.completed")
        found["session-stream"] = (resp.headers["X-Hermes-Run-Id"], completed["content"])
    return found


async def test_every_surface_reply_carries_a_run_id_that_works_with_the_runs_api(
    api: TestClient, auth: dict[str, str]
) -> None:
    """W-6.6, §6.2: chat, Responses and session chat replies (JSON and stream) carry `X-Hermes-Run-Id`; GET, /events
    and /stop work with it: completed, the same answer, the journal replayed, stop returns the settled status."""
    found = await _reply_run_ids(api, auth)
    assert len({run_id for run_id, _ in found.values()}) == len(found)
    for surface, (run_id, answer) in found.items():
        assert RUN_ID.match(run_id), surface
        assert answer == USE_TOOL_ANSWER, surface
        run = await get_run(api, auth, run_id)
        assert (run["status"], run["output"], run["last_event"]) == ("completed", USE_TOOL_ANSWER, "run.completed"), (
            surface
        )
        events = await read_events(api, auth, run_id)
        check_run_events(events, run_id)
        assert events.terminal["event"] == "run.completed" and events.terminal["output"] == USE_TOOL_ANSWER
        assert "tool.started" in events.names, surface
        assert await stop(api, auth, run_id) == (200, {"run_id": run_id, "status": "completed"}), surface


async def test_keyed_replay_carries_the_original_run_id(api: TestClient, auth: dict[str, str]) -> None:
    """W-6.6, §5.3: a keyed chat replay carries the original `X-Hermes-Run-Id`, which still works with GET."""
    body = {"model": "hermes-agent", "messages": [{"role": "user", "content": "use tool"}]}
    headers = {**auth, "Idempotency-Key": "run-id-replay-1"}
    ids = []
    for _ in range(2):
        async with api.post(CHAT, json=body, headers=headers) as resp:
            await resp.read()
            ids.append((resp.headers["X-Hermes-Run-Id"], resp.headers.get("Idempotency-Replayed")))
    assert ids[0][0] == ids[1][0] and ids[0][1] is None and ids[1][1] == "true"
    assert (await get_run(api, auth, ids[0][0]))["status"] == "completed"


async def test_stop_through_its_run_cancels_a_connected_chat_stream(api: TestClient, auth: dict[str, str]) -> None:
    """W-6.6, §6.4: stopping a chat stream's run while its client is connected ends the stream with
    finish_reason cancelled and [DONE]; the run reads cancelled."""
    body = {"model": "hermes-agent", "stream": True, "messages": [{"role": "user", "content": "hang"}]}
    async with api.post(CHAT, json=body, headers=auth) as resp:
        run_id = resp.headers["X-Hermes-Run-Id"]
        raw = await read_until(resp, b'"status":"running"')
        assert await stop(api, auth, run_id) == (200, {"run_id": run_id, "status": "stopping"})
        raw += await asyncio.wait_for(resp.content.read(), 10)
    records, _ = parse_sse(raw)
    assert records[-1].data == "[DONE]"
    finish = records[-2].json()
    assert finish["choices"][0]["finish_reason"] == "cancelled"
    assert finish["hermes"]["error_code"] == "cancelled"
    run = await get_run(api, auth, run_id)
    assert (run["status"], run["last_event"]) == ("cancelled", "run.cancelled")


async def test_stop_through_its_run_cancels_a_connected_responses_stream(api: TestClient, auth: dict[str, str]) -> None:
    """W-6.6, §6.4: stopping a Responses stream's run while its client is connected ends the stream with
    response.cancelled, and the stored response reads cancelled."""
    body = {"model": "hermes-agent", "stream": True, "input": "hang"}
    async with api.post(RESPONSES, json=body, headers=auth) as resp:
        run_id = resp.headers["X-Hermes-Run-Id"]
        raw = await read_until(resp, b"response.function_call_arguments.done")
        assert await stop(api, auth, run_id) == (200, {"run_id": run_id, "status": "stopping"})
        raw += await asyncio.wait_for(resp.content.read(), 10)
    records, _ = parse_sse(raw)
    assert records[-1].event == "response.cancelled"
    response = records[-1].json()["response"]
    async with api.get(f"{RESPONSES}/{response['id']}", headers=auth) as got:
        assert (await got.json())["status"] == "cancelled"
    assert (await get_run(api, auth, run_id))["status"] == "cancelled"


# -- keyed runs (§5 on /v1/runs) ------------------------------------------------------------------------------------


async def test_keyed_run_retry_replays_the_run_id_with_its_current_status(
    api: TestClient, auth: dict[str, str]
) -> None:
    """§6.1, §5.3, W-5.3: a keyed retry answers 202 {"run_id": <original>, "status": <current>, "replayed": true}
    with `Idempotency-Replayed: true` (running while it runs, the settled status after), executing nothing."""
    key = {"Idempotency-Key": "runs-replay-1"}
    run_id = await start_run(api, auth, "hang", headers=key)
    await wait_for_last_event(api, auth, run_id, "tool.started")
    status, headers, body = await post_run(api, auth, "hang", headers=key)
    assert status == 202
    assert body == {"run_id": run_id, "status": "running", "replayed": True}
    assert headers["Idempotency-Replayed"] == "true"
    await stop(api, auth, run_id)
    await settled(api, auth, run_id)
    status, headers, body = await post_run(api, auth, "hang", headers=key)
    assert (status, body) == (202, {"run_id": run_id, "status": "cancelled", "replayed": True})
    assert headers["Idempotency-Replayed"] == "true"
    assert [e["turn_id"] for e in executions(api.home)] == [run_id]  # type: ignore[attr-defined]


async def test_keyed_run_retry_with_another_input_is_admission_conflict(api: TestClient, auth: dict[str, str]) -> None:
    """§5.3, W-5.4: the same key with another input (or another target session) → 409 admission_conflict with the
    exact body; nothing executes."""
    key = {"Idempotency-Key": "runs-conflict-1"}
    run_id = await start_run(api, auth, "hello", headers=key)
    await settled(api, auth, run_id)
    for text, extra in (("hello again", {}), ("hello", {"session_id": "another-session"})):
        status, _, body = await post_run(api, auth, text, headers=key, **extra)
        assert (status, body) == (409, CONFLICT)
    assert len(executions(api.home)) == 1  # type: ignore[attr-defined]


# -- keepalive over a long tool (slow) --------------------------------------------------------------------------------


@pytest.mark.slow
async def test_runs_stream_over_a_25_second_tool_is_kept_alive_and_not_cut(make_api: Any, auth: dict[str, str]) -> None:
    """Issue 5 acceptance, W-2.4, §6.3: a runs events stream that stays silent for 25 s behind a running tool
    (1 s keepalive) gets keepalive comments while idle and is not cut: it ends with run.completed."""
    api = await make_api(script="sessions.yaml")
    run_id = await start_run(api, auth, "slow tool")
    events = await read_events(api, auth, run_id, timeout=60)
    check_run_events(events, run_id)
    assert events.keepalives >= 2
    idle = events.raw[events.raw.index(b'"tool.started"') : events.raw.index(b'"tool.completed"')]
    assert idle.count(b": keepalive\n\n") >= 2, "the keepalives fall in the silent stretch"
    assert events.terminal["event"] == "run.completed"
    assert events.terminal["output"] == "Done waiting."
    completed = next(p for p in events.payloads if p["event"] == "tool.completed")
    assert completed["duration"] >= 24.9 and completed["error"] is False


# -- across processes: restart after kill -9, credential scope (W-5.12, W-6.4) ----------------------------------------


OTHER_KEY = "another-key-0123456789abcdef"


def live_run(live: LiveGateway, run_id: str) -> dict[str, Any]:
    reply = live_request(live, "GET", f"{RUNS}/{run_id}")
    assert reply.status == 200, reply.raw
    return reply.json()  # type: ignore[no-any-return]


def live_events(live: LiveGateway, run_id: str, last_event_id: str | None = None) -> RunEvents:
    headers = {"Last-Event-ID": last_event_id} if last_event_id is not None else {}
    reply = live_request(live, "GET", f"{RUNS}/{run_id}/events", headers=headers)
    assert reply.status == 200, reply.raw
    return RunEvents(reply.status, reply.headers, reply.raw)


@dataclass
class Restarted:
    live: LiveGateway
    completed: str  # keyed run that settled before the kill
    running: str  # keyed "hang" run running at the kill
    unkeyed: str  # unkeyed run that settled before the kill (memory only)
    completed_events: RunEvents


@pytest.fixture(scope="module")
def restarted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restarted]:
    """A keyed completed run, a keyed "hang" run with its tool running and an unkeyed completed run; then SIGKILL
    and a new gateway process on the same Hermes home."""
    home = write_home(tmp_path_factory.mktemp("runs_crash"))
    before = start_gateway(home)
    try:

        def submit(text: str, key: str | None) -> str:
            reply = live_request(before, "POST", RUNS, {"input": text}, {"Idempotency-Key": key} if key else None)
            assert reply.status == 202, reply.raw
            return reply.json()["run_id"]  # type: ignore[no-any-return]

        completed = submit("use tool", "crash-completed")
        unkeyed = submit("hello", None)
        completed_events = live_events(before, completed)
        live_events(before, unkeyed)
        running = submit("hang", "crash-running")
        wait_for(
            lambda: live_run(before, running),
            timeout=15,
            until=lambda run: run["last_event"] == "tool.started",
            what="the hang run's tool start",
        )
        time.sleep(0.6)  # a few journal group commits: the running run's events are durable
    finally:
        before.stop(signal.SIGKILL)
    assert before.proc.returncode == -signal.SIGKILL
    after = start_gateway(home)
    try:
        yield Restarted(after, completed, running, unkeyed, completed_events)
    finally:
        after.stop()


@pytest.mark.slow  # kill -9 and restarts of a real gateway (the `restarted` fixture)
def test_keyed_run_running_at_kill_reads_failed_unknown_execution(restarted: Restarted) -> None:
    """W-5.12 (runs part), §5.4, W-6.2: after kill -9 and a restart, GET of the keyed run that was running reports
    failed with error unknown_execution, and its /events ends with the matching run.failed after the running tool
    was closed with error:true."""
    run = live_run(restarted.live, restarted.running)
    assert run["status"] == "failed" and run["last_event"] == "run.failed"
    assert run["error"] == RESTART_ERROR and run["turn_exit_reason"] is None
    events = live_events(restarted.live, restarted.running)
    check_run_events(events, restarted.running)
    assert events.names[-1] == "run.failed"
    assert events.terminal["error"] == RESTART_ERROR
    names = events.names
    assert names.index("tool.started") < names.index("tool.completed") < len(names) - 1
    assert next(p for p in events.payloads if p["event"] == "tool.completed")["error"] is True
    stopped = live_request(restarted.live, "POST", f"{RUNS}/{restarted.running}/stop")
    assert (stopped.status, stopped.json()) == (200, {"run_id": restarted.running, "status": "failed"})


@pytest.mark.slow  # kill -9 and restarts of a real gateway (the `restarted` fixture)
def test_keyed_retry_of_a_run_left_running_is_unknown_execution(restarted: Restarted) -> None:
    """§5.3, §5.4, W-5.7: the keyed retry of the run the killed gateway left running gets 409 unknown_execution."""
    retry = live_request(restarted.live, "POST", RUNS, {"input": "hang"}, {"Idempotency-Key": "crash-running"})
    assert_error_envelope(
        retry, 409, "unknown_execution", message="unknown_execution", type="conflict_error", param=None
    )


@pytest.mark.slow  # kill -9 and restarts of a real gateway (the `restarted` fixture)
def test_keyed_run_settled_before_the_kill_survives_the_restart(restarted: Restarted) -> None:
    """§6.2, §5.4: a keyed run is kept durably: after the restart GET reports it completed and /events replays the
    same journal (Last-Event-ID resume included); its keyed retry replays it."""
    run = live_run(restarted.live, restarted.completed)
    assert (run["status"], run["output"], run["last_event"]) == ("completed", USE_TOOL_ANSWER, "run.completed")
    events = live_events(restarted.live, restarted.completed)
    check_run_events(events, restarted.completed)
    assert events.view() == restarted.completed_events.view()
    assert live_events(restarted.live, restarted.completed, "3").view() == events.view()[3:]
    retry = live_request(restarted.live, "POST", RUNS, {"input": "use tool"}, {"Idempotency-Key": "crash-completed"})
    assert retry.status == 202 and retry.replayed
    assert retry.json() == {"run_id": restarted.completed, "status": "completed", "replayed": True}


@pytest.mark.slow  # kill -9 and restarts of a real gateway (the `restarted` fixture)
def test_unkeyed_run_is_kept_in_memory_only(restarted: Restarted) -> None:
    """§6.2: runs without an Idempotency-Key live in the process's memory: after a restart they are 404."""
    assert_error_envelope(
        live_request(restarted.live, "GET", f"{RUNS}/{restarted.unkeyed}"), 404, **RUN_NOT_FOUND["error"]
    )


@pytest.mark.slow  # kill -9 and restarts of a real gateway (the `restarted` fixture)
def test_another_credential_scope_gets_404_for_a_run(restarted: Restarted) -> None:
    """W-6.4, §1.3, §6.2: a run is visible only to the credential scope that created it: a gateway on the same home
    with a rotated API_SERVER_KEY answers 404 run_not_found on GET, /events and /stop."""
    other = start_gateway(restarted.live.home, {"API_SERVER_KEY": OTHER_KEY})
    try:
        other.key = OTHER_KEY
        for run_id in (restarted.completed, restarted.running):
            for method, path in (
                ("GET", f"{RUNS}/{run_id}"),
                ("GET", f"{RUNS}/{run_id}/events"),
                ("POST", f"{RUNS}/{run_id}/stop"),
            ):
                assert_error_envelope(live_request(other, method, path), 404, **RUN_NOT_FOUND["error"])
        assert live_run(restarted.live, restarted.completed)["status"] == "completed", (
            "the original scope still sees it"
        )
    finally:
        other.stop()
