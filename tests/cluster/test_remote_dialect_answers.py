"""Answers in the client's own dialect to a turn suspended on another gateway (WIRE.md §15.1, W-15.4): two gateways A
and B on one PostgreSQL database, in one process, each the real API app (tests/cluster/conftest.py). A's delivery
pauses at a request to the client and publishes what the turn waits by (cluster/waits.py); the client's answer lands
on B, which finds the turn in the store, decides the answer from A's journal as A would, forwards it to A — where
the turn runs on, once — and streams the rest of A's journal in its dialect: a new completion / Response id, the same
run id.

- chat stream: `/approve` with the history resent (no session header) — and with an explicit session header;
- chat: a client tool call answered by `role: "tool"` messages;
- chat: an unrelated message denies the approval on A (the command never runs) and is B's own new turn;
- session chat: the session's next message;
- Responses: an `mcp_approval_response` with `previous_response_id`, stored by the owner as the turn's new Response —
  and statelessly, the whole history resent, by its `approval_request_id`;
- chat JSON replies; a second question answered back on the owner after B's delivery ended at it;
- a keyed answer retried on A and on B attaches or replays and never answers twice.
A command "runs" when its terminal tool completes without error.
"""

from __future__ import annotations

import secrets

from aiohttp.test_utils import TestClient

from hermes_api_plugin.http.app_keys import TURNS
from tests.helpers import (
    COMPLETION_ID,
    SUSPEND_ASK,
    SUSPEND_COMMAND,
    SUSPEND_DONE,
    WEATHER_TOOL,
    conversation,
    wait_for_async,
)
from tests.routes.responses_helpers import create, snapshot, stream_response
from tests.routes.support import (
    chat,
    create_session,
    get_run,
    json_chat,
    read_events,
    settled,
    stream_chat,
    suspended,
    terminal_results,
)


async def ran(api: TestClient, auth: dict[str, str], run_id: str) -> list[bool]:
    """Whether each terminal command of the run failed (False: it ran)."""
    return terminal_results((await read_events(api, auth, run_id)).payloads)


def never_ran_on(gateway: TestClient, run_id: str) -> bool:
    turns = gateway.server.app[TURNS]
    return turns.get(run_id) is None and turns.find(run_id) is None


