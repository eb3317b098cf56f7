"""One terminal truth: every surface is a projection of the turn's recorded terminal status (WIRE.md §3.6).

Issue 5 deliverable 2, table-driven: for each terminal status — completed ("use tool"), incomplete ("exhaust",
iteration budget), failed ("fail") and cancelled ("hang", stopped through POST /v1/runs/{id}/stop) — one turn is
run through every surface (chat JSON and stream, Responses JSON and stream, POST /v1/runs, session chat JSON and
stream) and each surface's own terminal view plus the run behind it (GET /v1/runs/{id}, the terminal event of
/v1/runs/{id}/events) is compared with the §3.6 table. Checklist: W-3.7, W-3.8, W-4.8, W-4.16, W-6.2, W-6.6, W-7.2,
W-7.3. Real app in-process, scripted runtime (tests/scripts/chat.yaml); nothing is mocked.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.helpers import CHAT, RESPONSES, RUNS, Reply, read_reply, wait_for_async

FAIL_MESSAGE = "Provider authentication failed"


@dataclass(frozen=True)
class Outcome:
    """One row of the §3.6 table."""

    status: str
    text: str  # the chat.yaml turn that produces it
    finish_reason: str
    hermes: dict[str, Any] | None  # the chat `hermes` block (None: absent)
    chat_error: dict[str, Any] | None  # the chat root `error` (None: absent)
    incomplete_details: dict[str, Any] | None
    error_code: str | None  # runs / session / Responses error code
    turn_exit_reason: str | None
    answer: str  # the answer text every surface reports


OUTCOMES = {
    "completed": Outcome(
        "completed", "use tool", "stop", None, None, None, None, None, "Your project has README.md and src/."
    ),
    "incomplete": Outcome(
        "incomplete",
        "exhaust",
        "length",
        {"completed": False, "partial": True, "failed": False, "error_code": "iteration_budget_exhausted"},
        None,
        {"reason": "iteration_budget_exhausted"},
        None,
        "iteration_budget_exhausted",
        "I checked 41 of 60 log files; so far the linker step is the only failure.",
    ),
    "failed": Outcome(
        "failed",
        "fail",
        "error",
        {"completed": False, "partial": True, "failed": True, "error_code": "agent_error"},
        {"message": FAIL_MESSAGE, "type": "server_error", "param": None, "code": "agent_error"},
        None,
        "agent_error",
        None,
        "Diagnostic: ",
    ),
    "cancelled": Outcome(
        "cancelled",
        "hang",
        "cancelled",
        {"completed": False, "partial": False, "failed": False, "error_code": "cancelled"},
        None,
        None,
        None,
        None,
        "",
    ),
}


# -- driving one turn per surface ---------------------------------------------------------------------------------


async def get_json(api: TestClient, auth: dict[str, str], path: str) -> dict[str, Any]:
    async with api.get(path, headers=auth) as resp:
        assert resp.status == 200, await resp.text()
        return await resp.json()  # type: ignore[no-any-return]


async def stop_when_running(api: TestClient, auth: dict[str, str], run_id: str) -> None:
    """Wait until the turn's tool runs (its run's last event), then POST /v1/runs/{id}/stop."""
    await wait_for_async(
        lambda: get_json(api, auth, f"{RUNS}/{run_id}"),
        until=lambda run: run["last_event"] == "tool.started",
        what="the turn's tool",
    )
    async with api.post(f"{RUNS}/{run_id}/stop", headers=auth) as resp:
        assert resp.status == 200
        assert await resp.json() == {"run_id": run_id, "status": "stopping"}


async def run_projection(api: TestClient, auth: dict[str, str], run_id: str) -> dict[str, Any]:
    """The run behind a turn: GET status / last_event / output / error / turn_exit_reason, and the terminal event
    of its events stream with that event's own error / turn_exit_reason."""
    async with api.get(f"{RUNS}/{run_id}/events", headers=auth) as resp:  # ends after the terminal event
        assert resp.status == 200
        records = (await read_reply(resp, 10)).records
    run = await get_json(api, auth, f"{RUNS}/{run_id}")
    terminal = records[-1].json()
    assert sum(1 for r in records if r.json()["event"].startswith("run.")) == 1
    return {
        "status": run["status"],
        "last_event": run["last_event"],
        "events_terminal": terminal["event"],
        "output": run["output"],
        "events_output": terminal["output"],
        "error_code": (run["error"] or {}).get("code"),
        "events_error_code": (terminal.get("error") or {}).get("code"),
        "turn_exit_reason": run["turn_exit_reason"],
        "events_turn_exit_reason": terminal.get("turn_exit_reason"),
    }


Observed = tuple[str, dict[str, Any]]  # (run id, the surface's own terminal view)
Surface = Callable[[TestClient, dict[str, str], str, bool], Awaitable[Observed]]


