"""Simon Willison's `llm` (pinned in pyproject's dev extra) with the gateway as an OpenAI-compatible model, lending
the agent a tool (WIRE.md §15.2, W-15.2, W-15.3): the Python API's `model.chain(prompt, tools=[...])` (JSON replies
and streams) and the CLI with `--functions`. The model is configured the way llm's docs say — an
`extra-openai-models.yaml` with `api_base` and a key in `keys.json` — in a temporary `LLM_USER_PATH`."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.live import LiveGateway

from .agent_loops import llm_chain, llm_cli, llm_user_path
from .agent_tools import (
    CITY,
    CLIENT_TOOL_ANSWER,
    SERVER_TOOL_ANSWER,
    STREAMED_OR_NOT,
    TOOL_NAME,
    assert_client_tool_ran_once,
    assert_server_tool_ran_on_the_server,
    import_client,
    server_tool_prompt,
    weather_prompt,
)


@pytest.fixture
def llm(tmp_path: Path, clients_gateway: LiveGateway, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    module = import_client("llm", "llm")
    monkeypatch.setenv("LLM_USER_PATH", str(llm_user_path(tmp_path / "llm", clients_gateway)))
    return module


@pytest.mark.parametrize("stream", STREAMED_OR_NOT)
def test_llm_chain_runs_its_tool_once_and_the_agent_answers_with_its_result(
    llm: ModuleType, clients_gateway: LiveGateway, stream: bool
) -> None:
    """W-15.2: the first response calls the tool, the chain runs it and its result resumes the same run."""
    prompt = weather_prompt("llm")
    text, executed, calls = llm_chain(llm, prompt, stream)
    assert calls == [[TOOL_NAME], []]
    assert_client_tool_ran_once(clients_gateway, prompt, executed, text)


@pytest.mark.parametrize("stream", STREAMED_OR_NOT)
def test_llm_chain_never_runs_a_server_tool_and_not_its_own(
    llm: ModuleType, clients_gateway: LiveGateway, stream: bool
) -> None:
    """W-15.3: the agent runs its own tool; the chain is one response without tool calls."""
    prompt = server_tool_prompt("llm")
    text, executed, calls = llm_chain(llm, prompt, stream)
    assert calls == [[]]
    assert_server_tool_ran_on_the_server(clients_gateway, prompt, executed, text)


# -- the CLI --------------------------------------------------------------------------------------------------------


@pytest.mark.slow  # a CLI process per test: llm's start-up with its plugins takes seconds
def test_llm_cli_runs_its_function_once_and_prints_the_agent_answer(
    tmp_path: Path, clients_gateway: LiveGateway
) -> None:
    prompt = weather_prompt("llm-cli")
    output, executed = llm_cli(tmp_path, clients_gateway, prompt)
    assert output == CLIENT_TOOL_ANSWER and executed == [CITY]
    assert_client_tool_ran_once(clients_gateway, prompt, executed, output)


@pytest.mark.slow
def test_llm_cli_never_runs_a_server_tool_and_not_its_own(tmp_path: Path, clients_gateway: LiveGateway) -> None:
    prompt = server_tool_prompt("llm-cli")
    output, executed = llm_cli(tmp_path, clients_gateway, prompt)
    assert output == SERVER_TOOL_ANSWER
    assert_server_tool_ran_on_the_server(clients_gateway, prompt, executed, output)
