"""Client tools on the runs surface with the scripted runtime (WIRE.md §15.4, §15.5, W-15.2, W-15.4): `tools` and
`tool_choice` on `POST /v1/runs` (either dialect's shape), the run suspending with `required_action` client_tool,
`POST /v1/runs/{id}/tool_outputs` resuming it with the output the agent sees ("<name> returned: <output>"), keyed
retries, its 409 `tool_call_not_pending` and 400s, and the negative resolution (no output) on timeout and stop."""

from __future__ import annotations

import json
from typing import Any

from aiohttp.test_utils import TestClient

from tests.conftest import ApiFactory
from tests.helpers import RUNS, SUSPEND_SCRIPT, WEATHER_ARGUMENTS, WEATHER_TOOL, assert_error_envelope, fetch

from .support import (
    check_run_events,
    get_run,
    post_run,
    post_tool_outputs,
    read_events,
    settled,
    start_run,
    suspended,
    tool_call_waiting,
)

ASK = "what is the weather"  # no turn of the script matches it: the default turn calls the first offered tool
FLAT_TOOL = {"type": "function", **WEATHER_TOOL["function"]}  # Responses' shape


async def test_w_15_2_a_declared_tool_round_trips_through_tool_outputs(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """W-15.2 / W-15.4 on runs: a run lending a tool requires the client's output (required_action client_tool, on GET
    and as a tool_call.request event), /tool_outputs returns it, the same turn resumes and the agent answers with it."""
    api = await make_api(script=SUSPEND_SCRIPT)
    run_id = await start_run(api, auth, ASK, tools=[WEATHER_TOOL])
    action = await tool_call_waiting(api, auth, run_id)
    assert (action["name"], action["arguments"]) == ("get_weather", WEATHER_ARGUMENTS)
    run = await get_run(api, auth, run_id)
    assert run["last_event"] == "tool_call.request" and run["status"] == "requires_action"
    reply = await post_tool_outputs(api, auth, run_id, [(action["call_id"], "sunny, 21 °C")])
    assert reply.status == 200 and reply.json() == {
        "object": "hermes.run.tool_outputs",
        "run_id": run_id,
        "answered": 1,
    }
    assert "Idempotency-Replayed" not in reply.headers
    done = await settled(api, auth, run_id)
    assert done["status"] == "completed" and done["output"] == "get_weather returned: sunny, 21 °C"
    events = await read_events(api, auth, run_id)
    check_run_events(events, run_id)
    names = events.names
    assert names.index("tool_call.request") < names.index("tool_call.responded") < names.index("message.delta")
    request = next(p for p in events.payloads if p["event"] == "tool_call.request")
    assert {k: request[k] for k in ("call_id", "name", "arguments")} == {
        "call_id": action["call_id"],
        "name": "get_weather",
        "arguments": WEATHER_ARGUMENTS,
    }
    responded = [p for p in events.payloads if p["event"] == "tool_call.responded"]
    assert [(p["call_id"], p["output"]) for p in responded] == [(action["call_id"], "sunny, 21 °C")]
    again = await post_tool_outputs(api, auth, run_id, [(action["call_id"], "rain")])  # settled: nothing pends
    assert_error_envelope(again, 409, "tool_call_not_pending", type="conflict_error")


async def test_responses_shaped_tools_and_a_named_tool_choice_are_taken_too(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """§15.4: runs take either shape; `tool_choice` naming the function makes the agent call it even for an input the
    script would have answered itself, and `none` offers no tool at all."""
    api = await make_api(script=SUSPEND_SCRIPT)
    lookup = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}
    run_id = await start_run(
        api, auth, "hello", tools=[lookup, FLAT_TOOL], tool_choice={"type": "function", "name": "get_weather"}
    )
    action = await tool_call_waiting(api, auth, run_id)
    assert (action["name"], action["arguments"]) == ("get_weather", WEATHER_ARGUMENTS)
    assert (await post_tool_outputs(api, auth, run_id, [(action["call_id"], "fog")])).status == 200
    assert (await settled(api, auth, run_id))["output"] == "get_weather returned: fog"
    plain = await start_run(api, auth, "hello", tools=[WEATHER_TOOL], tool_choice="none")
    done = await settled(api, auth, plain)
    assert done["output"] == "Hello." and not any(
        e.startswith("tool_call") for e in (await read_events(api, auth, plain)).names
    )


async def test_w_15_4_a_keyed_retry_of_tool_outputs_never_returns_twice(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """W-15.4: the keyed retry is told the first reply (Idempotency-Replayed) and returns nothing again; the same key
    with another output conflicts; an unkeyed second post finds nothing pending."""
    api = await make_api(script=SUSPEND_SCRIPT, config={"api_server": {"turns": {"suspend_seconds": 30}}})
    run_id = await start_run(api, auth, ASK, tools=[WEATHER_TOOL])
    call_id = (await tool_call_waiting(api, auth, run_id))["call_id"]
    bad_key = await post_tool_outputs(api, auth, run_id, [(call_id, "hail")], key=" ")
    assert_error_envelope(bad_key, 400, "invalid_idempotency_key")
    first = await post_tool_outputs(api, auth, run_id, [(call_id, "hail")], key="outputs-1")
    assert first.status == 200 and "Idempotency-Replayed" not in first.headers
    retry = await post_tool_outputs(api, auth, run_id, [(call_id, "hail")], key="outputs-1")
    assert (retry.status, retry.headers.get("Idempotency-Replayed")) == (200, "true")
    assert retry.json() == first.json() == {"object": "hermes.run.tool_outputs", "run_id": run_id, "answered": 1}
    other = await post_tool_outputs(api, auth, run_id, [(call_id, "snow")], key="outputs-1")
    assert_error_envelope(other, 409, "admission_conflict")
    unkeyed = await post_tool_outputs(api, auth, run_id, [(call_id, "snow")])
    assert_error_envelope(unkeyed, 409, "tool_call_not_pending", type="conflict_error")
    assert (await settled(api, auth, run_id))["output"] == "get_weather returned: hail"
    events = await read_events(api, auth, run_id)
    assert [p["output"] for p in events.payloads if p["event"] == "tool_call.responded"] == ["hail"]


async def test_a_call_id_that_is_not_pending_is_409_and_returns_nothing(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """A wrong call_id is 409 tool_call_not_pending; with the right one beside it nothing is returned either (all or
    nothing), and the run still waits; a run waiting for a question, or for nothing, has no tool call pending."""
    api = await make_api(script=SUSPEND_SCRIPT)
    run_id = await start_run(api, auth, ASK, tools=[WEATHER_TOOL])
    call_id = (await tool_call_waiting(api, auth, run_id))["call_id"]
    wrong = await post_tool_outputs(api, auth, run_id, [("call_unknown", "x")])
    assert_error_envelope(wrong, 409, "tool_call_not_pending", type="conflict_error")
    mixed = await post_tool_outputs(api, auth, run_id, [(call_id, "x"), ("call_unknown", "y")])
    assert_error_envelope(mixed, 409, "tool_call_not_pending", type="conflict_error")
    assert (await tool_call_waiting(api, auth, run_id))["call_id"] == call_id, "nothing was returned"
    assert (await post_tool_outputs(api, auth, run_id, [(call_id, "ok")])).status == 200
    assert (await settled(api, auth, run_id))["output"] == "get_weather returned: ok"
    asking = await start_run(api, auth, "deploy")
    await suspended(api, auth, asking)
    on_question = await post_tool_outputs(api, auth, asking, [("call_x", "main")])
    assert_error_envelope(on_question, 409, "tool_call_not_pending", type="conflict_error")
    assert (await get_run(api, auth, asking))["required_action"]["type"] == "question"
    plain = await start_run(api, auth, "hello")
    await settled(api, auth, plain)
    assert_error_envelope(await post_tool_outputs(api, auth, plain, [("call_x", "y")]), 409, "tool_call_not_pending")


async def test_tool_outputs_errors_in_the_one_envelope(make_api: ApiFactory, auth: dict[str, str]) -> None:
    """404 for an unknown run before the body; a body that is not a list of {call_id, output strings} is 400 naming
    the field (an output that is not a string, a call_id given twice, no outputs), before the turn is touched."""
    api = await make_api(script=SUSPEND_SCRIPT)
    unknown = await post_tool_outputs(api, auth, f"run_{'0' * 32}", [("call_x", "y")])
    assert_error_envelope(unknown, 404, "run_not_found")
    run_id = await start_run(api, auth, ASK, tools=[WEATHER_TOOL])
    call_id = (await tool_call_waiting(api, auth, run_id))["call_id"]
    path = f"{RUNS}/{run_id}/tool_outputs"
    cases: list[tuple[Any, str | None]] = [
        ({}, "outputs"),
        ({"outputs": []}, "outputs"),
        ({"outputs": "sunny"}, "outputs"),
        ({"outputs": [{"call_id": call_id, "output": 21}]}, "outputs[0].output"),
        ({"outputs": [{"call_id": call_id, "output": {"temp": 21}}]}, "outputs[0].output"),
        ({"outputs": [{"call_id": call_id}]}, "outputs[0].output"),
        ({"outputs": [{"output": "x"}]}, "outputs[0].call_id"),
        ({"outputs": [{"call_id": "", "output": "x"}]}, "outputs[0].call_id"),
        ({"outputs": [{"call_id": call_id, "output": "a"}, {"call_id": call_id, "output": "b"}]}, "outputs[1].call_id"),
        (["sunny"], None),
    ]
    for body, param in cases:
        reply = await fetch(api, "POST", path, json=body, headers=auth)
        error = assert_error_envelope(reply, 400)
        if param is not None:
            assert error["param"] == param, (body, error)
    assert (await tool_call_waiting(api, auth, run_id))["call_id"] == call_id, "no bad body touched the turn"
    assert (await post_tool_outputs(api, auth, run_id, [(call_id, "")])).status == 200  # an empty output is one
    assert (await settled(api, auth, run_id))["output"] == "get_weather returned: "


async def test_bad_tools_on_post_runs_are_400_before_anything_runs(make_api: ApiFactory, auth: dict[str, str]) -> None:
    """§15.4, §1.7: tools that do not declare a function properly, or a tool_choice the tools cannot satisfy, are 400
    naming the field; other tool types are ignored, not offered."""
    api = await make_api(script=SUSPEND_SCRIPT)
    nameless = {"type": "function", "function": {"description": "no name"}}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"tools": WEATHER_TOOL}, "tools"),
        ({"tools": ["get_weather"]}, "tools[0]"),
        ({"tools": [{"function": WEATHER_TOOL["function"]}]}, "tools[0].type"),
        ({"tools": [nameless]}, "tools[0].function.name"),
        ({"tools": [{"type": "function"}]}, "tools[0].name"),
        ({"tools": [{**FLAT_TOOL, "name": "get weather!"}]}, "tools[0].name"),
        ({"tools": [{**FLAT_TOOL, "parameters": "{}"}]}, "tools[0].parameters"),
        ({"tools": [WEATHER_TOOL, FLAT_TOOL]}, "tools[1].name"),
        ({"tools": [WEATHER_TOOL] * 129}, "tools"),
        ({"tools": [WEATHER_TOOL], "tool_choice": "sometimes"}, "tool_choice"),
        ({"tools": [WEATHER_TOOL], "tool_choice": {"type": "function", "name": "other"}}, "tool_choice"),
        ({"tool_choice": "required"}, "tool_choice"),
    ]
    for extra, param in cases:
        status, _, body = await post_run(api, auth, ASK, **extra)
        assert status == 400, (extra, body)
        assert body["error"]["param"] == param and body["error"]["type"] == "invalid_request_error", (extra, body)
    assert api.server.app is not None
    hosted = await start_run(api, auth, "hello", tools=[{"type": "web_search"}])  # not a function: not offered
    assert (await settled(api, auth, hosted))["output"] == "Hello."


