"""Turn-taking on Chat Completions with the scripted runtime (WIRE.md §15.1, §15.2): a delivery ends where the turn
suspends — the approval question or the agent's question as the assistant's message, the client's tool calls as
`tool_calls` — and the conversation's next request answers it in the same dialect (`/approve`, `/deny`, plain words,
any message for a question, `role: "tool"` messages for tool calls), continuing the same run. A command "runs" when
its terminal tool completes without error (`Ran terminal: …`)."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.conftest import ApiFactory
from tests.helpers import (
    CHAT,
    COMPLETION_ID,
    RUNS,
    SUSPEND_ASK,
    SUSPEND_COMMAND,
    SUSPEND_DONE,
    SUSPEND_SCRIPT,
    WEATHER_ARGUMENTS,
    WEATHER_TOOL,
    assert_error_envelope,
    chat_body,
    conversation,
    fetch,
)

from .support import ChatStream, get_run, json_chat, read_events, stream_chat, suspended, terminal_results


def suspended_as(result: ChatStream | dict[str, Any], kind: str) -> None:
    """The delivery ended at a request to the client: `finish_reason` and the root `hermes` object say which."""
    last = result.finish if isinstance(result, ChatStream) else result
    reason = "tool_calls" if kind == "client_tool" else "stop"
    assert last["choices"][0]["finish_reason"] == reason
    assert last["hermes"]["suspended"] == kind and last["hermes"]["completed"] is False


async def run_events(api: TestClient, auth: dict[str, str], run_id: str) -> list[dict[str, Any]]:
    return (await read_events(api, auth, run_id)).payloads


async def test_w_15_1_approve_typed_in_the_chat_runs_the_command_once(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """W-15.1: the stream ends with the approval question (after the Open WebUI status record), `/approve` as the
    next message of the conversation continues the same run — a new completion — and the command runs once."""
    api = await make_api(script=SUSPEND_SCRIPT)
    first = await stream_chat(api, auth, SUSPEND_ASK)
    suspended_as(first, "approval")
    run_id = first.headers["X-Hermes-Run-Id"]
    asked = [r.json() for r in first.records if r.event == "hermes.approval.request"]
    assert asked and asked[0]["command"] == SUSPEND_COMMAND and asked[0]["run_id"] == run_id
    # finished: the reply ends under it (an unfinished status would shimmer on the question for good in Open WebUI)
    assert asked[0]["event"]["data"] == {"description": f"Waiting for approval: {SUSPEND_COMMAND}", "done": True}
    assert first.content.startswith("Cleaning up.") and SUSPEND_COMMAND in first.content and "/approve" in first.content
    assert "/deny" in first.content and "/approve always" in first.content
    assert (await suspended(api, auth, run_id))["required_action"]["type"] == "approval"

    second = await stream_chat(api, auth, messages=conversation(SUSPEND_ASK, first.content, "/approve"))
    assert second.headers["X-Hermes-Run-Id"] == run_id  # the same turn, resumed
    assert COMPLETION_ID.match(second.finish["id"]) and second.finish["id"] != first.finish["id"]
    assert second.finish["choices"][0]["finish_reason"] == "stop" and "hermes" not in second.finish
    assert second.content == SUSPEND_DONE
    decided = [r.json() for r in second.records if r.event == "hermes.approval.responded"]
    assert [d["choice"] for d in decided] == ["once"]
    statuses = [r.json()["event"]["data"]["description"] for r in second.records if r.event == "hermes.tool.progress"]
    assert f"Ran terminal: {SUSPEND_COMMAND}" in statuses
    assert terminal_results(await run_events(api, auth, run_id)) == [False]  # ran, exactly once
    assert (await get_run(api, auth, run_id))["status"] == "completed"

    # Issue 14 across the answer: the conversation as the client holds it (the question, `/approve`) goes on in the
    # same session, though its transcript holds neither
    third = await stream_chat(
        api, auth, messages=conversation(SUSPEND_ASK, first.content, "/approve", second.content, "hello")
    )
    assert third.content == "Hello." and third.headers["X-Hermes-Run-Id"] != run_id
    assert third.headers["X-Hermes-Session-Id"] == first.headers["X-Hermes-Session-Id"]


async def test_w_15_1_deny_or_a_plain_no_never_runs_it_and_a_plain_yes_does(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """W-15.1: `/deny` and Hermes' plain words (`no`, `yes`, `ok`, …) while an approval is pending."""
    api = await make_api(script=SUSPEND_SCRIPT)
    for answer, ran in (("/deny", False), ("No", False), ("yes", True), ("/approve session", True)):
        first = await stream_chat(api, auth, SUSPEND_ASK)
        run_id = first.headers["X-Hermes-Run-Id"]
        second = await stream_chat(api, auth, messages=conversation(SUSPEND_ASK, first.content, answer))
        assert second.headers["X-Hermes-Run-Id"] == run_id and second.content == SUSPEND_DONE, answer
        assert terminal_results(await run_events(api, auth, run_id)) == [not ran], answer


