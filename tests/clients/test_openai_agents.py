"""The OpenAI Agents SDK (`openai-agents`, pinned in pyproject's dev extra) with its Chat Completions model
(`OpenAIChatCompletionsModel`) lending the agent a `@function_tool` (WIRE.md §15.2, W-15.2, W-15.3): `Runner.run`
(JSON replies) and `Runner.run_streamed` (streams) against the real gateway; the same with `OpenAIResponsesModel`
(§15.3) and with `OpenAIResponsesWSModel`, the Responses WebSocket mode (§16). The SDK's tracing is off (it would
export to OpenAI).

`OpenAIResponsesWSModel` opens one socket per model (`ws://host:port/v1/responses`, the client's `Authorization`
header in the handshake) and keeps it for the model's calls: the tool call and the call that carries its output go
over the same socket. Each call is one `response.create` frame of the HTTP create body plus `"stream": true` — the
SDK always sends it, so the server must take `stream: true` on a socket — and the model reads frames up to the
terminal event; an `error` frame becomes `ResponsesWebSocketError`. Like the HTTP model it resends the whole input
with the `function_call_output` and no `previous_response_id` (§15.1 stateless answer)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from tests.helpers import DEFAULT_ANSWER, execution_for
from tests.live import LiveGateway

from .agent_loops import agents_sdk, agents_sdk_run
from .agent_tools import (
    STREAMED_OR_NOT,
    assert_client_tool_ran_once,
    assert_server_tool_ran_on_the_server,
    server_tool_prompt,
    weather_prompt,
)
from .compat import ROWS


@pytest.fixture(scope="module")
def agents() -> ModuleType:
    return agents_sdk()


def kinds(items: list[Any]) -> list[str]:
    return [item.type for item in items]


def raw_types(items: list[Any]) -> list[str]:
    """The Responses item type behind each of the run's items (`function_call`, `mcp_call`, `message`, …)."""
    return [raw.get("type") if isinstance(raw, dict) else raw.type for raw in (item.raw_item for item in items)]


@pytest.mark.parametrize("streamed", STREAMED_OR_NOT)
def test_agents_sdk_runs_its_function_tool_once_and_the_agent_answers_with_its_result(
    agents: ModuleType, clients_gateway: LiveGateway, streamed: bool
) -> None:
    """W-15.2: the agent's reasoning (`reasoning_content`) and its `tool_calls` make the Runner call the function tool, its output goes back as a `role:
    "tool"` message and resumes the same run, whose answer is the final output."""
    prompt = weather_prompt("agents-sdk")
    output, executed, items = agents_sdk_run(agents, clients_gateway, prompt, streamed)
    assert kinds(items) == ["reasoning_item", "tool_call_item", "tool_call_output_item", "message_output_item"]
    assert_client_tool_ran_once(clients_gateway, prompt, executed, output)


@pytest.mark.parametrize("streamed", STREAMED_OR_NOT)
def test_agents_sdk_never_runs_a_server_tool_and_not_its_own(
    agents: ModuleType, clients_gateway: LiveGateway, streamed: bool
) -> None:
    """W-15.3: the agent runs its own tool; the Runner sees no tool call (the progress chunks are not tool calls),
    runs nothing, and takes the answer in one model call."""
    prompt = server_tool_prompt("agents-sdk")
    output, executed, items = agents_sdk_run(agents, clients_gateway, prompt, streamed)
    assert kinds(items) == ["reasoning_item", "message_output_item"]
    assert_server_tool_ran_on_the_server(clients_gateway, prompt, executed, output)


# -- OpenAIResponsesModel (WIRE.md §15.3) ---------------------------------------------------------------------------


