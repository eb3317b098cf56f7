"""Answers to a suspended run that land on a gateway other than its owner (WIRE.md §15.1, W-15.4): two gateways on one
PostgreSQL database, in one process, each the real API app with its own boot id, lease, registry and feed listener
(as tests/cluster/test_remote_turns.py). The answer travels to the owner through the store's feed, the owner applies
it as its own route would, and the answering gateway replies as the owner would. Nothing is mocked.

- an approval through B: the command runs once, on A, and A's journal shows the decision; a keyed retry on either
  gateway replays, never decides again; the same key with another decision conflicts;
- a question answered through B resumes A's turn with the answer;
- client tool outputs posted to B return to the tool call of A's turn; a keyed retry replays, a wrong call_id is 409;
- through B, a run with nothing of the kind pending, or settled, gets the same 409 codes as on its owner;
- the owner checks the forwarded credential scope again; an owner that does not reply leaves the run suspended and
  B answers 503 answer_unconfirmed; when only the reply was lost, a keyed retry gets the owner's recorded outcome;
- a 50 KB tool output and a 50 KB answer (past PostgreSQL's NOTIFY payload limit) cross as well.
Fault injection (a closed listener, a dropped reply) is the only thing these tests do to the gateways.
"""

from __future__ import annotations

import secrets
from typing import Any

from aiohttp.test_utils import TestClient

from hermes_api_plugin.core.events import QuestionAnswered, ToolCallAnswered
from hermes_api_plugin.http.app_keys import LEASES, REMOTE_TURNS, SCOPE, TURNS
from hermes_api_plugin.turns.answers import APPROVAL, TOOL_OUTPUTS, ClientAnswer
from hermes_api_plugin.turns.suspension import Keyed
from tests.helpers import RUNS, WEATHER_TOOL, assert_error_envelope, fetch, wait_for_async
from tests.routes.support import (
    get_run,
    post_tool_outputs,
    read_events,
    settled,
    start_run,
    suspended,
    terminal_results,
    tool_call_waiting,
)

BIG = 50_000  # characters of a tool output or an answer: far past a NOTIFY payload (under 8000 bytes)


async def post(api: TestClient, auth: dict[str, str], path: str, body: Any, key: str | None = None) -> Any:
    headers = {**auth, "Idempotency-Key": key} if key is not None else auth
    return await fetch(api, "POST", path, json=body, headers=headers)


