"""LangChain (`langchain-openai`, pinned in pyproject's dev extra): `ChatOpenAI(base_url=<gateway>).bind_tools([...])`
in the manual tool loop of LangChain's docs — invoke, run each `tool_call`, append a `ToolMessage`, invoke again
until the model answers without tool calls (WIRE.md §15.2, W-15.2, W-15.3); `streaming=False` (JSON replies) and
`streaming=True` (streams, which `invoke` aggregates)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

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

MAX_ROUNDS = 4  # the loop's own bound: one round trip is expected


@pytest.fixture(scope="module")
def langchain() -> ModuleType:
    import_client("langchain_core.tools", "langchain-openai")
    return import_client("langchain_openai", "langchain-openai")


def tool_loop(langchain: Any, gateway: LiveGateway, prompt: str, streaming: bool) -> tuple[str, list[str], list[Any]]:
    """The manual loop: (the last AI message's content, the tool's calls, the AI messages)."""
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import tool

    executed: list[str] = []

    @tool(TOOL_NAME)
    def get_weather(city: str) -> str:
        """The weather in a city."""
        executed.append(city)
        return weather(city)

    chat = langchain.ChatOpenAI(
        model=MODEL, base_url=gateway.url + "/v1", api_key=gateway.key, max_retries=0, timeout=60, streaming=streaming
    ).bind_tools([get_weather])
    messages: list[Any] = [HumanMessage(prompt)]
    replies: list[Any] = []
    for _ in range(MAX_ROUNDS):
        reply = chat.invoke(messages)
        replies.append(reply)
        messages.append(reply)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            messages.append(ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"]))
    return replies[-1].content, executed, replies


@pytest.mark.parametrize("streaming", STREAMED_OR_NOT)
def test_langchain_tool_loop_runs_the_bound_tool_once_and_the_agent_answers_with_its_result(
    langchain: ModuleType, clients_gateway: LiveGateway, streaming: bool
) -> None:
    """W-15.2: the first reply has one tool call (finish `tool_calls`), the `ToolMessage` resumes the same run,
    the second reply is the answer (finish `stop`)."""
    prompt = weather_prompt("langchain")
    answer, executed, replies = tool_loop(langchain, clients_gateway, prompt, streaming)
    assert [[c["name"] for c in r.tool_calls] for r in replies] == [[TOOL_NAME], []]
    assert [r.response_metadata.get("finish_reason") for r in replies] == ["tool_calls", "stop"]
    assert_client_tool_ran_once(clients_gateway, prompt, executed, answer)


@pytest.mark.parametrize("streaming", STREAMED_OR_NOT)
def test_langchain_tool_loop_never_runs_a_server_tool_and_not_its_own(
    langchain: ModuleType, clients_gateway: LiveGateway, streaming: bool
) -> None:
    """W-15.3: the agent runs its own tool; the one reply has no tool calls, so the loop runs nothing."""
    prompt = server_tool_prompt("langchain")
    answer, executed, replies = tool_loop(langchain, clients_gateway, prompt, streaming)
    assert [r.tool_calls for r in replies] == [[]]
    assert replies[0].response_metadata.get("finish_reason") == "stop"
    assert_server_tool_ran_on_the_server(clients_gateway, prompt, executed, answer)
