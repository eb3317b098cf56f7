"""Open Responses conformance of every Responses path (WIRE.md §16), against the real gateway process on a free port
(scripted runtime): every Response object and every event passes tests/open_responses.py — JSON and SSE create, GET,
GET ?stream=true replay, background, a previous_response_id chain, a client function call round trip, failed /
incomplete / cancelled turns, mcp approval items — and the §16 request fields are checked (400 naming the field) and
echoed; an inline file is accepted; a function_call_output answering no call is 400."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.helpers import RESPONSES, SUSPEND_SCRIPT, Reply
from tests.live import LiveGateway, start_gateway, write_home
from tests.open_responses import assert_response_object, assert_stream

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
FORCED = {"type": "function", "name": "get_weather"}
PDF = "data:application/pdf;base64," + base64.b64encode(b"%PDF-1.1\n%%EOF").decode()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    live = start_gateway(write_home(Path(tmp_path_factory.mktemp("or_home"))))
    yield live
    live.stop()


@pytest.fixture(scope="module")
def suspending(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    live = start_gateway(write_home(Path(tmp_path_factory.mktemp("or_suspend")), script=SUSPEND_SCRIPT))
    yield live
    live.stop()


class Client:
    """The few requests these tests make, each returning the reply whole."""

    def __init__(self, session: aiohttp.ClientSession, live: LiveGateway) -> None:
        self.session, self.live = session, live

    async def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Reply:
        async with self.session.request(method, self.live.url + path, json=body, headers=self.live.headers) as resp:
            return Reply(resp.status, resp.headers, await asyncio.wait_for(resp.read(), 30))

    async def create(self, **body: Any) -> dict[str, Any]:
        reply = await self.request("POST", RESPONSES, {"model": "hermes-agent", **body})
        assert reply.status == 200, reply.raw[:500]
        obj: dict[str, Any] = reply.json()
        return obj

    async def stream(self, **body: Any) -> list[dict[str, Any]]:
        reply = await self.request("POST", RESPONSES, {"model": "hermes-agent", "stream": True, **body})
        assert reply.status == 200, reply.raw[:500]
        return reply.events

    async def get(self, response_id: str, query: str = "") -> Reply:
        return await self.request("GET", f"{RESPONSES}/{response_id}{query}")

    async def settled(self, response_id: str) -> list[dict[str, Any]]:
        """Every object polled until the response leaves queued / in_progress."""
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            seen.append((await self.get(response_id)).json())
            if seen[-1]["status"] not in ("queued", "in_progress"):
                return seen
            await asyncio.sleep(0.05)
        raise AssertionError(f"{response_id} did not settle: {seen[-1]['status']}")


@pytest.fixture
async def client(gateway: LiveGateway) -> AsyncIterator[Client]:
    async with aiohttp.ClientSession() as session:
        yield Client(session, gateway)


@pytest.fixture
async def suspend_client(suspending: LiveGateway) -> AsyncIterator[Client]:
    async with aiohttp.ClientSession() as session:
        yield Client(session, suspending)


@pytest.mark.parametrize("text", ["hello", "use tool", "commentary", "final only"])
async def test_json_and_sse_create_get_and_replay_pass_the_spec(client: Client, text: str) -> None:
    created = await client.create(input=text)
    assert_response_object(created)
    assert created["status"] == "completed" and isinstance(created["completed_at"], int)
    events = await client.stream(input=text)
    response = assert_stream(events)
    stored = (await client.get(response["id"])).json()
    assert_response_object(stored)
    assert stored == response
    replay = (await client.get(response["id"], "?stream=true")).events
    assert_stream(replay)
    assert replay == events  # a replay renders the same journal: the same objects, completed_at included


@pytest.mark.parametrize("text", ["fail", "fail early", "exhaust"])
async def test_failed_and_incomplete_turns_pass_the_spec(client: Client, text: str) -> None:
    response = assert_stream(await client.stream(input=text))
    assert response["status"] in ("failed", "incomplete") and response["completed_at"] is None
    assert_response_object(await client.create(input=text))


async def test_background_objects_pass_the_spec_while_running_and_settled(client: Client) -> None:
    started = await client.create(input="use tool", background=True)
    assert_response_object(started)
    assert started["status"] in ("queued", "in_progress") and started["completed_at"] is None
    polled = await client.settled(started["id"])
    for obj in polled:
        assert_response_object(obj)
    assert polled[-1]["status"] == "completed"


async def test_a_previous_response_id_chain_passes_the_spec(client: Client) -> None:
    first = await client.create(input="use tool", instructions="Be brief.")
    events = await client.stream(input="hello", previous_response_id=first["id"])
    second = assert_stream(events)
    assert second["previous_response_id"] == first["id"] and second["instructions"] == "Be brief."


async def test_the_settings_are_checked_echoed_and_kept_on_read_back(client: Client) -> None:
    settings: dict[str, Any] = {
        "temperature": 0.2,
        "top_p": 0.5,
        "presence_penalty": 1,
        "frequency_penalty": -1.5,
        "top_logprobs": 2,
        "max_output_tokens": 256,
        "max_tool_calls": 3,
        "service_tier": "priority",
        "text": {"format": {"type": "json_schema", "name": "answer", "schema": {"type": "object"}}},
        "safety_identifier": "hashed-user",
        "prompt_cache_key": "prefix-1",
        "user": "user-1",
        "truncation": "auto",
    }
    events = await client.stream(input="hello", reasoning={"effort": "high", "summary": "concise"}, **settings)
    for event in (e for e in events if "response" in e):
        assert {k: event["response"][k] for k in settings} == settings
        assert event["response"]["reasoning"] == {"effort": "high", "summary": "concise"}
    response = assert_stream(events)
    assert (await client.get(response["id"])).json() == response


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature", 2.5),
        ("temperature", "hot"),
        ("top_p", -0.1),
        ("presence_penalty", 3),
        ("frequency_penalty", True),
        ("top_logprobs", 1.5),
        ("top_logprobs", 21),
        ("max_output_tokens", 0),
        ("max_tool_calls", "3"),
        ("service_tier", "gold"),
        ("text", {"format": {"type": "xml"}}),
        ("text", {"verbosity": "loud"}),
        ("safety_identifier", 7),
        ("prompt_cache_key", ["k"]),
        ("user", {"id": 1}),
        # every echoed tool has a `type` (the Response schema requires it): a tool without one is refused up front
        ("tools", [{"name": "get_weather"}]),
        ("tools", [{**WEATHER, "type": None}]),
    ],
)
async def test_a_bad_setting_is_400_naming_it(client: Client, field: str, value: Any) -> None:
    reply = await client.request("POST", RESPONSES, {"model": "hermes-agent", "input": "hello", field: value})
    assert reply.status == 400, reply.raw
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"].startswith(field), error


async def test_a_client_function_call_round_trip_passes_the_spec(client: Client) -> None:
    """The compliance suite's round trip: tool_choice names the function, the Response ends with its function_call;
    its output, sent with previous_response_id, resumes the turn to a completed answer."""
    events = await client.stream(input="What is the weather in Paris?", tools=[WEATHER], tool_choice=FORCED)
    first = assert_stream(events)
    assert first["tools"] == [{**WEATHER, "strict": True}] and first["tool_choice"] == FORCED
    [call] = [i for i in first["output"] if i["type"] == "function_call"]
    assert call["name"] == "get_weather" and json.loads(call["arguments"])
    assert any(e["type"] == "response.function_call_arguments.delta" for e in events)
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": '{"temperature":"21C"}'}
    second = assert_stream(await client.stream(input=[output], previous_response_id=first["id"], tools=[WEATHER]))
    assert second["status"] == "completed" and second["previous_response_id"] == first["id"]


async def test_an_output_of_a_call_never_made_is_400(client: Client) -> None:
    first = await client.create(input="hello")
    orphan = {"type": "function_call_output", "call_id": "call_nowhere", "output": "42"}
    for body in ({"input": [orphan]}, {"input": [orphan], "previous_response_id": first["id"]}):
        reply = await client.request("POST", RESPONSES, {"model": "hermes-agent", **body})
        assert reply.status == 400, reply.raw
        error = reply.json()["error"]
        assert (error["type"], error["code"], error["param"]) == (
            "invalid_request_error",
            "tool_call_not_found",
            "input",
        )
        assert "call_nowhere" in error["message"]


async def test_an_output_of_a_call_the_input_makes_is_input(client: Client) -> None:
    """§15.3: the client's own call and its output in the same input are history, not an error."""
    call = {"type": "function_call", "call_id": "call_here", "name": "get_weather", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "call_here", "output": "sunny"}
    assert_response_object(await client.create(input=[call, output], tools=[WEATHER]))