async def test_w_15_1_an_unrelated_message_denies_and_is_answered_as_a_new_turn(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """W-15.1: the conversation moves on — the pending approval is denied (the command never runs) and the message
    is a turn of its own."""
    api = await make_api(script=SUSPEND_SCRIPT)
    first = await stream_chat(api, auth, SUSPEND_ASK)
    run_id = first.headers["X-Hermes-Run-Id"]
    second = await stream_chat(api, auth, messages=conversation(SUSPEND_ASK, first.content, "hello"))
    assert second.headers["X-Hermes-Run-Id"] != run_id and second.content == "Hello."
    assert terminal_results(await run_events(api, auth, run_id)) == [True]  # denied: it never ran
    assert (await get_run(api, auth, run_id))["status"] == "completed"


async def test_w_15_1_with_an_explicit_session_the_next_message_answers(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """A session the client names (X-Hermes-Session-Id): its next message answers, whatever history it sends."""
    api = await make_api(script=SUSPEND_SCRIPT)
    session = {"X-Hermes-Session-Id": "turn-taking-1"}
    first = await stream_chat(api, auth, SUSPEND_ASK, headers=session)
    run_id = first.headers["X-Hermes-Run-Id"]
    second = await stream_chat(api, auth, "/approve", headers=session)
    assert second.headers["X-Hermes-Run-Id"] == run_id and second.content == SUSPEND_DONE
    assert second.headers["X-Hermes-Session-Id"] == "turn-taking-1"
    assert terminal_results(await run_events(api, auth, run_id)) == [False]


async def test_w_15_1_json_replies_end_and_resume_the_same_way(make_api: ApiFactory, auth: dict[str, str]) -> None:
    api = await make_api(script=SUSPEND_SCRIPT)
    headers, first = await json_chat(api, auth, SUSPEND_ASK)
    suspended_as(first, "approval")
    asked = first["choices"][0]["message"]["content"]  # the answer since the last tool, as every JSON reply
    assert asked.startswith("⚠️") and SUSPEND_COMMAND in asked
    again, second = await json_chat(api, auth, messages=conversation(SUSPEND_ASK, asked, "/approve"))
    assert again["X-Hermes-Run-Id"] == headers["X-Hermes-Run-Id"]
    assert (
        second["choices"][0]["message"]["content"] == SUSPEND_DONE and second["choices"][0]["finish_reason"] == "stop"
    )


async def test_w_15_1_hold_keeps_the_stream_open_until_the_run_is_approved(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """`X-Hermes-Approvals: hold` (and `api_server.approvals.chat: hold`) keep §14.2's open stream: another client
    decides through POST /v1/runs/{id}/approval and the one stream carries the whole turn."""
    for headers, config in (
        ({"X-Hermes-Approvals": "HOLD"}, None),
        ({}, {"api_server": {"approvals": {"chat": "hold"}}}),
    ):
        api = await make_api(script=SUSPEND_SCRIPT, config=config)
        async with api.post(CHAT, json=chat_body(SUSPEND_ASK), headers={**auth, **headers}) as resp:
            run_id = resp.headers["X-Hermes-Run-Id"]
            while b"hermes.approval.request" not in await resp.content.readline():
                pass
            run = (await fetch(api, "GET", f"{RUNS}/{run_id}", headers=auth)).json()
            assert run["status"] == "waiting_for_approval" and "required_action" not in run
            approved = await fetch(api, "POST", f"{RUNS}/{run_id}/approval", json={"choice": "once"}, headers=auth)
            assert approved.status == 200
            rest = await resp.read()
        assert b'"finish_reason":"stop"' in rest and b'"suspended"' not in rest and rest.endswith(b"[DONE]\n\n")
        assert terminal_results(await run_events(api, auth, run_id)) == [False]


async def test_w_15_2_a_question_is_the_message_and_the_next_message_its_answer(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    api = await make_api(script=SUSPEND_SCRIPT)
    first = await stream_chat(api, auth, "deploy")
    suspended_as(first, "question")
    assert first.content == "Which branch?"
    second = await stream_chat(api, auth, messages=conversation("deploy", first.content, "main"))
    assert second.headers["X-Hermes-Run-Id"] == first.headers["X-Hermes-Run-Id"]
    assert second.content == "Deploying main."


async def test_w_15_2_a_client_tool_call_round_trips(make_api: ApiFactory, auth: dict[str, str]) -> None:
    """W-15.2: the agent calls a declared tool — `delta.tool_calls` (index, id, name, then the arguments in pieces),
    `finish_reason: "tool_calls"` — and the `role: "tool"` message of the next request is the result it answers with,
    in the same run."""
    api = await make_api(script=SUSPEND_SCRIPT)
    first = await stream_chat(api, auth, "what is the weather in Paris?", tools=[WEATHER_TOOL])
    suspended_as(first, "client_tool")
    deltas = [
        c["choices"][0]["delta"]["tool_calls"][0] for c in first.plain if "tool_calls" in c["choices"][0]["delta"]
    ]
    head = deltas[0]
    assert (
        head["index"] == 0
        and head["type"] == "function"
        and head["function"] == {"name": "get_weather", "arguments": ""}
    )
    call_id = head["id"]
    arguments = "".join(d["function"]["arguments"] for d in deltas[1:])
    assert all(d["index"] == 0 and "id" not in d for d in deltas[1:])
    assert arguments == WEATHER_ARGUMENTS  # valid for the declared schema (§15.5)
    assert first.reasoning  # the agent's reasoning streamed before the call
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
        ],
    }
    messages = [
        {"role": "user", "content": "what is the weather in Paris?"},
        assistant,
        {"role": "tool", "tool_call_id": call_id, "content": "sunny, 24 °C"},
    ]
    second = await stream_chat(api, auth, messages=messages, tools=[WEATHER_TOOL])
    assert second.headers["X-Hermes-Run-Id"] == first.headers["X-Hermes-Run-Id"]
    assert second.content == "get_weather returned: sunny, 24 °C"
    assert second.finish["choices"][0]["finish_reason"] == "stop"
    events = await run_events(api, auth, first.headers["X-Hermes-Run-Id"])
    answered = [e for e in events if e["event"] == "tool_call.responded"]
    assert answered == [{**answered[0], "call_id": call_id, "output": "sunny, 24 °C"}]


async def test_w_15_2_client_tool_calls_in_a_json_reply_and_a_named_choice(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    api = await make_api(script=SUSPEND_SCRIPT)
    named = {"type": "function", "function": {"name": "get_weather"}}
    _, reply = await json_chat(api, auth, "hello", tools=[WEATHER_TOOL], tool_choice=named)  # a named choice: called
    suspended_as(reply, "client_tool")
    message = reply["choices"][0]["message"]
    assert message["content"] is None and [c["function"]["name"] for c in message["tool_calls"]] == ["get_weather"]
    _, plain = await json_chat(api, auth, "hello", tools=[WEATHER_TOOL])  # a scripted turn matched: no call
    assert plain["choices"][0]["message"]["content"] == "Hello." and "tool_calls" not in plain["choices"][0]["message"]
    unknown = await fetch(
        api,
        "POST",
        CHAT,
        json=chat_body("hello", tool_choice={"type": "function", "function": {"name": "x"}}),
        headers=auth,
    )
    assert_error_envelope(unknown, 400, "invalid_parameter", param="tool_choice")


async def test_w_15_2_tool_results_no_turn_waits_for_are_a_new_turn(make_api: ApiFactory, auth: dict[str, str]) -> None:
    """Results for a call no suspended turn waits for (the gateway restarted, the wait timed out): the agent gets them
    as its input and continues — no 400."""
    api = await make_api(script=SUSPEND_SCRIPT)
    messages = [
        {"role": "user", "content": "hello"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "call_x", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "call_x", "content": "42"},
    ]
    status = await fetch(api, "POST", CHAT, json=chat_body(messages=messages, stream=False), headers=auth)
    assert status.status == 200


async def test_w_15_1_a_keyed_answer_is_applied_once_and_its_retry_replays(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """§15.1 idempotency: the answering request is keyed like any other; its retry attaches to the same delivery
    (same completion, same text) and never answers again."""
    api = await make_api(script=SUSPEND_SCRIPT)
    first = await stream_chat(api, auth, SUSPEND_ASK)
    run_id = first.headers["X-Hermes-Run-Id"]
    key = {"Idempotency-Key": "answer-1"}
    messages = conversation(SUSPEND_ASK, first.content, "/approve")
    second = await stream_chat(api, auth, messages=messages, headers=key)
    retry = await stream_chat(api, auth, messages=messages, headers=key)
    assert retry.headers["X-Hermes-Run-Id"] == run_id and retry.headers["Idempotency-Replayed"] == "true"
    assert retry.finish["id"] == second.finish["id"] and retry.content == second.content == SUSPEND_DONE
    assert terminal_results(await run_events(api, auth, run_id)) == [False]
