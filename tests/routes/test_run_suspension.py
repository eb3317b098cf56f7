"""Suspended turns on the runs surface with the scripted runtime (WIRE.md §15.1, §15.4, §15.5): `requires_action` and
`required_action` while a run waits for its client, `POST /v1/runs/{id}/approval` and `/answer` resuming it, and the
negative resolution on timeout and stop. A command "runs" when its terminal tool completes without error
(`Ran terminal: …`); denied, it completes with the denial as its error."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.conftest import ApiFactory
from tests.helpers import RUNS, SUSPEND_COMMAND, SUSPEND_SCRIPT, assert_error_envelope, fetch, wait_for_async

from .support import check_run_events, get_run, read_events, settled, start_run, suspended, terminal_results


async def post(api: TestClient, auth: dict[str, str], path: str, body: Any) -> Any:
    return await fetch(api, "POST", path, json=body, headers=auth)


async def test_w_15_1_an_approved_command_runs_once_and_the_run_resumes(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """W-15.1 on runs: the run requires an approval (its required_action says what), `once` resumes the same turn
    (running again, no required_action), the command runs exactly once and the answer follows."""
    api = await make_api(script=SUSPEND_SCRIPT)
    run_id = await start_run(api, auth, "delete the build")
    run = await suspended(api, auth, run_id)
    assert run["required_action"] == {
        "type": "approval",
        "command": SUSPEND_COMMAND,
        "description": "dangerous command (scripted)",
        "choices": ["once", "session", "always", "deny"],
    }
    assert run["last_event"] == "approval.request" and run["output"] == ""
    reply = await post(api, auth, f"{RUNS}/{run_id}/approval", {"choice": "approve"})
    assert reply.status == 200 and reply.json() == {
        "object": "hermes.run.approval_response",
        "run_id": run_id,
        "choice": "once",
        "resolved": 1,
    }
    resumed = await get_run(api, auth, run_id)
    assert resumed["status"] == "running" and "required_action" not in resumed
    assert resumed["last_event"] in ("approval.responded", "tool.completed")  # the approved command may be done
    again = await post(api, auth, f"{RUNS}/{run_id}/approval", {"choice": "once"})  # nothing pends any more
    assert_error_envelope(again, 409, "approval_not_pending", type="conflict_error")
    done = await settled(api, auth, run_id)
    assert done["status"] == "completed" and done["output"] == "Done with the build directory."
    events = await read_events(api, auth, run_id)
    names = events.names
    assert names.index("tool.started") < names.index("approval.request") < names.index("approval.responded")
    assert names.index("approval.responded") < names.index("tool.completed") < names.index("run.completed")
    request = next(p for p in events.payloads if p["event"] == "approval.request")
    assert request["command"] == SUSPEND_COMMAND and request["choices"][-1] == "deny"
    assert [p["choice"] for p in events.payloads if p["event"] == "approval.responded"] == ["once"]
    assert terminal_results(events.payloads) == [False]  # ran, once


async def test_w_15_1_a_denied_command_never_runs_and_the_turn_goes_on(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    api = await make_api(script=SUSPEND_SCRIPT)
    run_id = await start_run(api, auth, "delete the build")
    await suspended(api, auth, run_id)
    assert (await post(api, auth, f"{RUNS}/{run_id}/approval", {"choice": "deny"})).status == 200
    done = await settled(api, auth, run_id)
    assert done["status"] == "completed" and done["output"] == "Done with the build directory."
    events = await read_events(api, auth, run_id)
    assert [p["choice"] for p in events.payloads if p["event"] == "approval.responded"] == ["deny"]
    assert terminal_results(events.payloads) == [True]  # the denial is the tool's error: it never ran


async def test_w_15_1_no_answer_within_suspend_seconds_denies(make_api: ApiFactory, auth: dict[str, str]) -> None:
    """`api_server.turns.suspend_seconds` bounds the wait: then the approval is denied and the question unanswered."""
    api = await make_api(script=SUSPEND_SCRIPT, config={"api_server": {"turns": {"suspend_seconds": 0.2}}})
    run_id = await start_run(api, auth, "delete the build")
    done = await settled(api, auth, run_id)
    assert done["status"] == "completed" and "required_action" not in done
    events = await read_events(api, auth, run_id)
    assert [p["choice"] for p in events.payloads if p["event"] == "approval.responded"] == ["deny"]
    assert terminal_results(events.payloads) == [True]
    asked = await start_run(api, auth, "deploy")
    answered = await settled(api, auth, asked)
    assert answered["output"] == "Deploying no answer."
    events = await read_events(api, auth, asked)
    assert [p["answer"] for p in events.payloads if p["event"] == "question.responded"] == [None]


async def test_w_15_1_a_stop_while_suspended_denies_and_cancels(make_api: ApiFactory, auth: dict[str, str]) -> None:
    api = await make_api(script=SUSPEND_SCRIPT)
    run_id = await start_run(api, auth, "delete the build")
    await suspended(api, auth, run_id)
    stopped = await post(api, auth, f"{RUNS}/{run_id}/stop", None)
    assert stopped.status == 200 and stopped.json() == {"run_id": run_id, "status": "stopping"}
    done = await settled(api, auth, run_id)
    assert done["status"] == "cancelled"
    events = await read_events(api, auth, run_id)
    names = events.names
    assert names.index("approval.responded") < names.index("run.cancelled")
    assert [p["choice"] for p in events.payloads if p["event"] == "approval.responded"] == ["deny"]
    assert False not in terminal_results(events.payloads)  # the command never ran
    late = await post(api, auth, f"{RUNS}/{run_id}/approval", {"choice": "once"})
    assert_error_envelope(late, 409, "approval_not_active", type="conflict_error")


async def test_a_question_round_trip_through_answer(make_api: ApiFactory, auth: dict[str, str]) -> None:
    """§15.4: the run requires an answer to its question; `/answer` resumes it and the turn uses the answer."""
    api = await make_api(script=SUSPEND_SCRIPT)
    run_id = await start_run(api, auth, "deploy")
    run = await suspended(api, auth, run_id)
    assert run["required_action"] == {"type": "question", "question": "Which branch?", "choices": []}
    assert run["last_event"] == "question.request"
    wrong = await post(api, auth, f"{RUNS}/{run_id}/approval", {"choice": "once"})  # a question is no approval
    assert_error_envelope(wrong, 409, "approval_not_pending", type="conflict_error")
    reply = await post(api, auth, f"{RUNS}/{run_id}/answer", {"text": "main"})
    assert reply.status == 200 and reply.json() == {"object": "hermes.run.answer", "run_id": run_id, "answered": 1}
    assert (await get_run(api, auth, run_id))["status"] == "running"
    twice = await post(api, auth, f"{RUNS}/{run_id}/answer", {"text": "release"})  # answered once, never twice
    assert_error_envelope(twice, 409, "question_not_pending", type="conflict_error")
    done = await settled(api, auth, run_id)
    assert done["status"] == "completed" and done["output"] == "Deploying main."
    events = await read_events(api, auth, run_id)
    check_run_events(events, run_id)
    asked = next(p for p in events.payloads if p["event"] == "question.request")
    assert (asked["question"], asked["choices"]) == ("Which branch?", [])
    assert [p["answer"] for p in events.payloads if p["event"] == "question.responded"] == ["main"]


async def test_answer_errors_in_the_one_envelope(make_api: ApiFactory, auth: dict[str, str]) -> None:
    """404 for an unknown run before the body; the body is checked before the turn (400); 409 when no question
    pends — an approval pending, a run that never asked, a settled run."""
    api = await make_api(script=SUSPEND_SCRIPT)
    unknown = await post(api, auth, f"{RUNS}/run_{'0' * 32}/answer", {"text": "x"})
    assert_error_envelope(unknown, 404, "run_not_found")
    run_id = await start_run(api, auth, "delete the build")
    await suspended(api, auth, run_id)
    for bad in ({}, {"text": 3}, {"text": None}, ["main"]):
        assert_error_envelope(await post(api, auth, f"{RUNS}/{run_id}/answer", bad), 400)
    on_approval = await post(api, auth, f"{RUNS}/{run_id}/answer", {"text": "yes"})
    assert_error_envelope(on_approval, 409, "question_not_pending", type="conflict_error")
    assert (await get_run(api, auth, run_id))["status"] == "requires_action"  # the approval still waits
    await post(api, auth, f"{RUNS}/{run_id}/approval", {"choice": "deny"})
    await settled(api, auth, run_id)
    after = await post(api, auth, f"{RUNS}/{run_id}/answer", {"text": "main"})
    assert_error_envelope(after, 409, "question_not_pending", type="conflict_error")
    plain = await start_run(api, auth, "hello")
    await settled(api, auth, plain)
    assert_error_envelope(await post(api, auth, f"{RUNS}/{plain}/answer", {"text": "x"}), 409, "question_not_pending")


async def test_w_15_4_a_keyed_retry_of_an_answer_never_answers_twice(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """The retry of a keyed answer, sent while the turn already waits for its next question, is told the first reply
    (Idempotency-Replayed) and answers nothing; the same key with another answer conflicts; a malformed key is 400."""
    api = await make_api(script=SUSPEND_SCRIPT)
    run_id = await start_run(api, auth, "two questions")
    await suspended(api, auth, run_id)
    path = f"{RUNS}/{run_id}/answer"
    bad = await fetch(api, "POST", path, json={"text": "main"}, headers={**auth, "Idempotency-Key": " "})
    assert_error_envelope(bad, 400, "invalid_idempotency_key")
    keyed = {**auth, "Idempotency-Key": "answer-1"}
    first = await fetch(api, "POST", path, json={"text": "main"}, headers=keyed)
    assert first.status == 200 and "Idempotency-Replayed" not in first.headers
    second = await wait_for_async(
        lambda: get_run(api, auth, run_id),
        until=lambda run: run.get("required_action", {}).get("question") == "Which region?",
        what="the second question",
    )
    assert second["status"] == "requires_action"
    retry = await fetch(api, "POST", path, json={"text": "main"}, headers=keyed)
    assert (retry.status, retry.headers["Idempotency-Replayed"]) == (200, "true")
    assert retry.json() == first.json() == {"object": "hermes.run.answer", "run_id": run_id, "answered": 1}
    other = await fetch(api, "POST", path, json={"text": "release"}, headers=keyed)
    assert_error_envelope(other, 409, "admission_conflict")
    assert (await get_run(api, auth, run_id))["required_action"]["question"] == "Which region?"  # still unanswered
    region = await fetch(api, "POST", path, json={"text": "eu"}, headers={**auth, "Idempotency-Key": "answer-2"})
    assert region.status == 200
    done = await settled(api, auth, run_id)
    assert done["output"] == "Branch main. Region eu."
    events = await read_events(api, auth, run_id)
    assert [p["answer"] for p in events.payloads if p["event"] == "question.responded"] == ["main", "eu"]


async def test_a_keyed_approval_retry_is_replayed_not_applied_again(make_api: ApiFactory, auth: dict[str, str]) -> None:
    api = await make_api(script=SUSPEND_SCRIPT)
    run_id = await start_run(api, auth, "delete the build")
    await suspended(api, auth, run_id)
    keyed = {**auth, "Idempotency-Key": "approve-1"}
    path = f"{RUNS}/{run_id}/approval"
    assert (await fetch(api, "POST", path, json={"choice": "once"}, headers=keyed)).status == 200
    retry = await fetch(api, "POST", path, json={"choice": "once"}, headers=keyed)
    assert (retry.status, retry.headers["Idempotency-Replayed"], retry.json()["resolved"]) == (200, "true", 1)
    assert_error_envelope(
        await fetch(api, "POST", path, json={"choice": "deny"}, headers=keyed), 409, "admission_conflict"
    )
    await settled(api, auth, run_id)
    events = await read_events(api, auth, run_id)
    assert [p["choice"] for p in events.payloads if p["event"] == "approval.responded"] == ["once"]
