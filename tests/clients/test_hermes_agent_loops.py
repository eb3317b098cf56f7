"""Agent loops with their own tool against the real `hermes gateway run` (hermes-agent 0.19 with this plugin as its
API server, the real `AIAgent`; WIRE.md §15.2, §15.3, §15.5, W-15.2, W-15.3): every loop of agent_loops.py — the
OpenAI Agents SDK on its Chat Completions and Responses models, Pydantic AI, LangChain's `bind_tools` loop, `llm`'s
`chain`, the Vercel AI SDK's `generateText` / `streamText` with `stopWhen` on chat and on `.responses()`, each in
its JSON and its streaming mode — and the `llm` CLI with `--functions`.

The arrangement: the frameworks need `openai>=3`, hermes-agent pins `openai==2.24.0`, so they cannot share a venv.
This module runs in the main .venv with the frameworks and starts `hermes gateway run -v` from .venv-hermes (which
`./test --hermes` builds; `./test` runs that suite first, so CI has it) as a subprocess, one gateway for the module;
its model is the scripted provider of tests/hermes/provider.py, served from this process, whose records show what
the agent really did; Hermes' own `-v` log shows that one agent turn did it all. Without .venv-hermes the tests skip (under CI=true they fail, like every client test).

- `[client-tool] …`: the provider calls the client's `get_weather` with `{"city": "Paris"}` when the request offers
  it; the plugin lends it to the agent for the turn, the framework runs it, resends the history with the result,
  which resumes the suspended turn, and the provider's next request carries the result as the `role: "tool"`
  message of its call; the agent answers `CLIENT_TOOL_DONE` + the result.
- untagged: the provider's `tool` scenario — the agent runs Hermes' own `terminal` (`echo tool-ok`) with the client
  tool declared too; the client tool never runs, the framework sees no call to run, and the answer quotes the
  command's output, which the provider received as the one tool result of the turn (W-15.3).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.helpers import ROOT
from tests.hermes.provider import (
    ANSWER_PREFIX,
    CLIENT_TOOL_ARGS,
    CLIENT_TOOL_DONE,
    TOOL_COMMAND,
    Recorded,
    ScriptedProvider,
    tool_output,
    turn_requests,
)
from tests.hermes.support import PLUGINS, HermesGateway, hermes_config, listening, start_gateway
from tests.live import Endpoint, write_home

from .agent_loops import (
    agents_sdk,
    agents_sdk_run,
    langchain_openai,
    langchain_tool_loop,
    llm_chain,
    llm_cli,
    llm_user_path,
    pydantic_ai_run,
    pydantic_ai_sdk,
    vercel_loop,
)
from .agent_tools import TOOL_NAME, import_client, weather
from .conftest import unavailable

# slow (left out by ./test --fast): the real Hermes gateway and agent, and a Node process per Vercel loop.
pytestmark = pytest.mark.slow

HERMES_BIN = ROOT / ".venv-hermes" / "bin"
CITY = CLIENT_TOOL_ARGS["city"]  # what the provider asks the client's tool for
CLIENT_TOOL_ANSWER = CLIENT_TOOL_DONE + weather(CITY)
SERVER_TOOL_OUTPUT = "tool-ok"  # what `echo tool-ok` prints
SERVER_TOOL_ANSWER = ANSWER_PREFIX + SERVER_TOOL_OUTPUT


@dataclass(frozen=True)
class Loop:
    """What one agent loop did: the agent's answer, the client tool's calls, and the names of the tool calls the
    framework took as its own to run (None: the client does not show them — the `llm` CLI prints the answer)."""

    answer: str
    executed: list[str]
    calls: list[str] | None


Runner = Callable[[pytest.FixtureRequest, Endpoint, str], Loop]


def agents_loop(streamed: bool, responses: bool) -> Runner:
    def run(request: pytest.FixtureRequest, gateway: Endpoint, prompt: str) -> Loop:
        output, executed, items = agents_sdk_run(agents_sdk(), gateway, prompt, streamed, responses)
        raws = [item.raw_item for item in items]
        # a call the Runner runs is a `function_call` (the chat model's tool_calls become those too)
        calls = [r.name for r in raws if not isinstance(r, dict) and r.type == "function_call"]
        return Loop(output, executed, calls)

    return run


def pydantic_ai_loop(streamed: bool) -> Runner:
    def run(request: pytest.FixtureRequest, gateway: Endpoint, prompt: str) -> Loop:
        return Loop(*pydantic_ai_run(pydantic_ai_sdk(), gateway, prompt, streamed))

    return run


def langchain_loop(streaming: bool) -> Runner:
    def run(request: pytest.FixtureRequest, gateway: Endpoint, prompt: str) -> Loop:
        answer, executed, replies = langchain_tool_loop(langchain_openai(), gateway, prompt, streaming)
        return Loop(answer, executed, [c["name"] for r in replies for c in r.tool_calls])

    return run


def llm_loop(stream: bool) -> Runner:
    def run(request: pytest.FixtureRequest, gateway: Endpoint, prompt: str) -> Loop:
        llm = import_client("llm", "llm")
        monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
        user_path = request.getfixturevalue("tmp_path") / "llm"
        monkeypatch.setenv("LLM_USER_PATH", str(llm_user_path(user_path, gateway)))
        text, executed, calls = llm_chain(llm, prompt, stream)
        return Loop(text, executed, [name for response in calls for name in response])

    return run


def llm_cli_loop(request: pytest.FixtureRequest, gateway: Endpoint, prompt: str) -> Loop:
    output, executed = llm_cli(request.getfixturevalue("tmp_path"), gateway, prompt)
    return Loop(output, executed, None)


def vercel(mode: str, provider: str) -> Runner:
    def run(request: pytest.FixtureRequest, gateway: Endpoint, prompt: str) -> Loop:
        result = vercel_loop(request.getfixturevalue("node_clients"), gateway, prompt, mode, provider)
        # provider-executed calls (the server's tools as `mcp_call` items on Responses) are reported, not run
        calls = [c["toolName"] for s in result["steps"] for c in s["toolCalls"] if not c["providerExecuted"]]
        return Loop(result["text"], result["executed"], calls)

    return run


LOOPS = [
    pytest.param(agents_loop(False, False), id="agents-sdk-chat-json"),
    pytest.param(agents_loop(True, False), id="agents-sdk-chat-stream"),
    pytest.param(agents_loop(False, True), id="agents-sdk-responses-json"),
    pytest.param(agents_loop(True, True), id="agents-sdk-responses-stream"),
    pytest.param(pydantic_ai_loop(False), id="pydantic-ai-json"),
    pytest.param(pydantic_ai_loop(True), id="pydantic-ai-stream"),
    pytest.param(langchain_loop(False), id="langchain-json"),
    pytest.param(langchain_loop(True), id="langchain-stream"),
    pytest.param(llm_loop(False), id="llm-json"),
    pytest.param(llm_loop(True), id="llm-stream"),
    pytest.param(llm_cli_loop, id="llm-cli"),
    pytest.param(vercel("generate", "compatible"), id="vercel-chat-generateText"),
    pytest.param(vercel("stream", "compatible"), id="vercel-chat-streamText"),
    pytest.param(vercel("generate", "responses"), id="vercel-responses-generateText"),
    pytest.param(vercel("stream", "responses"), id="vercel-responses-streamText"),
]


@pytest.fixture(scope="module")
def provider() -> Iterator[ScriptedProvider]:
    with ScriptedProvider() as server:
        yield server


@pytest.fixture(scope="module")
def hermes(provider: ScriptedProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HermesGateway]:
    """`hermes gateway run` from .venv-hermes, the plugin enabled as its API server, Hermes' `terminal` its tool."""
    if not (HERMES_BIN / "hermes").exists():
        unavailable(f"{HERMES_BIN / 'hermes'} is missing: run ./test --hermes, which builds .venv-hermes")
    root = tmp_path_factory.mktemp("hermes-agent-loops")
    config = hermes_config(provider, root / "work", plugins=PLUGINS)
    home = write_home(root / "home", env={"API_SERVER_PORT": "0"}, config=config, script=None)
    gateway = start_gateway(home, HERMES_BIN)
    try:
        listening(gateway)
        yield gateway
    finally:
        gateway.stop()


