"""The OpenAI Agents SDK (`openai-agents`, pinned in pyproject's dev extra) with its Chat Completions model
(`OpenAIChatCompletionsModel`) lending the agent a `@function_tool` (WIRE.md §15.2, W-15.2, W-15.3): `Runner.run`
(JSON replies) and `Runner.run_streamed` (streams) against the real gateway. The SDK's tracing is off (it would
export to OpenAI)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from tests.live import LiveGateway

from .agent_loops import agents_sdk, agents_sdk_run
from .agent_tools import (
    STREAMED_OR_NOT,
    assert_client_tool_ran_once,
    assert_server_tool_ran_on_the_server,
    server_tool_prompt,
    weather_prompt,
)


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