async def post_turn(
    api: TestClient, auth: dict[str, str], path: str, body: dict[str, Any], cancel: bool
) -> tuple[str, Reply]:
    """POST one turn (stopped through its run once its tool runs when `cancel`); its run id and the whole reply."""
    async with api.post(path, json=body, headers=auth) as resp:
        assert resp.status == 200
        run_id = resp.headers["X-Hermes-Run-Id"]
        if cancel:
            await stop_when_running(api, auth, run_id)
        return run_id, await read_reply(resp)


async def chat_json(api: TestClient, auth: dict[str, str], text: str, cancel: bool) -> Observed:
    body = {"model": "hermes-agent", "messages": [{"role": "user", "content": text}]}
    run_id, got = await post_turn(api, auth, CHAT, body, cancel)
    reply = got.json()
    choice = reply["choices"][0]
    return run_id, {
        "finish_reason": choice["finish_reason"],
        "hermes": reply.get("hermes"),
        "error": reply.get("error"),
        "answer": choice["message"]["content"] or "",
    }


async def chat_stream(api: TestClient, auth: dict[str, str], text: str, cancel: bool) -> Observed:
    body = {"model": "hermes-agent", "stream": True, "messages": [{"role": "user", "content": text}]}
    run_id, reply = await post_turn(api, auth, CHAT, body, cancel)
    records = reply.records
    assert records[-1].data == "[DONE]"
    chunks = [r.json() for r in records[:-1] if r.event is None]
    finish = chunks[-1]
    answer = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    return run_id, {
        "finish_reason": finish["choices"][0]["finish_reason"],
        "hermes": finish.get("hermes"),
        "error": finish.get("error"),
        "answer": answer,
    }


def _response_view(response: dict[str, Any]) -> dict[str, Any]:
    messages = [i for i in response["output"] if i["type"] == "message" and i.get("phase") != "commentary"]
    answer = messages[-1]["content"][0]["text"] if messages else ""
    return {
        "status": response["status"],
        "incomplete_details": response["incomplete_details"],
        "error_code": (response["error"] or {}).get("code"),
        "answer": answer,
    }


async def responses_json(api: TestClient, auth: dict[str, str], text: str, cancel: bool) -> Observed:
    run_id, reply = await post_turn(api, auth, RESPONSES, {"model": "hermes-agent", "input": text}, cancel)
    response = reply.json()
    stored = await get_json(api, auth, f"{RESPONSES}/{response['id']}")
    return run_id, {**_response_view(response), "stored_status": stored["status"]}


async def responses_stream(api: TestClient, auth: dict[str, str], text: str, cancel: bool) -> Observed:
    body = {"model": "hermes-agent", "input": text, "stream": True}
    run_id, reply = await post_turn(api, auth, RESPONSES, body, cancel)
    records = reply.records
    terminals = [
        r.event
        for r in records
        if r.event in ("response.completed", "response.incomplete", "response.failed", "response.cancelled")
    ]
    response = records[-1].json()["response"]
    stored = await get_json(api, auth, f"{RESPONSES}/{response['id']}")
    return run_id, {**_response_view(response), "terminal_events": terminals, "stored_status": stored["status"]}


async def runs_api(api: TestClient, auth: dict[str, str], text: str, cancel: bool) -> Observed:
    async with api.post(RUNS, json={"input": text}, headers=auth) as resp:
        assert resp.status == 202
        run_id = (await resp.json())["run_id"]
    if cancel:
        await stop_when_running(api, auth, run_id)
    return run_id, {}


async def session_json(api: TestClient, auth: dict[str, str], text: str, cancel: bool) -> Observed:
    run_id, got = await post_turn(
        api, auth, f"/api/sessions/truth-{text.replace(' ', '-')}/chat", {"message": text}, cancel
    )
    reply = got.json()
    assert reply["run_id"] == run_id
    return run_id, {
        "status": reply["status"],
        "error_code": (reply["error"] or {}).get("code"),
        "turn_exit_reason": reply["turn_exit_reason"],
        "answer": reply["message"]["content"],
    }


async def session_stream(api: TestClient, auth: dict[str, str], text: str, cancel: bool) -> Observed:
    run_id, reply = await post_turn(
        api, auth, f"/api/sessions/truth-stream-{text.replace(' ', '-')}/chat/stream", {"message": text}, cancel
    )
    records = reply.records
    assert [r.event for r in records[-1:]] == ["done"]
    run_events = [r.json() for r in records if (r.event or "").startswith("run.") and r.event != "run.started"]
    assert len(run_events) == 1
    terminal = run_events[0]
    closing = [r.json() for r in records if r.event == "assistant.completed"]
    return run_id, {
        "terminal_event": terminal["event"],
        "status": terminal["status"],
        "error_code": (terminal.get("error") or {}).get("code"),
        "turn_exit_reason": terminal.get("turn_exit_reason"),
        "answer": closing[0]["content"] if closing else "",
    }


SURFACES: dict[str, Surface] = {
    "chat-json": chat_json,
    "chat-stream": chat_stream,
    "responses-json": responses_json,
    "responses-stream": responses_stream,
    "runs": runs_api,
    "session-json": session_json,
    "session-stream": session_stream,
}