def answer_of(done: Loop) -> str:
    """The agent's answer without the paragraph break Hermes' `AIAgent` puts before the first text after a tool
    iteration (`_fire_stream_delta`: "\\n\\n" + text, to keep text apart across tool boundaries): the plugin streams
    Hermes' deltas as they come."""
    return done.answer.removeprefix("\n\n")


def the_turn(provider: ScriptedProvider, marker: str) -> tuple[Recorded, Recorded]:
    """The turn's two provider requests: the one the agent called a tool on, and the one carrying its result."""
    requests = turn_requests(provider, marker)
    assert len(requests) == 2, [(r.last_role, r.tools) for r in requests]
    return requests[0], requests[1]


def one_agent_turn(gateway: HermesGateway, marker: str) -> None:
    """Hermes' own log (`-v`) shows one conversation turn of the agent for the prompt, which made both provider calls
    and one tool iteration: the client's answer resumed the suspended turn instead of starting another."""
    started = [line for line in gateway.lines if "conversation turn: session=" in line and marker in line]
    assert len(started) == 1, started
    session = re.search(r"session=(\S+)", started[0])
    assert session is not None
    ended = gateway.wait_for(
        rf"Turn ended: .* api_calls=(\d+)/.* tool_turns=(\d+) .*session={re.escape(session[1])}$", 10
    )
    assert ended is not None, gateway.output()[-3000:]
    assert (ended[1], ended[2]) == ("2", "1")
    assert sum(f"conversation turn: session={session[1]} " in line for line in gateway.lines) == 1