async def test_w_15_4_approve_on_b_with_the_history_resent_runs_the_command_once_on_a(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4, W-15.1: a chat stream on A ends at the approval question; `/approve` — the history resent, no session
    header — posted to B resumes A's turn: B streams the rest as a new completion of the same run, the command runs
    once, on A."""
    a, b = suspend_replicas
    first = await stream_chat(a, auth, SUSPEND_ASK)
    run_id = first.headers["X-Hermes-Run-Id"]
    assert (await suspended(b, auth, run_id))["required_action"]["type"] == "approval"

    second = await stream_chat(b, auth, messages=conversation(SUSPEND_ASK, first.content, "/approve"))
    assert second.headers["X-Hermes-Run-Id"] == run_id  # the same turn, resumed
    assert COMPLETION_ID.match(second.finish["id"]) and second.finish["id"] != first.finish["id"]
    assert second.content == SUSPEND_DONE and second.finish["choices"][0]["finish_reason"] == "stop"
    assert second.headers["X-Hermes-Session-Id"] == first.headers["X-Hermes-Session-Id"]
    decided = [r.json() for r in second.records if r.event == "hermes.approval.responded"]
    assert [d["choice"] for d in decided] == ["once"]
    assert (await settled(a, auth, run_id))["status"] == "completed"
    assert await ran(a, auth, run_id) == [False]  # ran, exactly once
    assert never_ran_on(b, run_id)


async def test_w_15_4_with_an_explicit_session_the_next_message_on_b_answers(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4: a session the client names (X-Hermes-Session-Id): its next message answers from B, whatever history."""
    a, b = suspend_replicas
    session = {"X-Hermes-Session-Id": "remote-turn-taking-" + secrets.token_hex(4)}
    first = await stream_chat(a, auth, SUSPEND_ASK, headers=session)
    run_id = first.headers["X-Hermes-Run-Id"]
    second = await stream_chat(b, auth, "/approve", headers=session)
    assert second.headers["X-Hermes-Run-Id"] == run_id and second.content == SUSPEND_DONE
    assert second.headers["X-Hermes-Session-Id"] == session["X-Hermes-Session-Id"]
    assert await ran(a, auth, run_id) == [False]
    assert never_ran_on(b, run_id)


async def test_w_15_4_a_client_tool_call_of_a_is_answered_on_b_by_role_tool(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4, W-15.2: A's delivery ends with `tool_calls`; the `role: "tool"` message posted to B is the result A's
    agent answers with, streamed by B in the same run."""
    a, b = suspend_replicas
    first = await stream_chat(a, auth, "what is the weather in Paris?", tools=[WEATHER_TOOL])
    run_id = first.headers["X-Hermes-Run-Id"]
    assert first.finish["choices"][0]["finish_reason"] == "tool_calls"
    deltas = [
        c["choices"][0]["delta"]["tool_calls"][0] for c in first.plain if c["choices"][0]["delta"].get("tool_calls")
    ]
    call_id, arguments = deltas[0]["id"], "".join(d["function"]["arguments"] for d in deltas[1:])
    call = {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
    messages = [
        {"role": "user", "content": "what is the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": "sunny, 24 °C"},
    ]
    second = await stream_chat(b, auth, messages=messages, tools=[WEATHER_TOOL])
    assert second.headers["X-Hermes-Run-Id"] == run_id
    assert second.content == "get_weather returned: sunny, 24 °C"
    assert second.finish["choices"][0]["finish_reason"] == "stop"
    answered = [p for p in (await read_events(a, auth, run_id)).payloads if p["event"] == "tool_call.responded"]
    assert [(p["call_id"], p["output"]) for p in answered] == [(call_id, "sunny, 24 °C")]
    assert never_ran_on(b, run_id)


async def test_w_15_4_an_unrelated_message_on_b_denies_on_a_and_is_a_new_turn_on_b(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4, W-15.1: the conversation moves on through B — A's pending approval is denied (the command never runs)
    and B answers the message as a turn of its own."""
    a, b = suspend_replicas
    first = await stream_chat(a, auth, SUSPEND_ASK)
    run_id = first.headers["X-Hermes-Run-Id"]
    second = await stream_chat(b, auth, messages=conversation(SUSPEND_ASK, first.content, "hello"))
    assert second.headers["X-Hermes-Run-Id"] != run_id and second.content == "Hello."
    assert b.server.app[TURNS].find(second.headers["X-Hermes-Run-Id"]) is not None, "B ran the new turn"
    assert (await settled(a, auth, run_id))["status"] == "completed"
    assert await ran(a, auth, run_id) == [True]  # denied: it never ran


async def test_w_15_4_the_next_message_of_a_session_chat_answers_on_b(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4: session chat (/api/sessions/{id}/chat): the session's next message, posted to B, answers A's run."""
    a, b = suspend_replicas
    session = (await create_session(a, auth))["id"]
    headers, first = await chat(a, auth, session, SUSPEND_ASK)
    run_id = headers["X-Hermes-Run-Id"]
    assert first["status"] == "requires_action" and first["required_action"]["command"] == SUSPEND_COMMAND
    again, second = await chat(b, auth, session, "/approve")
    assert again["X-Hermes-Run-Id"] == run_id
    assert second["status"] == "completed" and second["message"]["content"] == SUSPEND_DONE
    assert await ran(a, auth, run_id) == [False]
    assert never_ran_on(b, run_id)


async def test_w_15_4_an_mcp_approval_response_on_b_resumes_the_response_of_a(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4, §15.3: a Response streamed by A ends with an mcp_approval_request; the mcp_approval_response posted to B
    with previous_response_id is a new Response of the same run, streamed by B; the command runs once, on A, and the
    owner stores the new Response as B streamed it (GET on either gateway)."""
    a, b = suspend_replicas
    first = await stream_response(a, auth, SUSPEND_ASK)
    run_id, response = first.headers["X-Hermes-Run-Id"], first.response
    [asked] = [item for item in response["output"] if item["type"] == "mcp_approval_request"]
    answer = {"type": "mcp_approval_response", "approval_request_id": asked["id"], "approve": True}
    second = await stream_response(b, auth, [answer], previous_response_id=response["id"])
    assert second.headers["X-Hermes-Run-Id"] == run_id
    resumed = second.response
    assert resumed["id"] != response["id"] and resumed["previous_response_id"] == response["id"]
    assert resumed["status"] == "completed"
    finals = [i for i in resumed["output"] if i["type"] == "message" and i.get("phase") == "final_answer"]
    assert "".join(p["text"] for i in finals for p in i["content"]) == SUSPEND_DONE
    assert (await settled(a, auth, run_id))["status"] == "completed"
    assert await ran(a, auth, run_id) == [False]
    assert never_ran_on(b, run_id)
    for gateway in (a, b):
        stored = await wait_for_async(
            lambda g=gateway: snapshot(g, auth, resumed["id"]), until=lambda r: r["status"] == "completed"
        )
        assert stored == resumed
    assert (await snapshot(a, auth, response["id"])) == response  # the Response it answered stays as it ended


async def test_w_15_4_a_keyed_answer_on_b_retried_on_a_and_on_b_never_answers_twice(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4, §15.1 idempotency: a keyed `/approve` posted to B reserves its key for A's run; its retries — on A and
    on B — attach to or replay the same delivery (same completion, same text) and never answer again."""
    a, b = suspend_replicas
    first = await stream_chat(a, auth, SUSPEND_ASK)
    run_id = first.headers["X-Hermes-Run-Id"]
    key = {"Idempotency-Key": "k-" + secrets.token_hex(8)}
    messages = conversation(SUSPEND_ASK, first.content, "/approve")
    second = await stream_chat(b, auth, messages=messages, headers=key)
    assert second.headers["X-Hermes-Run-Id"] == run_id and second.content == SUSPEND_DONE
    for gateway in (a, b, a):
        retry = await stream_chat(gateway, auth, messages=messages, headers=key)
        assert retry.headers["X-Hermes-Run-Id"] == run_id and retry.headers["Idempotency-Replayed"] == "true"
        assert retry.finish["id"] == second.finish["id"] and retry.content == SUSPEND_DONE
    assert (await get_run(a, auth, run_id))["status"] == "completed"
    assert await ran(a, auth, run_id) == [False]
    assert never_ran_on(b, run_id)


async def test_w_15_4_questions_answered_on_b_then_back_on_a_go_on_in_one_run(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4: the first question of A's run is answered on B, whose delivery then ends at the second question; the
    conversation's next message, back on A, answers that one (A finds its own turn by what B's delivery published)."""
    a, b = suspend_replicas
    first = await stream_chat(a, auth, "two questions")
    run_id = first.headers["X-Hermes-Run-Id"]
    assert first.content == "Which branch?"
    second = await stream_chat(b, auth, messages=conversation("two questions", first.content, "main"))
    assert second.headers["X-Hermes-Run-Id"] == run_id
    assert second.content.startswith("Branch main.") and second.content.endswith("Which region?")
    third = await stream_chat(
        a, auth, messages=conversation("two questions", first.content, "main", second.content, "eu")
    )
    assert third.headers["X-Hermes-Run-Id"] == run_id and third.content == "Region eu."
    assert (await settled(b, auth, run_id))["output"] == "Branch main. Region eu."
    assert never_ran_on(b, run_id)


async def test_w_15_4_a_stateless_history_on_b_answers_by_approval_request_id(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4, §15.1: an agent framework resends the whole history to B without previous_response_id; its trailing
    mcp_approval_response answers A's turn by its approval_request_id, as JSON."""
    a, b = suspend_replicas
    headers, first = await create(a, auth, SUSPEND_ASK)
    run_id = headers["X-Hermes-Run-Id"]
    [asked] = [item for item in first["output"] if item["type"] == "mcp_approval_request"]
    answer = {"type": "mcp_approval_response", "approval_request_id": asked["id"], "approve": True}
    again, resumed = await create(b, auth, [{"role": "user", "content": SUSPEND_ASK}, *first["output"], answer])
    assert again["X-Hermes-Run-Id"] == run_id and resumed["previous_response_id"] is None
    finals = [i for i in resumed["output"] if i["type"] == "message" and i.get("phase") == "final_answer"]
    assert "".join(p["text"] for i in finals for p in i["content"]) == SUSPEND_DONE
    assert await ran(a, auth, run_id) == [False]
    assert never_ran_on(b, run_id)


async def test_w_15_4_a_json_chat_answer_on_b_returns_the_resumed_completion(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4: the same as JSON replies: the question ends A's reply, the answer posted to B returns the rest."""
    a, b = suspend_replicas
    headers, first = await json_chat(a, auth, "deploy")
    asked = first["choices"][0]["message"]["content"]
    assert asked == "Which branch?"
    again, second = await json_chat(b, auth, messages=conversation("deploy", asked, "main"))
    assert again["X-Hermes-Run-Id"] == headers["X-Hermes-Run-Id"]
    assert second["choices"][0]["message"]["content"] == "Deploying main."
    assert second["id"] != first["id"]


async def test_w_15_4_a_response_answered_on_b_is_the_owners_current_one(
    suspend_replicas: tuple[TestClient, TestClient], auth: dict[str, str]
) -> None:
    """W-15.4, §15.3: A's Response asks the first question, the answer on B is a new Response that ends at the second
    question — the owner stores it so (GET on A) and takes its answer chained to it, back on A; each Response keeps its
    own part of the run."""
    a, b = suspend_replicas
    headers, first = await create(a, auth, "two questions")
    run_id = headers["X-Hermes-Run-Id"]
    again, second = await create(b, auth, "main", previous_response_id=first["id"])
    assert again["X-Hermes-Run-Id"] == run_id and second["previous_response_id"] == first["id"]
    assert "Which region?" in str(second["output"]) and "Which branch?" not in str(second["output"])
    assert await wait_for_async(lambda: snapshot(a, auth, second["id"]), until=lambda r: r == second)
    last_headers, third = await create(a, auth, "eu", previous_response_id=second["id"])
    assert last_headers["X-Hermes-Run-Id"] == run_id and third["previous_response_id"] == second["id"]
    finals = [i for i in third["output"] if i["type"] == "message" and i.get("phase") == "final_answer"]
    assert "".join(p["text"] for i in finals for p in i["content"]) == "Region eu."
    assert (await snapshot(a, auth, first["id"])) == first and (await snapshot(b, auth, second["id"])) == second
    assert (await settled(a, auth, run_id))["output"] == "Branch main. Region eu."