async def test_an_inline_pdf_is_accepted(client: Client) -> None:
    part = {"type": "input_file", "filename": "fixture.pdf", "file_data": PDF}
    message = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}, part]}
    response = await client.create(input=[message])
    assert_response_object(response)
    assert response["status"] == "completed"


async def test_a_cancelled_background_response_is_a_valid_object(client: Client) -> None:
    started = await client.create(input="hang", background=True)
    for _ in range(100):
        if (await client.get(started["id"])).json()["output"]:
            break
        await asyncio.sleep(0.05)
    reply = await client.request("POST", f"{RESPONSES}/{started['id']}/cancel")
    assert reply.status == 200, reply.raw
    cancelled = reply.json()
    assert cancelled["status"] == "cancelled"
    assert_response_object(cancelled)
    replay = (await client.get(started["id"], "?stream=true")).events
    assert assert_stream(replay, strict=False)["status"] == "cancelled"


async def test_mcp_approval_items_pass_with_the_gateways_extensions(suspend_client: Client) -> None:
    """§15.3: the approval request ends its Response (an mcp_approval_request item, an extension of the spec); the
    Response carrying the decision resumes the turn — every object and event otherwise as the spec says."""
    events = await suspend_client.stream(input="delete the build")
    first = assert_stream(events, strict=False)
    [asked] = [i for i in first["output"] if i["type"] == "mcp_approval_request"]
    answer = {"type": "mcp_approval_response", "approval_request_id": asked["id"], "approve": True}
    second = assert_stream(await suspend_client.stream(input=[answer], previous_response_id=first["id"]), strict=False)
    assert second["status"] == "completed"
    assert_response_object((await suspend_client.get(second["id"])).json(), strict=False)
