"""Each agent framework's own loop with the one client tool of agent_tools.py (`get_weather(city)`, counting its
calls), against any gateway (a `tests.live.Endpoint`): the reference gateway of the framework tests
(test_openai_agents.py, test_pydantic_ai.py, test_langchain_openai.py, test_llm.py, test_vercel_ai_tools.py) and
`hermes gateway run` with the plugin (test_hermes_agent_loops.py). Each returns what the agent answered, the tool's
calls, and what the framework saw of the model's tool calls; the checks stay with the tests.

- `agents_sdk_run`: the OpenAI Agents SDK `Runner` on `OpenAIChatCompletionsModel`, `OpenAIResponsesModel` or
  `OpenAIResponsesWSModel` (the Responses WebSocket mode);
- `pydantic_ai_run`: a Pydantic AI `Agent` on `OpenAIChatModel` with a `tool_plain`;
- `langchain_tool_loop`: `ChatOpenAI.bind_tools` in the manual loop of LangChain's docs;
- `llm_user_path` / `llm_chain` / `llm_cli`: `llm`'s model configured the documented way, `model.chain(prompt,
  tools=[...])` and the CLI with `--functions`;
- `vercel_loop`: tests/clients/node/vercel-client-tool.mjs (`generateText` / `streamText` with `stopWhen`).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import openai
import yaml

from tests.live import Endpoint

from .agent_tools import MODEL, TOOL_DESCRIPTION, TOOL_NAME, WEATHER, import_client, weather
from .conftest import NodeClients

LANGCHAIN_MAX_ROUNDS = 4  # the loop's own bound: one round trip is expected
LLM_MODEL_ID = "hermes"
VERCEL_SCRIPT = "vercel-client-tool"


def agents_sdk() -> ModuleType:
    """The OpenAI Agents SDK (`agents`), its tracing off (it would export to OpenAI)."""
    sdk = import_client("agents", "openai-agents")
    sdk.set_tracing_disabled(True)
    return sdk


def pydantic_ai_sdk() -> ModuleType:
    import_client("pydantic_ai.models.openai", "pydantic-ai-slim[openai]")
    return import_client("pydantic_ai", "pydantic-ai-slim[openai]")


def langchain_openai() -> ModuleType:
    import_client("langchain_core.tools", "langchain-openai")
    return import_client("langchain_openai", "langchain-openai")


def agents_sdk_run(
    agents: Any,
    gateway: Endpoint,
    prompt: str,
    streamed: bool,
    responses: bool = False,
    websocket: bool = False,
    tools: bool = True,
) -> tuple[str, list[str], list[Any]]:
    """Run an agent with the one tool (or none) on the Chat Completions model, the Responses model, or the Responses
    model over the WebSocket mode (`OpenAIResponsesWSModel`, one socket for the whole run, WIRE §16): (final output,
    the tool's calls, the run's new items)."""
    executed: list[str] = []

    @agents.function_tool(description_override=TOOL_DESCRIPTION)
    def get_weather(city: str) -> str:
        executed.append(city)
        return weather(city)

    if websocket:
        model_class = agents.OpenAIResponsesWSModel
    else:
        model_class = agents.OpenAIResponsesModel if responses else agents.OpenAIChatCompletionsModel

    async def main() -> tuple[str, list[Any]]:
        client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway.key, max_retries=0, timeout=60.0)
        model = model_class(model=MODEL, openai_client=client)
        try:
            agent = agents.Agent(
                name="weather",
                instructions="Answer with the tools you have.",
                model=model,
                tools=[get_weather] if tools else [],
            )
            if streamed:
                result = agents.Runner.run_streamed(agent, prompt)
                async for _ in result.stream_events():
                    pass
            else:
                result = await agents.Runner.run(agent, prompt)
            return result.final_output, result.new_items
        finally:
            if websocket:
                await model.close()  # the model keeps its socket open between runs
            await client.close()

    output, items = asyncio.run(main())
    return output, executed, items


def pydantic_ai_run(
    pydantic_ai: Any, gateway: Endpoint, prompt: str, streamed: bool
) -> tuple[str, list[str], list[str]]:
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


def langchain_tool_loop(
    langchain: Any, gateway: Endpoint, prompt: str, streaming: bool
) -> tuple[str, list[str], list[Any]]:
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
    for _ in range(LANGCHAIN_MAX_ROUNDS):
        reply = chat.invoke(messages)
        replies.append(reply)
        messages.append(reply)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            messages.append(ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"]))
    return replies[-1].content, executed, replies


def llm_user_path(root: Path, gateway: Endpoint) -> Path:
    """An LLM_USER_PATH where the model `hermes` is the gateway (an `extra-openai-models.yaml` with `api_base`, the
    key in `keys.json`)."""
    root.mkdir(parents=True, exist_ok=True)
    model = {
        "model_id": LLM_MODEL_ID,
        "model_name": MODEL,
        "api_base": gateway.url + "/v1",
        "api_key_name": LLM_MODEL_ID,
        "supports_tools": True,
    }
    (root / "extra-openai-models.yaml").write_text(yaml.safe_dump([model]), encoding="utf-8")
    (root / "keys.json").write_text(json.dumps({LLM_MODEL_ID: gateway.key}), encoding="utf-8")
    return root


def llm_chain(llm: ModuleType, prompt: str, stream: bool) -> tuple[str, list[str], list[list[str]]]:
    """`model.chain` on the model of $LLM_USER_PATH: (the chain's text, the tool's calls, the tool calls of each
    response in the chain)."""
    executed: list[str] = []

    def get_weather(city: str) -> str:
        """The weather in a city."""
        executed.append(city)
        return weather(city)

    done = llm.get_model(LLM_MODEL_ID).chain(prompt, tools=[get_weather], stream=stream)
    text = done.text()
    # done.responses() would run the chain again: read the responses it kept
    calls = [[c.name for c in response.tool_calls()] for response in done._responses]
    return text, executed, calls


# The tool the CLI gets with --functions; each call appends its city to the file named by $TOOL_CALLS.
FUNCTIONS = f'''
import os

def {TOOL_NAME}(city: str) -> str:
    """The weather in a city."""
    with open(os.environ["TOOL_CALLS"], "a", encoding="utf-8") as calls:
        calls.write(city + "\\n")
    return "{WEATHER} in " + city
'''


def llm_cli(tmp_path: Path, gateway: Endpoint, prompt: str) -> tuple[str, list[str]]:
    """`llm -m hermes --functions … PROMPT` with `tmp_path` as its LLM_USER_PATH's parent: (its stdout, the tool's
    calls)."""
    import_client("llm", "llm")
    calls = tmp_path / "calls.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "OPENAI_"))}
    env.update({"LLM_USER_PATH": str(llm_user_path(tmp_path / "llm", gateway)), "TOOL_CALLS": str(calls)})
    done = subprocess.run(
        [sys.executable, "-m", "llm", "prompt", "-m", LLM_MODEL_ID, "--functions", FUNCTIONS, prompt],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    executed = calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []
    return done.stdout.strip(), executed


def vercel_loop(
    node_clients: NodeClients, gateway: Endpoint, prompt: str, mode: str, provider: str = "compatible"
) -> dict[str, Any]:
    """The Vercel loop (`mode`: `generate` or `stream`; `provider`: `compatible` or `responses`): its JSON line —
    `steps`, `text`, `finishReason`, `executed` (the tool's calls), `transport` and, streamed, the `parts`, which
    hold no error part."""
    env = {"HERMES_MODE": mode, "HERMES_WEATHER": WEATHER, "HERMES_PROVIDER": provider}
    result = node_clients.run(VERCEL_SCRIPT, gateway, prompt, extra_env=env)
    if mode == "stream":
        errors = [p for p in result["parts"] if p["type"] in ("error", "abort", "tool-error")]
        assert errors == [], errors
    return result