async def test_w_15_4_an_approval_through_b_runs_the_command_once_on_a(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4: a run A runs suspends at an approval; B sees it requires_action, B's decision reaches A, which resumes
    the same turn: the command runs once, on A; A's journal shows the one decision. B's reply is the owner's reply;
    its keyed retry (on B or on A) replays without deciding again; the key with another decision conflicts."""
    a, b = suspend_replicas
    run_id = await start_run(a, auth, "delete the build")
    run = await suspended(b, auth, run_id)
    assert run["required_action"]["type"] == "approval" and run["required_action"]["command"] == "rm -rf build/"
    key = "k-" + secrets.token_hex(8)
    reply = await post(b, auth, f"{RUNS}/{run_id}/approval", {"choice": "approve"}, key)
    assert reply.status == 200 and reply.json() == {
        "object": "hermes.run.approval_response",
        "run_id": run_id,
        "choice": "once",
        "resolved": 1,
    }
    assert "Idempotency-Replayed" not in reply.headers
    for gateway in (b, a):  # a keyed retry anywhere is told it was applied — and applies nothing
        retry = await post(gateway, auth, f"{RUNS}/{run_id}/approval", {"choice": "once"}, key)
        assert retry.status == 200 and retry.json() == reply.json()
        assert retry.headers["Idempotency-Replayed"] == "true"
    other = await post(b, auth, f"{RUNS}/{run_id}/approval", {"choice": "deny"}, key)
    assert_error_envelope(other, 409, "admission_conflict")
    done = await settled(a, auth, run_id)
    assert done["status"] == "completed" and done["output"] == "Done with the build directory."
    events = await read_events(a, auth, run_id)
    assert [p["choice"] for p in events.payloads if p["event"] == "approval.responded"] == ["once"]
    assert terminal_results(events.payloads) == [False]  # ran, once
    assert b.server.app[TURNS].get(run_id) is None and b.server.app[TURNS].find(run_id) is None, "B never ran it"


async def test_w_15_4_a_question_answered_through_b_resumes_the_turn_on_a(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4: a question A's run asks is answered through B; A's turn goes on with the answer."""
    a, b = suspend_replicas
    run_id = await start_run(a, auth, "deploy")
    run = await suspended(b, auth, run_id)
    assert run["required_action"] == {"type": "question", "question": "Which branch?", "choices": []}
    reply = await post(b, auth, f"{RUNS}/{run_id}/answer", {"text": "main"})
    assert reply.status == 200 and reply.json() == {"object": "hermes.run.answer", "run_id": run_id, "answered": 1}
    twice = await post(b, auth, f"{RUNS}/{run_id}/answer", {"text": "release"})  # answered once, never twice
    assert_error_envelope(twice, 409, "question_not_pending", type="conflict_error")
    done = await settled(a, auth, run_id)
    assert done["status"] == "completed" and done["output"] == "Deploying main."
    events = await read_events(b, auth, run_id)
    assert [p["answer"] for p in events.payloads if p["event"] == "question.responded"] == ["main"]


async def test_w_15_4_b_answering_a_run_with_nothing_pending_gets_the_owners_409(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4: through B, an approval for a run of A that waits for a question is 409 approval_not_pending (what A
    says); once the run settled, 409 approval_not_active and question_not_pending, as on A. Nothing was decided."""
    a, b = suspend_replicas
    run_id = await start_run(a, auth, "deploy")
    await suspended(b, auth, run_id)
    wrong = await post(b, auth, f"{RUNS}/{run_id}/approval", {"choice": "once"})
    assert_error_envelope(wrong, 409, "approval_not_pending", type="conflict_error")
    assert (await post(a, auth, f"{RUNS}/{run_id}/answer", {"text": "main"})).status == 200
    done = await settled(a, auth, run_id)
    assert done["output"] == "Deploying main."
    for gateway in (b, a):
        late = await post(gateway, auth, f"{RUNS}/{run_id}/approval", {"choice": "once"})
        assert_error_envelope(late, 409, "approval_not_active", type="conflict_error")
        unasked = await post(gateway, auth, f"{RUNS}/{run_id}/answer", {"text": "again"})
        assert_error_envelope(unasked, 409, "question_not_pending", type="conflict_error")
    events = await read_events(a, auth, run_id)
    assert not any(p["event"] == "approval.responded" for p in events.payloads)


async def test_w_15_4_a_forwarded_answer_applies_only_in_the_scope_that_admitted_the_run(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4: the owner checks the forwarded scope again — an answer naming another credential scope finds no run
    to answer (a forwarded decision is exactly as authorised as a local one); in the run's own scope it applies."""
    a, b = suspend_replicas
    run_id = await start_run(a, auth, "delete the build")
    await suspended(b, auth, run_id)
    owner, remote = a.server.app[LEASES].owner, b.server.app[REMOTE_TURNS]
    approve = ClientAnswer(APPROVAL, choice="once")
    assert await remote.forward_answer(owner, run_id, "another-scope", approve) is None
    assert (await suspended(a, auth, run_id))["required_action"]["type"] == "approval", "nothing was decided"
    assert await remote.forward_answer(owner, run_id, a.server.app[SCOPE], approve) == (Keyed.APPLIED, 1)
    done = await settled(a, auth, run_id)
    assert done["status"] == "completed"
    assert terminal_results((await read_events(a, auth, run_id)).payloads) == [False]


async def test_w_15_4_an_owner_that_does_not_reply_leaves_the_run_suspended_and_b_answers_503(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4: when the owner cannot be reached (its feed listener is gone; its lease is still alive), B waits a
    bounded time for the reply, then answers 503 answer_unconfirmed with Retry-After — it cannot know whether the
    answer was applied, so it never says "nothing pending"; the run stays suspended and A decides it later."""
    a, b = suspend_replicas
    run_id = await start_run(a, auth, "delete the build")
    await suspended(b, auth, run_id)
    feed = a.server.app[REMOTE_TURNS].feed
    assert feed is not None
    await feed.close()  # A hears nothing any more
    b.server.app[REMOTE_TURNS].answer_wait_s = 0.3
    unheard = await post(b, auth, f"{RUNS}/{run_id}/approval", {"choice": "once"})
    assert_error_envelope(unheard, 503, "answer_unconfirmed", type="server_error")
    assert unheard.headers["Retry-After"] == "1"
    assert (await suspended(a, auth, run_id))["required_action"]["type"] == "approval", "nothing was decided"
    assert (await post(a, auth, f"{RUNS}/{run_id}/approval", {"choice": "deny"})).status == 200
    assert (await settled(a, auth, run_id))["status"] == "completed"


async def test_w_15_4_a_lost_reply_is_503_and_the_keyed_retry_gets_the_owners_outcome(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4: A applies the answer B forwarded but its reply is lost: B answers 503 answer_unconfirmed (Retry-After).
    The keyed retry reaches A again and gets what A recorded for the key — answered 1, replayed — and answers nothing
    twice: the run's next question still waits, and the journal holds the one answer."""
    a, b = suspend_replicas
    run_id = await start_run(a, auth, "two questions")
    await suspended(b, auth, run_id)
    feed = a.server.app[REMOTE_TURNS].feed
    assert feed is not None
    sent = feed.reply_answer
    dropped: list[str] = []

    async def lose_first(to: str, message: str) -> None:
        if not dropped:
            dropped.append(message)  # the reply never reaches B
            return
        await sent(to, message)

    feed.reply_answer = lose_first  # type: ignore[method-assign]
    b.server.app[REMOTE_TURNS].answer_wait_s = 0.5
    key = "k-" + secrets.token_hex(8)
    lost = await post(b, auth, f"{RUNS}/{run_id}/answer", {"text": "main"}, key)
    assert_error_envelope(lost, 503, "answer_unconfirmed", type="server_error")
    assert lost.headers["Retry-After"] == "1" and dropped, "A applied it and replied; the reply was lost"
    second = await wait_for_async(
        lambda: get_run(b, auth, run_id),
        until=lambda run: run.get("required_action", {}).get("question") == "Which region?",
        what="the second question",
    )
    assert second["status"] == "requires_action"
    b.server.app[REMOTE_TURNS].answer_wait_s = 5.0
    retry = await post(b, auth, f"{RUNS}/{run_id}/answer", {"text": "main"}, key)
    assert retry.status == 200 and retry.headers["Idempotency-Replayed"] == "true"
    assert retry.json() == {"object": "hermes.run.answer", "run_id": run_id, "answered": 1}
    assert (await get_run(a, auth, run_id))["required_action"]["question"] == "Which region?", "not answered twice"
    assert (await post(b, auth, f"{RUNS}/{run_id}/answer", {"text": "eu"})).status == 200
    assert (await settled(a, auth, run_id))["output"] == "Branch main. Region eu."
    events = await read_events(a, auth, run_id)
    assert [p["answer"] for p in events.payloads if p["event"] == "question.responded"] == ["main", "eu"]


async def test_w_15_4_tool_outputs_posted_to_b_reach_the_tool_call_on_a(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.2 / W-15.4: a run A runs calls a client tool; B shows the call as required_action, the output posted to B
    returns to A's turn (as A's own route would: a wrong call_id 409, then the output, keyed; the retry replays), and
    the agent on A answers with it. The owner checks the forwarded scope for tool outputs too."""
    a, b = suspend_replicas
    run_id = await start_run(a, auth, "what is the weather", tools=[WEATHER_TOOL])
    action = await tool_call_waiting(b, auth, run_id)
    assert action["name"] == "get_weather"
    wrong = await post_tool_outputs(b, auth, run_id, [("call_unknown", "x")])
    assert_error_envelope(wrong, 409, "tool_call_not_pending", type="conflict_error")
    owner, remote = a.server.app[LEASES].owner, b.server.app[REMOTE_TURNS]
    elsewhere = ClientAnswer(TOOL_OUTPUTS, outputs=((action["call_id"], "forged"),))
    assert await remote.forward_answer(owner, run_id, "another-scope", elsewhere) is None
    key = "k-" + secrets.token_hex(8)
    reply = await post_tool_outputs(b, auth, run_id, [(action["call_id"], "sunny")], key)
    assert reply.status == 200 and reply.json() == {
        "object": "hermes.run.tool_outputs",
        "run_id": run_id,
        "answered": 1,
    }
    done = await settled(b, auth, run_id)
    assert done["status"] == "completed" and done["output"] == "get_weather returned: sunny"
    events = await read_events(a, auth, run_id)
    assert [p["output"] for p in events.payloads if p["event"] == "tool_call.responded"] == ["sunny"]
    assert b.server.app[TURNS].find(run_id) is None, "B never ran it"


async def test_w_15_4_a_50_kb_tool_output_and_a_50_kb_answer_cross_to_the_owner(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4: answers far past PostgreSQL's NOTIFY payload limit, posted to B, reach the turn on A whole (the feed
    carries them by reference): a 50 KB client tool output and a 50 KB answer to a question, non-ASCII included.
    (The scripted agent would stream each back 8 characters at a time; the runs are stopped once A's journal holds
    the answer.)"""
    a, b = suspend_replicas
    output = ("sunny ☀ " * (BIG // 8 + 1))[:BIG]
    run_id = await start_run(a, auth, "what is the weather", tools=[WEATHER_TOOL])
    call_id = (await tool_call_waiting(b, auth, run_id))["call_id"]
    reply = await post_tool_outputs(b, auth, run_id, [(call_id, output)], "k-" + secrets.token_hex(8))
    assert reply.status == 200 and reply.json()["answered"] == 1
    assert await answer_on_a(a, run_id, ToolCallAnswered) == ToolCallAnswered(call_id, output)

    answer = ("main-branch é " * (BIG // 14 + 1))[:BIG]
    asked = await start_run(a, auth, "deploy")
    await suspended(b, auth, asked)
    reply = await post(b, auth, f"{RUNS}/{asked}/answer", {"text": answer})
    assert reply.status == 200 and reply.json()["answered"] == 1
    assert await answer_on_a(a, asked, QuestionAnswered) == QuestionAnswered(answer)
    for each in (run_id, asked):
        assert (await post(b, auth, f"{RUNS}/{each}/stop", None)).status == 200
        assert (await settled(a, auth, each))["status"] == "cancelled"


async def answer_on_a(a: TestClient, run_id: str, kind: type[Any]) -> Any:
    """The answer of `kind` in the journal of A's live turn, once it is there."""
    turn = a.server.app[TURNS].get(run_id)
    assert turn is not None
    return await wait_for_async(
        lambda: next((e for e in turn.journal.events if isinstance(e, kind)), None),
        until=lambda found: found is not None,
        what="the answer on A",
    )
