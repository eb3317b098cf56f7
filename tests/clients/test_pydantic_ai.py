"""Pydantic AI (`pydantic-ai-slim[openai]`, pinned in pyproject's dev extra): an `Agent` on `OpenAIChatModel` with an
`OpenAIProvider` on an OpenAI SDK client whose `base_url` is the gateway, lending the agent a plain tool (WIRE.md §15.2, W-15.2, W-15.3):
`run_sync` (JSON replies) and `run_stream` (streams)."""

from __future__ import annotations

import asyncio
from types import ModuleType
from typing import Any

import openai
import pytest

from tests.live import LiveGateway

from .agent_tools import (
    MODEL,
    STREAMED_OR_NOT,
    TOOL_NAME,
    assert_client_tool_ran_once,
    assert_server_tool_ran_on_the_server,
    import_client,
    server_tool_prompt,
    weather,
    weather_prompt,
)


@pytest.fixture(scope="module")
def pydantic_ai() -> ModuleType:
    import_client("pydantic_ai.models.openai", "pydantic-ai-slim[openai]")
    return import_client("pydantic_ai", "pydantic-ai-slim[openai]")


def run_agent(pydantic_ai: Any, gateway: LiveGateway, prompt: str, streamed: bool) -> tuple[str, list[str], list[str]]:
    """Run an agent with the one tool: (output, the tool's calls, the tool names of the model's tool-call parts)."""
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    executed: list[str] = []

    async def main() -> tuple[str, list[Any]]:
        # The SDK client is ours, closed on the way out: the provider's shared one would outlive this event loop.
        client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway.key, max_retries=0, timeout=60.0)
        agent = pydantic_ai.Agent(OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client)), retries=0)

        @agent.tool_plain(name=TOOL_NAME)
        def get_weather(city: str) -> str:
            """The weather in a city."""
            executed.append(city)
            return weather(city)

        try:
            if streamed:
                async with agent.run_stream(prompt) as result:
                    output = await result.get_output()
                return output, result.all_messages()
            done = await agent.run(prompt)
            return done.output, done.all_messages()
        finally:
            await client.close()

    output, messages = asyncio.run(main())
    calls = [p.tool_name for m in messages for p in m.parts if isinstance(p, pydantic_ai.messages.ToolCallPart)]
    return output, executed, calls


@pytest.mark.parametrize("streamed", STREAMED_OR_NOT)
def test_pydantic_ai_runs_its_tool_once_and_the_agent_answers_with_its_result(
    pydantic_ai: ModuleType, clients_gateway: LiveGateway, streamed: bool
) -> None:
    """W-15.2: one tool-call part, the agent runs the tool, its return part resumes the same run, whose answer is
    the output."""
    prompt = weather_prompt("pydantic-ai")
    output, executed, calls = run_agent(pydantic_ai, clients_gateway, prompt, streamed)
    assert calls == [TOOL_NAME]
    assert_client_tool_ran_once(clients_gateway, prompt, executed, output)


@pytest.mark.parametrize("streamed", STREAMED_OR_NOT)
def test_pydantic_ai_never_runs_a_server_tool_and_not_its_own(
    pydantic_ai: ModuleType, clients_gateway: LiveGateway, streamed: bool
) -> None:
    """W-15.3: the agent runs its own tool; Pydantic AI sees no tool call and takes the answer as the output."""
    prompt = server_tool_prompt("pydantic-ai")
    output, executed, calls = run_agent(pydantic_ai, clients_gateway, prompt, streamed)
    assert calls == []
    assert_server_tool_ran_on_the_server(clients_gateway, prompt, executed, output)