def expected_surface_view(surface: str, outcome: Outcome) -> dict[str, Any]:
    """What §3.6 says the surface itself shows for the outcome."""
    if surface.startswith("chat"):
        return {
            "finish_reason": outcome.finish_reason,
            "hermes": outcome.hermes,
            "error": outcome.chat_error,
            "answer": outcome.answer,
        }
    if surface.startswith("responses"):
        view = {
            "status": outcome.status,
            "incomplete_details": outcome.incomplete_details,
            "error_code": outcome.error_code,
            "answer": outcome.answer,
            "stored_status": outcome.status,
        }
        if surface == "responses-stream":
            view["terminal_events"] = [f"response.{outcome.status}"]
        return view
    if surface == "runs":
        return {}
    view = {
        "status": outcome.status,
        "error_code": outcome.error_code,
        "turn_exit_reason": outcome.turn_exit_reason,
        "answer": outcome.answer,
    }
    if surface == "session-stream":
        view["terminal_event"] = f"run.{outcome.status}"
    return view


def expected_run_projection(outcome: Outcome) -> dict[str, Any]:
    """W-6.2: the run's settled status equals its terminal event name, on GET and on /events."""
    event = f"run.{outcome.status}"
    return {
        "status": outcome.status,
        "last_event": event,
        "events_terminal": event,
        "output": outcome.answer,
        "events_output": outcome.answer,
        "error_code": outcome.error_code,
        "events_error_code": outcome.error_code,
        "turn_exit_reason": outcome.turn_exit_reason,
        "events_turn_exit_reason": outcome.turn_exit_reason,
    }


@pytest.mark.parametrize("name", list(OUTCOMES))
async def test_every_surface_agrees_on_the_terminal_status(api: TestClient, auth: dict[str, str], name: str) -> None:
    """Issue 5 deliverable 2, §3.6, W-3.7, W-3.8, W-4.8, W-4.16, W-6.2, W-6.6, W-7.2, W-7.3: one turn per surface
    for the outcome; each surface's own terminal view, and the run behind it (GET /v1/runs/{id} status and
    last_event, the terminal event of its /events stream, error / turn_exit_reason), match the §3.6 row."""
    outcome = OUTCOMES[name]
    observed: dict[str, dict[str, Any]] = {}
    expected: dict[str, dict[str, Any]] = {}
    for surface, drive in SURFACES.items():
        run_id, view = await drive(api, auth, outcome.text, name == "cancelled")
        observed[surface] = {"surface": view, "run": await run_projection(api, auth, run_id)}
        expected[surface] = {
            "surface": expected_surface_view(surface, outcome),
            "run": expected_run_projection(outcome),
        }
    assert observed == expected


async def test_iteration_budget_exhaustion_reads_the_same_everywhere(api: TestClient, auth: dict[str, str]) -> None:
    """§3.6 iteration-budget row, W-3.7, W-4.16, W-6.2: chat `length` with error_code iteration_budget_exhausted and no
    root error, Responses `incomplete` with incomplete_details.reason, runs `incomplete` with turn_exit_reason —
    and the closing summary is the answer on every surface."""
    outcome = OUTCOMES["incomplete"]
    _, chat = await chat_stream(api, auth, "exhaust", False)
    assert (chat["finish_reason"], chat["hermes"]["error_code"], chat["error"]) == (
        "length",
        "iteration_budget_exhausted",
        None,
    )
    _, response = await responses_stream(api, auth, "exhaust", False)
    assert (response["status"], response["incomplete_details"]) == (
        "incomplete",
        {"reason": "iteration_budget_exhausted"},
    )
    run_id, _ = await runs_api(api, auth, "exhaust", False)
    run = await run_projection(api, auth, run_id)
    assert (run["status"], run["events_terminal"], run["turn_exit_reason"], run["events_turn_exit_reason"]) == (
        "incomplete",
        "run.incomplete",
        "iteration_budget_exhausted",
        "iteration_budget_exhausted",
    )
    assert chat["answer"] == response["answer"] == run["output"] == outcome.answer


async def test_failed_turn_with_diagnostic_text_is_failed_not_completed(api: TestClient, auth: dict[str, str]) -> None:
    """§3.6 failed row, W-7.3: diagnostic text before the failure does not make the turn a success: the session
    stream's assistant.completed (the closing frame) is followed by run.failed, and the run error carries the
    agent's message."""
    async with api.post("/api/sessions/truth-diagnostic/chat/stream", json={"message": "fail"}, headers=auth) as resp:
        run_id = resp.headers["X-Hermes-Run-Id"]
        records = (await read_reply(resp)).records
    names = [r.event for r in records]
    assert names[-3:] == ["assistant.completed", "run.failed", "done"]
    assert records[-3].json()["content"] == "Diagnostic: "
    assert records[-2].json()["error"] == {"code": "agent_error", "message": FAIL_MESSAGE}
    run = await get_json(api, auth, f"{RUNS}/{run_id}")
    assert run["error"] == {"code": "agent_error", "message": FAIL_MESSAGE}