@pytest.mark.parametrize("streamed", STREAMED_OR_NOT)
def test_agents_sdk_responses_model_runs_its_function_tool_once_and_the_agent_answers_with_its_result(
    agents: ModuleType, clients_gateway: LiveGateway, streamed: bool
) -> None:
    """W-15.2 on Responses: the `function_call` item makes the Runner call the tool; the SDK resends the whole input
    with the `function_call_output` and no `previous_response_id`, which resumes the same run (§15.1)."""
    prompt = weather_prompt("agents-sdk-responses")
    output, executed, items = agents_sdk_run(agents, clients_gateway, prompt, streamed, responses=True)
    assert "tool_call_output_item" in kinds(items)
    assert_client_tool_ran_once(clients_gateway, prompt, executed, output)


@pytest.mark.parametrize("streamed", STREAMED_OR_NOT)
def test_agents_sdk_responses_model_sees_the_server_tool_as_mcp_call_and_never_runs_it(
    agents: ModuleType, clients_gateway: LiveGateway, streamed: bool
) -> None:
    """W-15.3 on Responses: with a client tool declared the server's tool is one `mcp_call` item (never a
    `function_call` an agent loop would run); the client's tool never runs; one model call."""
    prompt = server_tool_prompt("agents-sdk-responses")
    output, executed, items = agents_sdk_run(agents, clients_gateway, prompt, streamed, responses=True)
    assert "function_call" not in raw_types(items) and "mcp_call" in raw_types(items)
    assert_server_tool_ran_on_the_server(clients_gateway, prompt, executed, output)


# -- OpenAIResponsesWSModel: the Responses WebSocket mode (WIRE.md §16) ------------------------------------------------


@pytest.mark.parametrize("streamed", STREAMED_OR_NOT)
def test_agents_sdk_websocket_model_runs_its_function_tool_once_over_one_socket(
    agents: ModuleType, clients_gateway: LiveGateway, streamed: bool
) -> None:
    """W-15.2 over the socket: the `function_call` item ends the first response, the Runner runs the tool, and the
    model's next `response.create` on the same socket carries the output, which resumes the same run (one execution,
    `tool_call.request` then `tool_call.responded`); the agent answers with the tool's result."""
    assert ROWS["openai-agents-websocket"].client_tools.works
    prompt = weather_prompt("agents-sdk-ws")
    output, executed, items = agents_sdk_run(agents, clients_gateway, prompt, streamed, websocket=True)
    assert kinds(items) == ["reasoning_item", "tool_call_item", "tool_call_output_item", "message_output_item"]
    assert raw_types(items)[1] == "function_call"
    assert_client_tool_ran_once(clients_gateway, prompt, executed, output)


@pytest.mark.parametrize("streamed", STREAMED_OR_NOT)
def test_agents_sdk_websocket_model_sees_the_server_tool_as_mcp_call_and_never_runs_it(
    agents: ModuleType, clients_gateway: LiveGateway, streamed: bool
) -> None:
    """W-15.3 over the socket: the server's tool arrives as an `mcp_call` item the Runner never runs; one model call."""
    prompt = server_tool_prompt("agents-sdk-ws")
    output, executed, items = agents_sdk_run(agents, clients_gateway, prompt, streamed, websocket=True)
    assert "function_call" not in raw_types(items) and "mcp_call" in raw_types(items)
    assert_server_tool_ran_on_the_server(clients_gateway, prompt, executed, output)


@pytest.mark.parametrize("streamed", STREAMED_OR_NOT)
def test_agents_sdk_websocket_model_answers_a_plain_prompt(
    agents: ModuleType, clients_gateway: LiveGateway, streamed: bool
) -> None:
    """§16: an agent without tools gets the scripted default turn's reasoning and answer over the socket."""
    assert ROWS["openai-agents-websocket"].responses.works
    prompt = weather_prompt("agents-sdk-ws-plain")
    output, executed, items = agents_sdk_run(agents, clients_gateway, prompt, streamed, websocket=True, tools=False)
    assert (output, executed) == (DEFAULT_ANSWER, [])
    assert kinds(items) == ["reasoning_item", "message_output_item"]
    execution_for(clients_gateway, prompt)  # asserts that exactly one turn ran for the prompt
