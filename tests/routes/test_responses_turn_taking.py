"""Turn-taking on Responses with the scripted runtime (WIRE.md §15.1, §15.3): a Response ends `completed` where its
turn suspends — an `mcp_approval_request` item, the agent's question as the final message, the client's
`function_call` items — and the request that answers it (`mcp_approval_response`, the next user input,
`function_call_output`; by `previous_response_id`, `conversation`, or statelessly by the ids it answers) resumes the
same run as a new Response. A command "runs" when its terminal tool completes without error."""

from __future__ import annotations

import json
from typing import Any

from aiohttp.test_utils import TestClient

from tests.conftest import ApiFactory
from tests.helpers import (
    RESPONSES,
    SUSPEND_ASK,
    SUSPEND_COMMAND,
    SUSPEND_DONE,
    SUSPEND_SCRIPT,
    WEATHER_ARGUMENTS,
    WEATHER_FLAT_TOOL,
)

from .responses_helpers import create, get_stream, snapshot, stream_response
from .support import get_run, read_events, suspended, terminal_results


def items_of(response: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [item for item in response["output"] if item["type"] == kind]


def answer_text(response: dict[str, Any]) -> str:
    finals = [i for i in items_of(response, "message") if i.get("phase") == "final_answer"]
    return "".join(p["text"] for i in finals for p in i["content"])


def approval(response: dict[str, Any], approve: bool = True, **extra: Any) -> dict[str, Any]:
    asked = items_of(response, "mcp_approval_request")[-1]
    return {"type": "mcp_approval_response", "approval_request_id": asked["id"], "approve": approve, **extra}


async def ran(api: TestClient, auth: dict[str, str], run_id: str) -> list[bool]:
    """Whether each terminal command of the run failed (False: it ran)."""
    return terminal_results((await read_events(api, auth, run_id)).payloads)


async def test_w_15_1_an_approval_ends_the_response_and_approving_resumes_the_run(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """W-15.1, §15.3: the stream ends `completed` with an mcp_approval_request (added and done); an
    mcp_approval_response with previous_response_id is a new Response of the same run, and the command runs once."""
    api = await make_api(script=SUSPEND_SCRIPT)
    first = await stream_response(api, auth, SUSPEND_ASK)
    run_id = first.headers["X-Hermes-Run-Id"]
    response = first.response
    assert response["status"] == "completed" and first.terminal["type"] == "response.completed"
    [asked] = items_of(response, "mcp_approval_request")
    assert asked["server_label"] == "hermes" and asked["name"] == "terminal"
    assert json.loads(asked["arguments"])["command"] == SUSPEND_COMMAND and "description" in json.loads(
        asked["arguments"]
    )
    added = [e["item"]["type"] for e in first.events if e["type"] == "response.output_item.added"]
    assert added[-1] == "mcp_approval_request" and response["output"][-1] == asked
    assert (await suspended(api, auth, run_id))["required_action"]["type"] == "approval"
    stored = await snapshot(api, auth, response["id"])
    assert stored == response

    second = await stream_response(api, auth, [approval(response)], previous_response_id=response["id"])
    assert second.headers["X-Hermes-Run-Id"] == run_id
    resumed = second.response
    assert resumed["id"] != response["id"] and resumed["previous_response_id"] == response["id"]
    assert resumed["status"] == "completed" and answer_text(resumed) == SUSPEND_DONE
    outputs = items_of(resumed, "function_call_output")
    assert [o["output"] for o in outputs] == [
        f"Ran terminal: {SUSPEND_COMMAND}"
    ]  # the held command's result comes here
    assert await ran(api, auth, run_id) == [False]
    assert (await get_run(api, auth, run_id))["status"] == "completed"

    for shown in (first, second):  # W-4.6: GET and its replay are byte-identical to what was streamed
        rid = shown.response["id"]
        assert (await snapshot(api, auth, rid)) == shown.response
        assert (await get_stream(api, auth, rid)).raw == shown.raw


async def test_w_15_1_deny_and_an_unrelated_input_never_run_the_command(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """W-15.1: `approve: false` resumes the run with the command denied; an unrelated input chained to the suspended
    Response denies it too and is a new turn of its own."""
    api = await make_api(script=SUSPEND_SCRIPT)
    _, first = await create(api, auth, SUSPEND_ASK)
    headers, denied = await create(api, auth, [approval(first, False)], previous_response_id=first["id"])
    assert answer_text(denied) == SUSPEND_DONE
    assert await ran(api, auth, headers["X-Hermes-Run-Id"]) == [True]

    first_headers, again = await create(api, auth, SUSPEND_ASK)
    headers, moved_on = await create(api, auth, "hello", previous_response_id=again["id"])
    assert headers["X-Hermes-Run-Id"] != first_headers["X-Hermes-Run-Id"] and answer_text(moved_on) == "Hello."
    assert await ran(api, auth, first_headers["X-Hermes-Run-Id"]) == [True]


async def test_w_15_1_a_stateless_approval_answers_by_its_request_id(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """§15.1: the Agents SDK resends the whole history without previous_response_id; the trailing
    mcp_approval_response answers the suspended turn by its approval_request_id (scope extension: session)."""
    api = await make_api(script=SUSPEND_SCRIPT)
    headers, first = await create(api, auth, SUSPEND_ASK)
    history = [{"role": "user", "content": SUSPEND_ASK}, *first["output"], approval(first, scope="session")]
    again, resumed = await create(api, auth, history)
    assert again["X-Hermes-Run-Id"] == headers["X-Hermes-Run-Id"] and answer_text(resumed) == SUSPEND_DONE
    assert resumed["previous_response_id"] is None
    assert await ran(api, auth, headers["X-Hermes-Run-Id"]) == [False]


async def test_w_15_1_a_conversation_continues_into_the_answer(make_api: ApiFactory, auth: dict[str, str]) -> None:
    """§15.3: `conversation` finds the suspended Response as its latest; the chain continues after the answer."""
    api = await make_api(script=SUSPEND_SCRIPT)
    _, first = await create(api, auth, SUSPEND_ASK, conversation="turns-1")
    _, second = await create(api, auth, [approval(first)], conversation="turns-1")
    assert second["previous_response_id"] == first["id"] and answer_text(second) == SUSPEND_DONE
    _, third = await create(api, auth, "hello", conversation="turns-1")
    assert third["previous_response_id"] == second["id"] and answer_text(third) == "Hello."


async def test_w_15_2_a_question_is_the_final_message_and_the_next_input_its_answer(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    api = await make_api(script=SUSPEND_SCRIPT)
    first = await stream_response(api, auth, "deploy")
    assert first.response["status"] == "completed" and answer_text(first.response) == "Which branch?"
    second = await stream_response(api, auth, "main", previous_response_id=first.response["id"])
    assert second.headers["X-Hermes-Run-Id"] == first.headers["X-Hermes-Run-Id"]
    assert answer_text(second.response) == "Deploying main."


async def test_w_15_2_a_client_tool_round_trips_as_a_stream(make_api: ApiFactory, auth: dict[str, str]) -> None:
    """W-15.2: the call is a `function_call` item (added, arguments deltas, arguments done, done `completed`) that
    ends the Response; the `function_call_output` with previous_response_id is the result the agent answers with."""
    api = await make_api(script=SUSPEND_SCRIPT)
    first = await stream_response(api, auth, "weather in Paris?", tools=[WEATHER_FLAT_TOOL])
    [call] = items_of(first.response, "function_call")
    assert call["name"] == "get_weather" and call["status"] == "completed"
    assert call["arguments"] == WEATHER_ARGUMENTS
    names = [e["type"] for e in first.events if e.get("item_id", e.get("item", {}).get("id")) == call["id"]]
    assert names[0] == "response.output_item.added" and names[-1] == "response.output_item.done"
    assert names[-2] == "response.function_call_arguments.done"
    assert set(names[1:-2]) == {"response.function_call_arguments.delta"}
    added = next(e for e in first.events if e["type"] == "response.output_item.added" and e["item"]["id"] == call["id"])
    assert added["item"]["arguments"] == "" and added["item"]["status"] == "in_progress"
    deltas = [e["delta"] for e in first.events if e["type"] == "response.function_call_arguments.delta"]
    assert "".join(deltas) == call["arguments"]

    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny, 24 °C"}
    second = await stream_response(
        api, auth, [output], previous_response_id=first.response["id"], tools=[WEATHER_FLAT_TOOL]
    )
    assert second.headers["X-Hermes-Run-Id"] == first.headers["X-Hermes-Run-Id"]
    assert answer_text(second.response) == "get_weather returned: sunny, 24 °C"


async def test_w_15_2_a_client_tool_round_trips_as_json_and_statelessly(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """W-15.2: JSON replies; the output answers by its call_id with the whole history resent."""
    api = await make_api(script=SUSPEND_SCRIPT)
    headers, first = await create(api, auth, "weather?", tools=[WEATHER_FLAT_TOOL])
    [call] = items_of(first, "function_call")
    history = [
        {"role": "user", "content": "weather?"},
        *first["output"],
        {"type": "function_call_output", "call_id": call["call_id"], "output": "rain"},
    ]
    again, second = await create(api, auth, history, tools=[WEATHER_FLAT_TOOL])
    assert again["X-Hermes-Run-Id"] == headers["X-Hermes-Run-Id"]
    assert answer_text(second) == "get_weather returned: rain"


async def test_w_15_2_an_input_while_a_call_waits_declines_it(make_api: ApiFactory, auth: dict[str, str]) -> None:
    """§15.1: the conversation moved on without the output: the call fails for the agent, the input is a new turn."""
    api = await make_api(script=SUSPEND_SCRIPT)
    headers, first = await create(api, auth, "weather?", tools=[WEATHER_FLAT_TOOL])
    again, second = await create(api, auth, "hello", previous_response_id=first["id"])
    assert again["X-Hermes-Run-Id"] != headers["X-Hermes-Run-Id"] and answer_text(second) == "Hello."
    run = await get_run(api, auth, headers["X-Hermes-Run-Id"])
    events = (await read_events(api, auth, headers["X-Hermes-Run-Id"])).payloads
    answered = [e for e in events if e["event"] == "tool_call.responded"]
    assert run["status"] == "completed" and answered and answered[0]["output"] is None


async def test_w_15_1_a_keyed_answer_is_applied_once_and_its_retry_replays(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    api = await make_api(script=SUSPEND_SCRIPT)
    first = await stream_response(api, auth, SUSPEND_ASK)
    run_id = first.headers["X-Hermes-Run-Id"]
    key = {"Idempotency-Key": "answer-1"}
    body = {"input": [approval(first.response)], "previous_response_id": first.response["id"]}
    second = await stream_response(api, auth, headers=key, **body)
    retry = await stream_response(api, auth, headers=key, **body)
    assert retry.headers["Idempotency-Replayed"] == "true" and retry.headers["X-Hermes-Run-Id"] == run_id
    assert retry.raw == second.raw
    assert await ran(api, auth, run_id) == [False]


async def test_a_background_answer_is_polled_to_its_end(make_api: ApiFactory, auth: dict[str, str]) -> None:
    """§4.9 with §15.3: a background Response ends at the approval (stored completed without a client); the
    background answer resumes it and settles."""
    api = await make_api(script=SUSPEND_SCRIPT)
    _, first = await create(api, auth, SUSPEND_ASK, background=True)
    from .responses_helpers import poll_status

    done = await poll_status(api, auth, first["id"], {"completed"})
    assert items_of(done, "mcp_approval_request")
    _, second = await create(api, auth, [approval(done)], previous_response_id=first["id"], background=True)
    assert second["status"] in ("in_progress", "completed")
    settled = await poll_status(api, auth, second["id"], {"completed"})
    assert answer_text(settled) == SUSPEND_DONE


async def test_input_items_schema_accepts_the_approval_items(api: TestClient, auth: dict[str, str]) -> None:
    """§15.3: mcp_approval_request / mcp_approval_response items in the history are accepted, never sent on."""
    history = [
        {"role": "user", "content": "x"},
        {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "hermes", "name": "t", "arguments": "{}"},
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True},
        {"role": "user", "content": "hello"},
    ]
    async with api.post(RESPONSES, json={"input": history}, headers=auth) as resp:
        assert resp.status == 200, await resp.text()
