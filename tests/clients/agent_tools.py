"""Agent-loop clients lending the agent a tool (WIRE.md §15.2, W-15.2, W-15.3): what every framework's test shares —
the tool, the prompts, and the checks on the gateway's side.

Each test gives the agent one client tool, `get_weather(city)`, whose body counts its calls. On a prompt no scripted
turn of tests/scripts/chat.yaml matches, the scripted runtime's default turn calls the first offered tool with
arguments valid for its schema (`{"city": "example"}`, §15.5), the framework runs it and sends the result back, and
the agent answers "get_weather returned: <output>" in the same run. On the "use tool" prompt the agent runs its own
(server) tool, `terminal`, with the client tool declared too: the client's tool never runs and the framework never
sees a tool call to run (W-15.3).

The gateway side: the scripted runtime logs one execution per turn (tests/live.py), so exactly one execution for the
prompt means the tool's result resumed the turn instead of starting a new one; its `turn_id` is the run id, and
`GET /v1/runs/{id}/events` shows what ran where — `tool_call.request` / `tool_call.responded` for the client's tool,
`tool.started` for a server tool.
"""

from __future__ import annotations

import importlib
import json
import uuid
from types import ModuleType
from typing import Any

import pytest

from tests.helpers import USE_TOOL_ANSWER, execution_for, live_request, parse_sse
from tests.live import LiveGateway

from .conftest import unavailable

TOOL_NAME = "get_weather"
TOOL_DESCRIPTION = "The weather in a city"
CITY = "example"  # the scripted runtime's schema-valid value for a required string (runtimes/schema_example.py)
WEATHER = "sunny, 24 C"
CLIENT_TOOL_ANSWER = f"{TOOL_NAME} returned: {WEATHER} in {CITY}"
SERVER_TOOL_ANSWER = USE_TOOL_ANSWER
MODEL = "hermes-agent"


STREAMED_OR_NOT = [pytest.param(False, id="json"), pytest.param(True, id="stream")]  # each framework, both ways


def weather(city: str) -> str:
    """What the client's tool returns."""
    return f"{WEATHER} in {city}"


def weather_prompt(client: str) -> str:
    """A prompt no scripted turn matches (the default turn calls the tool), unique to one test."""
    return f"What is the weather in Paris? ({client} {uuid.uuid4().hex[:8]})"


def server_tool_prompt(client: str) -> str:
    """A prompt of the "use tool" turn (the server's terminal tool runs), unique to one test."""
    return f"use tool ({client} {uuid.uuid4().hex[:8]})"


def import_client(module: str, requirement: str) -> ModuleType:
    """The framework's module; missing, the test skips (fails under CI=true: pyproject's dev extra pins it)."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        unavailable(f"{requirement} is not installed ({error}): run ./test, which installs the dev extra")
        raise  # unreachable: unavailable() skips or fails


def run_events(gateway: LiveGateway, prompt: str) -> list[dict[str, Any]]:
    """The events of the one run the prompt started (the one execution the scripted runtime logged for it)."""
    run_id = execution_for(gateway, prompt)["turn_id"]
    reply = live_request(gateway, "GET", f"/v1/runs/{run_id}/events")
    assert reply.status == 200, reply.raw[:300]
    return [record.json() for record in parse_sse(reply.raw)[0]]


def of_event(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == name]


def assert_client_tool_ran_once(gateway: LiveGateway, prompt: str, executed: list[str], answer: str) -> None:
    """W-15.2 through an agent loop: the client ran its tool exactly once with the agent's arguments, the agent's
    answer (the run's output) uses its result, one run did it all, and no server tool ran in it."""
    assert executed == [CITY], f"the client's tool ran {len(executed)} times: {executed}"
    assert answer == CLIENT_TOOL_ANSWER
    events = run_events(gateway, prompt)
    [requested] = of_event(events, "tool_call.request")
    assert (requested["name"], json.loads(requested["arguments"])) == (TOOL_NAME, {"city": CITY})
    [responded] = of_event(events, "tool_call.responded")
    assert (responded["call_id"], responded["output"]) == (requested["call_id"], weather(CITY))
    assert of_event(events, "tool.started") == [], "a server tool ran"
    assert events[-1]["event"] == "run.completed" and events[-1]["output"] == CLIENT_TOOL_ANSWER


def assert_server_tool_ran_on_the_server(gateway: LiveGateway, prompt: str, executed: list[str], answer: str) -> None:
    """W-15.3 through an agent loop: the agent's own tool ran once on the gateway, the client's tool never ran, and
    the agent's answer came back in one run with nothing asked of the client."""
    assert executed == [], f"the client's tool ran: {executed}"
    assert answer == SERVER_TOOL_ANSWER
    events = run_events(gateway, prompt)
    assert [e["tool"] for e in of_event(events, "tool.started")] == ["terminal"]
    assert of_event(events, "tool_call.request") == [] and of_event(events, "tool_call.responded") == []
    assert events[-1]["event"] == "run.completed" and events[-1]["output"] == SERVER_TOOL_ANSWER
