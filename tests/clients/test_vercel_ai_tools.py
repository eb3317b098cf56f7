"""The Vercel AI SDK's agent loop with a client tool (WIRE.md §15.2, W-15.2, W-15.3): `generateText` (JSON replies)
and `streamText` (streams) with `@ai-sdk/openai-compatible`, a `tool({inputSchema, execute})` and
`stopWhen: stepCountIs(5)` (tests/clients/node/vercel-client-tool.mjs; versions pinned in
tests/clients/node/package.json); the same loop on the Responses API with `@ai-sdk/openai` `.responses()` (§15.3)."""

from __future__ import annotations

import pytest

from tests.helpers import USE_TOOL_ANSWER
from tests.live import LiveGateway

from .agent_loops import vercel_loop
from .agent_tools import (
    CITY,
    TOOL_NAME,
    assert_client_tool_ran_once,
    assert_server_tool_ran_on_the_server,
    server_tool_prompt,
    weather,
    weather_prompt,
)
from .conftest import NodeClients

# slow (left out by ./test --fast): a Node process per scenario.
pytestmark = pytest.mark.slow

MODES = [pytest.param("generate", id="generateText"), pytest.param("stream", id="streamText")]


@pytest.mark.parametrize("mode", MODES)
def test_vercel_agent_loop_runs_its_tool_once_and_the_agent_answers_with_its_result(
    node_clients: NodeClients, clients_gateway: LiveGateway, mode: str
) -> None:
    """W-15.2: step 1 ends `tool-calls` with the tool's call and result (the SDK ran `execute`), step 2 — the
    tool message resuming the same run — ends `stop` with the answer; two requests in all."""
    prompt = weather_prompt(f"vercel-{mode}")
    result = vercel_loop(node_clients, clients_gateway, prompt, mode)
    first, second = result["steps"]
    assert first["finishReason"] == "tool-calls"
    assert [(c["toolName"], c["input"]) for c in first["toolCalls"]] == [(TOOL_NAME, {"city": CITY})]
    assert first["toolResults"] == [{"toolName": TOOL_NAME, "output": weather(CITY), "providerExecuted": False}]
    assert (second["finishReason"], second["toolCalls"]) == ("stop", [])
    assert result["finishReason"] == "stop" and result["transport"]["responses"] == 2
    assert_client_tool_ran_once(clients_gateway, prompt, result["executed"], result["text"])


@pytest.mark.parametrize("mode", MODES)
def test_vercel_agent_loop_never_runs_a_server_tool_and_not_its_own(
    node_clients: NodeClients, clients_gateway: LiveGateway, mode: str
) -> None:
    """W-15.3: the agent runs its own tool; one step, finish `stop`, no tool call for the SDK to run (the
    progress chunks make no part), one request."""
    prompt = server_tool_prompt(f"vercel-{mode}")
    result = vercel_loop(node_clients, clients_gateway, prompt, mode)
    [step] = result["steps"]
    assert (step["finishReason"], step["toolCalls"], step["toolResults"]) == ("stop", [], [])
    assert result["transport"]["responses"] == 1
    if mode == "stream":
        assert [p for p in result["parts"] if p["type"].startswith("tool-")] == []
    assert_server_tool_ran_on_the_server(clients_gateway, prompt, result["executed"], result["text"])


# -- @ai-sdk/openai .responses() (WIRE.md §15.3) --------------------------------------------------------------------

COMMENTARY = "Listed the files."  # the "use tool" turn's commentary message item (phase commentary)


@pytest.mark.parametrize("mode", MODES)
def test_vercel_responses_agent_loop_runs_its_tool_once_and_the_agent_answers_with_its_result(
    node_clients: NodeClients, clients_gateway: LiveGateway, mode: str
) -> None:
    """W-15.2 on Responses: a `function_call` item is the SDK's tool call, its `function_call_output` resumes the
    same run."""
    prompt = weather_prompt(f"vercel-responses-{mode}")
    result = vercel_loop(node_clients, clients_gateway, prompt, mode, provider="responses")
    first, second = result["steps"]
    assert [(c["toolName"], c["input"]) for c in first["toolCalls"]] == [(TOOL_NAME, {"city": CITY})]
    assert (second["finishReason"], second["toolCalls"]) == ("stop", [])
    assert_client_tool_ran_once(clients_gateway, prompt, result["executed"], result["text"])


@pytest.mark.parametrize("mode", MODES)
def test_vercel_responses_agent_loop_sees_the_server_tool_as_provider_executed_and_never_runs_it(
    node_clients: NodeClients, clients_gateway: LiveGateway, mode: str
) -> None:
    """W-15.3 on Responses: with a client tool declared the server's tool is an `mcp_call` item, which the SDK
    reports as a provider-executed `mcp.terminal` call with its result — nothing for the loop to run (no
    `tool-error`, unlike the `function_call` pair without client tools): one step, finish `stop`, one request.
    `generateText` joins the text of every message item, so its text starts with the commentary item's (the
    stream carries commentary without text deltas)."""
    prompt = server_tool_prompt(f"vercel-responses-{mode}")
    result = vercel_loop(node_clients, clients_gateway, prompt, mode, provider="responses")
    [step] = result["steps"]
    assert step["finishReason"] == "stop" and result["transport"]["responses"] == 1
    assert [(c["toolName"], c["input"], c["providerExecuted"]) for c in step["toolCalls"]] == [
        ("mcp.terminal", {"command": "ls -la"}, True)
    ]
    assert [(r["output"]["name"], r["output"]["output"]) for r in step["toolResults"]] == [
        ("terminal", "README.md\nsrc/")
    ]
    text = result["text"].removeprefix(COMMENTARY) if mode == "generate" else result["text"]
    if mode == "generate":
        assert result["text"] == COMMENTARY + USE_TOOL_ANSWER
    assert_server_tool_ran_on_the_server(clients_gateway, prompt, result["executed"], text)