async def test_w_15_1_no_output_in_time_or_a_stop_returns_no_output(make_api: ApiFactory, auth: dict[str, str]) -> None:
    """§15.1: no output within suspend_seconds → tool_call.responded with output null, and the agent says the tool
    gave none; a stop while waiting resolves the call the same way and cancels the run."""
    api = await make_api(script=SUSPEND_SCRIPT, config={"api_server": {"turns": {"suspend_seconds": 0.3}}})
    run_id = await start_run(api, auth, ASK, tools=[WEATHER_TOOL])
    done = await settled(api, auth, run_id)
    assert done["status"] == "completed" and done["output"] == "get_weather gave no output."
    events = await read_events(api, auth, run_id)
    responded = [p for p in events.payloads if p["event"] == "tool_call.responded"]
    assert len(responded) == 1 and responded[0]["output"] is None
    late = await post_tool_outputs(api, auth, run_id, [(responded[0]["call_id"], "too late")])
    assert_error_envelope(late, 409, "tool_call_not_pending", type="conflict_error")

    patient = await make_api(script=SUSPEND_SCRIPT)
    stopped = await start_run(patient, auth, ASK, tools=[WEATHER_TOOL])
    await tool_call_waiting(patient, auth, stopped)
    reply = await fetch(patient, "POST", f"{RUNS}/{stopped}/stop", headers=auth)
    assert reply.status == 200
    assert (await settled(patient, auth, stopped))["status"] == "cancelled"
    payloads = (await read_events(patient, auth, stopped)).payloads
    assert [p["output"] for p in payloads if p["event"] == "tool_call.responded"] == [None]


async def test_the_tool_outputs_route_is_documented(api: TestClient, auth: dict[str, str]) -> None:
    """/openapi.json states the route, its body (outputs of call_id and output strings) and its reply."""
    async with api.get("/openapi.json", headers=auth) as resp:
        doc = json.loads(await resp.text())
    operation = doc["paths"]["/v1/runs/{run_id}/tool_outputs"]["post"]
    assert operation["operationId"] == "run_tool_outputs"
    assert "Idempotency-Key" in {p["name"] for p in operation["parameters"]}
    schemas = doc["components"]["schemas"]
    item = schemas["RunToolOutput"]
    assert item["required"] == ["call_id", "output"] and item["properties"]["output"]["type"] == "string"
    run_body = schemas["RunCreateRequest"]["properties"]
    assert "tools" in run_body and "tool_choice" in run_body
    assert {"function", "name", "parameters"} <= set(schemas["RunTool"]["properties"])
