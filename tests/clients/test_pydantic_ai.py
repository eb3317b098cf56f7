"""Pydantic AI (`pydantic-ai-slim[openai]`, pinned in pyproject's dev extra): an `Agent` on `OpenAIChatModel` with an
`OpenAIProvider` on an OpenAI SDK client whose `base_url` is the gateway, lending the agent a plain tool (WIRE.md §15.2, W-15.2, W-15.3):
`run_sync` (JSON replies) and `run_stream` (streams)."""

from __future__ import annotations

from types import ModuleType

import pytest

from tests.live import LiveGateway

from .agent_loops import pydantic_ai_run, pydantic_ai_sdk
from .agent_tools import (
    STREAMED_OR_NOT,
    TOOL_NAME,
    assert_client_tool_ran_once,
    assert_server_tool_ran_on_the_server,
    server_tool_prompt,
    weather_prompt,
)


@pytest.fixture(scope="module")
def pydantic_ai() -> ModuleType:
    return pydantic_ai_sdk()


@pytest.mark.parametrize("streamed", STREAMED_OR_NOT)
def test_pydantic_ai_runs_its_tool_once_and_the_agent_answers_with_its_result(
    pydantic_ai: ModuleType, clients_gateway: LiveGateway, streamed: bool
) -> None:
    """W-15.2: one tool-call part, the agent runs the tool, its return part resumes the same run, whose answer is
    the output."""
    prompt = weather_prompt("pydantic-ai")
    output, executed, calls = pydantic_ai_run(pydantic_ai, clients_gateway, prompt, streamed)
    assert calls == [TOOL_NAME]
    assert_client_tool_ran_once(clients_gateway, prompt, executed, output)


@pytest.mark.parametrize("streamed", STREAMED_OR_NOT)
def test_pydantic_ai_never_runs_a_server_tool_and_not_its_own(
    pydantic_ai: ModuleType, clients_gateway: LiveGateway, streamed: bool
) -> None:
    """W-15.3: the agent runs its own tool; Pydantic AI sees no tool call and takes the answer as the output."""
    prompt = server_tool_prompt("pydantic-ai")
    output, executed, calls = pydantic_ai_run(pydantic_ai, clients_gateway, prompt, streamed)
    assert calls == []
    assert_server_tool_ran_on_the_server(clients_gateway, prompt, executed, output)
