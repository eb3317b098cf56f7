"""Simon Willison's `llm` (pinned in pyproject's dev extra) with the gateway as an OpenAI-compatible model, lending
the agent a tool (WIRE.md §15.2, W-15.2, W-15.3): the Python API's `model.chain(prompt, tools=[...])` (JSON replies
and streams) and the CLI with `--functions`. The model is configured the way llm's docs say — an
`extra-openai-models.yaml` with `api_base` and a key in `keys.json` — in a temporary `LLM_USER_PATH`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.live import LiveGateway

from .agent_loops import LLM_MODEL_ID, llm_chain, llm_user_path
from .agent_tools import (
    CITY,
    CLIENT_TOOL_ANSWER,
    SERVER_TOOL_ANSWER,
    TOOL_NAME,
    WEATHER,
    assert_client_tool_ran_once,
    assert_server_tool_ran_on_the_server,
    import_client,
    server_tool_prompt,
    weather_prompt,
)

MODES = [pytest.param(False, id="json"), pytest.param(True, id="stream")]


@pytest.fixture
def llm(tmp_path: Path, clients_gateway: LiveGateway, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    module = import_client("llm", "llm")
    monkeypatch.setenv("LLM_USER_PATH", str(llm_user_path(tmp_path / "llm", clients_gateway)))
    return module


@pytest.mark.parametrize("stream", MODES)
def test_llm_chain_runs_its_tool_once_and_the_agent_answers_with_its_result(
    llm: ModuleType, clients_gateway: LiveGateway, stream: bool
) -> None:
    """W-15.2: the first response calls the tool, the chain runs it and its result resumes the same run."""
    prompt = weather_prompt("llm")
    text, executed, calls = llm_chain(llm, prompt, stream)
    assert calls == [[TOOL_NAME], []]
    assert_client_tool_ran_once(clients_gateway, prompt, executed, text)


@pytest.mark.parametrize("stream", MODES)
def test_llm_chain_never_runs_a_server_tool_and_not_its_own(
    llm: ModuleType, clients_gateway: LiveGateway, stream: bool
) -> None:
    """W-15.3: the agent runs its own tool; the chain is one response without tool calls."""
    prompt = server_tool_prompt("llm")
    text, executed, calls = llm_chain(llm, prompt, stream)
    assert calls == [[]]
    assert_server_tool_ran_on_the_server(clients_gateway, prompt, executed, text)


# -- the CLI --------------------------------------------------------------------------------------------------------

# The tool the CLI gets with --functions; each call appends its city to the file named by $TOOL_CALLS.
FUNCTIONS = f'''
import os

def {TOOL_NAME}(city: str) -> str:
    """The weather in a city."""
    with open(os.environ["TOOL_CALLS"], "a", encoding="utf-8") as calls:
        calls.write(city + "\\n")
    return "{WEATHER} in " + city
'''


def llm_cli(tmp_path: Path, gateway: LiveGateway, prompt: str) -> tuple[str, list[str]]:
    """`llm -m hermes --functions … PROMPT`: (its stdout, the tool's calls)."""
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
