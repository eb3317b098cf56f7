"""The official OpenAI Python SDK against the real gateway process: Responses turn-taking (WIRE.md §15.3, W-15.1,
W-15.2). The SDK parses the `mcp_approval_request` and client `function_call` items a suspended Response ends with, and
a follow-up with `previous_response_id` carrying `mcp_approval_response` / `function_call_output` resumes the run;
`responses.stream()` accumulates the client call's argument deltas."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import openai
import pytest

from tests.helpers import MODEL
from tests.live import LiveGateway

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@pytest.fixture
def sdk(gateway_factory: Callable[..., LiveGateway]) -> Iterator[openai.OpenAI]:
    gateway = gateway_factory(script="suspend.yaml")
    client = openai.OpenAI(base_url=gateway.url + "/v1", api_key=gateway.key, max_retries=0, timeout=60.0)
    try:
        yield client
    finally:
        client.close()


def test_w_15_1_the_sdk_answers_an_mcp_approval_request(sdk: openai.OpenAI) -> None:
    first = sdk.responses.create(model=MODEL, input="delete the build")
    assert first.status == "completed"
    asked = first.output[-1]
    assert asked.type == "mcp_approval_request" and asked.server_label == "hermes" and asked.name == "terminal"
    assert json.loads(asked.arguments)["command"] == "rm -rf build/"
    answer = {"type": "mcp_approval_response", "approval_request_id": asked.id, "approve": True}
    second = sdk.responses.create(model=MODEL, input=[answer], previous_response_id=first.id)  # type: ignore[list-item]
    assert second.id != first.id and second.previous_response_id == first.id
    assert second.output_text.endswith("Done with the build directory.")


def test_w_15_2_the_sdk_round_trips_a_client_function_call(sdk: openai.OpenAI) -> None:
    with sdk.responses.stream(model=MODEL, input="weather?", tools=[WEATHER]) as stream:  # type: ignore[list-item]
        kinds = [event.type for event in stream]
        first = stream.get_final_response()
    assert "response.function_call_arguments.delta" in kinds
    call = next(item for item in first.output if item.type == "function_call")
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "example"}
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}
    second = sdk.responses.create(
        model=MODEL,
        input=[output],  # type: ignore[list-item]
        previous_response_id=first.id,
        tools=[WEATHER],  # type: ignore[list-item]
    )
    assert second.output_text.endswith("get_weather returned: sunny")