def tool_round(record: Recorded) -> tuple[list[tuple[str, str, dict[str, Any]]], list[tuple[str, str]]]:
    """The tool calls the agent made in the conversation a request carries ((id, name, arguments)), and the tool
    results it sent ((tool_call_id, content))."""
    calls = [
        (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
        for m in record.messages
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or []
    ]
    results = [(m["tool_call_id"], m["content"]) for m in record.messages if m.get("role") == "tool"]
    return calls, results


@pytest.mark.parametrize("loop", LOOPS)
def test_the_agent_calls_the_client_tool_which_runs_once_and_the_answer_uses_its_result(
    request: pytest.FixtureRequest, hermes: HermesGateway, provider: ScriptedProvider, loop: Runner
) -> None:
    """W-15.2 on the hermes runtime: Hermes' agent is offered the client's tool beside its own, calls it, the
    framework runs it exactly once and sends the result back, the provider sees that result as the `role: "tool"`
    message answering the call, and the agent's answer quotes it. No server tool ran (the agent called nothing
    else) and the framework ran nothing but its tool."""
    marker = uuid.uuid4().hex[:12]
    done = loop(request, hermes, f"[client-tool] What is the weather? ({marker})")
    assert done.executed == [CITY], f"the client's tool ran {len(done.executed)} times: {done.executed}"
    assert done.calls in ([TOOL_NAME], None)
    assert answer_of(done) == CLIENT_TOOL_ANSWER
    asked, answered = the_turn(provider, marker)
    assert TOOL_NAME in asked.tools and "terminal" in asked.tools and asked.last_role == "user"
    calls, results = tool_round(answered)
    [(call_id, name, arguments)] = calls
    assert (name, arguments) == (TOOL_NAME, CLIENT_TOOL_ARGS)
    assert answered.last_role == "tool" and results == [(call_id, weather(CITY))]
    one_agent_turn(hermes, marker)


@pytest.mark.parametrize("loop", LOOPS)
def test_the_agent_runs_its_own_tool_on_the_server_and_the_client_tool_never_runs(
    request: pytest.FixtureRequest, hermes: HermesGateway, provider: ScriptedProvider, loop: Runner
) -> None:
    """W-15.3 on the hermes runtime: with the client's tool declared, the agent runs Hermes' `terminal` once; the
    framework sees no tool call to run, its tool never runs, and the answer quotes the command's output, which the
    provider got as the turn's one tool result."""
    marker = uuid.uuid4().hex[:12]
    done = loop(request, hermes, f"List the files ({marker})")
    assert done.executed == [], f"the client's tool ran: {done.executed}"
    assert done.calls in ([], None)
    assert answer_of(done) == SERVER_TOOL_ANSWER
    asked, answered = the_turn(provider, marker)
    assert TOOL_NAME in asked.tools and "terminal" in asked.tools
    calls, results = tool_round(answered)
    [(call_id, name, arguments)] = calls
    assert (name, arguments) == ("terminal", {"command": TOOL_COMMAND})
    assert [tool_call_id for tool_call_id, _ in results] == [call_id]
    assert tool_output(answered.messages).strip() == SERVER_TOOL_OUTPUT
    one_agent_turn(hermes, marker)
