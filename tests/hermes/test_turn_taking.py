"""Turn-taking with the client on the hermes runtime (WIRE.md §15.5), with the real Hermes `AIAgent` against the
scripted provider:

- on the reference gateway with the `hermes` runtime, through `/v1/runs`: Hermes' `clarify` question suspends the run
  (`requires_action`, type `question`) and the answer posted to `/v1/runs/{id}/answer` reaches the agent; a
  dangerous command suspends the run (type `approval`) for as long as `api_server.turns.suspend_seconds`, not Hermes'
  shorter `approvals.timeout`, runs only once approved, never after a denial or the suspension's timeout;
- in-process, a `HermesRuntime` turn given client function tools (the run surfaces do not declare them yet): the
  agent is offered them for that turn only — a warm agent's next turn does not see them — its call suspends the turn
  (`Suspender.tool_call`) and is never reported as a server tool, the client's output reaches the provider as the tool
  result, and `tool_choice` reaches the provider until the agent has called the tool.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_api_plugin.config.settings import load_settings
from hermes_api_plugin.core.client_tools import FUNCTION, NONE, REQUIRED, ClientTool, ToolChoice
from hermes_api_plugin.core.content import text_message
from hermes_api_plugin.core.events import TurnStatus
from hermes_api_plugin.hermes import compat
from hermes_api_plugin.runtimes.base import AgentTurn, TurnRequest, TurnResult
from hermes_api_plugin.runtimes.hermes import HermesRuntime
from tests.live import LiveGateway, start_gateway

from .conftest import HomeFactory
from .provider import (
    CLARIFIED,
    CLARIFY_CHOICES,
    CLARIFY_QUESTION,
    CLIENT_TOOL,
    CLIENT_TOOL_ARGS,
    CLIENT_TOOL_DONE,
    NO_CLIENT_TOOL,
    ScriptedProvider,
    last_tool_result,
    turn_requests,
)
from .support import http, wait_for

HERMES_APPROVAL_TIMEOUT_S = 2  # Hermes' own approvals.timeout: a suspended approval must outlast it
TOOLSETS = {"api_server": ["terminal", "clarify"]}


def _gateway(hermes_home: HomeFactory, approval_timeout_s: int, **api_server: Any) -> LiveGateway:
    home = hermes_home(
        env={"API_SERVER_PORT": "0"},
        platform_toolsets=TOOLSETS,
        approvals={"mode": "manual", "timeout": approval_timeout_s},
        api_server={"sse_keepalive_seconds": 1, **api_server},
    )
    return start_gateway(home, timeout=60)


@pytest.fixture(scope="module")
def gateway(hermes_home: HomeFactory) -> Iterator[LiveGateway]:
    live = _gateway(hermes_home, HERMES_APPROVAL_TIMEOUT_S)
    yield live
    live.stop()


@pytest.fixture(scope="module")
def impatient(hermes_home: HomeFactory) -> Iterator[LiveGateway]:
    """Suspensions end after 2 s; Hermes' own approval timeout would wait minutes."""
    live = _gateway(hermes_home, 300, turns={"suspend_seconds": 2})
    yield live
    live.stop()


def run(gateway: LiveGateway, run_id: str) -> dict[str, Any]:
    return dict(http(gateway, "GET", f"/v1/runs/{run_id}"))


def start_run(gateway: LiveGateway, text: str) -> str:
    return str(http(gateway, "POST", "/v1/runs", {"input": text})["run_id"])


def suspended(gateway: LiveGateway, run_id: str) -> dict[str, Any]:
    """The run's `required_action` once it suspends."""
    assert wait_for(lambda: run(gateway, run_id)["status"] == "requires_action", 30), run(gateway, run_id)
    return dict(run(gateway, run_id)["required_action"])


def settled(gateway: LiveGateway, run_id: str, timeout: float = 30) -> dict[str, Any]:
    assert wait_for(lambda: run(gateway, run_id)["status"] in ("completed", "failed", "cancelled"), timeout)
    return run(gateway, run_id)


def run_events(gateway: LiveGateway, run_id: str) -> list[dict[str, Any]]:
    raw = http(gateway, "GET", f"/v1/runs/{run_id}/events")
    return [json.loads(line[5:]) for line in raw.splitlines() if line.startswith("data:")]


def victim(tmp_path: Path) -> Path:
    target = tmp_path / f"victim-{uuid.uuid4().hex[:8]}"
    target.mkdir()
    (target / "keep.txt").write_text("still here")
    return target


# -- clarify ------------------------------------------------------------------------------------------------------


def test_a_clarify_question_suspends_the_run_and_the_answer_reaches_the_agent(
    gateway: LiveGateway, provider: ScriptedProvider
) -> None:
    """§15.5 / W-15.4: Hermes' `clarify` is the run's `question` (its choices offered); the answer `2` is the second
    choice, as Hermes' messaging gateway reads a typed number, and the agent's tool result carries it."""
    marker = f"clarify-{uuid.uuid4().hex[:8]}"
    run_id = start_run(gateway, f"[clarify] {marker}")
    action = suspended(gateway, run_id)
    assert action == {"type": "question", "question": CLARIFY_QUESTION, "choices": list(CLARIFY_CHOICES)}
    answered = http(gateway, "POST", f"/v1/runs/{run_id}/answer", {"text": "2"})
    assert answered["answered"] == 1
    done = settled(gateway, run_id)
    assert done["status"] == "completed" and done["output"].strip() == CLARIFIED + "blue", done
    result = json.loads(last_tool_result(turn_requests(provider, marker)[-1].messages))
    assert result["user_response"] == "blue" and result["question"] == CLARIFY_QUESTION
    names = [e.get("event") for e in run_events(gateway, run_id)]
    assert "question.request" in names and "question.responded" in names, names


def test_an_unanswered_question_tells_the_agent_nobody_answered(
    impatient: LiveGateway, provider: ScriptedProvider
) -> None:
    """§15.1: no answer within suspend_seconds → Hermes' own "did not respond" text reaches the agent."""
    marker = f"clarify-{uuid.uuid4().hex[:8]}"
    run_id = start_run(impatient, f"[clarify] {marker}")
    suspended(impatient, run_id)
    done = settled(impatient, run_id)
    assert done["status"] == "completed", done
    result = json.loads(last_tool_result(turn_requests(provider, marker)[-1].messages))
    assert result["user_response"].startswith("[user did not respond within"), result


# -- suspended approvals ---------------------------------------------------------------------------------------


def test_a_suspended_approval_outlasts_hermes_timeout_and_runs_once_approved(
    gateway: LiveGateway, tmp_path: Path
) -> None:
    """§15.1 / §15.5: without hold, the dangerous command suspends the run (`requires_action`, type `approval`),
    Hermes' approval timeout is raised to suspend_seconds for the turn (it is still waiting after Hermes' own 2 s),
    and `POST /v1/runs/{id}/approval` once lets it run."""
    target = victim(tmp_path)
    run_id = start_run(gateway, f"Clean up [danger] {target}")
    action = suspended(gateway, run_id)
    assert action["type"] == "approval" and f"rm -rf {target}" in action["command"], action
    assert action["choices"][0] == "once" and action["description"]
    time.sleep(HERMES_APPROVAL_TIMEOUT_S + 2)
    assert run(gateway, run_id)["status"] == "requires_action" and target.exists()
    decided = http(gateway, "POST", f"/v1/runs/{run_id}/approval", {"choice": "once"})
    assert (decided["choice"], decided["resolved"]) == ("once", 1)
    assert settled(gateway, run_id)["status"] == "completed"
    assert not target.exists()  # approved: the command ran
    names = [e.get("event") for e in run_events(gateway, run_id)]
    assert names.count("approval.request") == 1 and names.count("approval.responded") == 1, names


def test_a_suspended_approval_denied_never_runs(gateway: LiveGateway, tmp_path: Path) -> None:
    """§15.1: a denial through the run's approval endpoint; the command never runs."""
    target = victim(tmp_path)
    run_id = start_run(gateway, f"Clean up [danger] {target}")
    suspended(gateway, run_id)
    assert http(gateway, "POST", f"/v1/runs/{run_id}/approval", {"choice": "deny"})["resolved"] == 1
    assert settled(gateway, run_id)["status"] == "completed"
    assert target.exists()
    responded = [e for e in run_events(gateway, run_id) if e.get("event") == "approval.responded"]
    assert [e["choice"] for e in responded] == ["deny"]


def test_a_suspended_approval_nobody_answers_is_denied_when_the_suspension_ends(
    impatient: LiveGateway, tmp_path: Path
) -> None:
    """§15.1: no answer within suspend_seconds (2 s; Hermes' own timeout is 300 s) → deny, journaled; never runs."""
    target = victim(tmp_path)
    run_id = start_run(impatient, f"Clean up [danger] {target}")
    suspended(impatient, run_id)
    assert settled(impatient, run_id, timeout=20)["status"] == "completed"
    assert target.exists()
    responded = [e for e in run_events(impatient, run_id) if e.get("event") == "approval.responded"]
    assert [e["choice"] for e in responded] == ["deny"]


def test_a_raised_approval_timeout_holds_only_in_its_turns_thread() -> None:
    """§15.1: Hermes' approval timeout is raised for the suspending turn only; other turns keep approvals.timeout."""
    import tools.approval as hermes_approval  # the real guard module: what Hermes itself calls

    own = hermes_approval._get_approval_timeout()
    seen: dict[str, Any] = {}
    raised = threading.Event()
    done = threading.Event()

    def suspending_turn() -> None:
        token = compat.approvals.raise_approval_timeout(905.0)
        seen["turn"] = hermes_approval._get_approval_timeout()
        raised.set()
        done.wait(10)
        compat.approvals.restore_approval_timeout(token)
        seen["after"] = hermes_approval._get_approval_timeout()

    worker = threading.Thread(target=suspending_turn)
    worker.start()
    assert raised.wait(10)
    seen["other"] = hermes_approval._get_approval_timeout()
    done.set()
    worker.join(10)
    assert seen == {"turn": 905.0, "other": own, "after": own}


# -- client tools (in-process: a HermesRuntime turn) -----------------------------------------------------------

WEATHER = ClientTool(
    CLIENT_TOOL,
    "The weather of a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
FORECAST = "sunny, 21 C"


class Recorder:
    """The turn's sink: what the runtime reported."""

    def __init__(self) -> None:
        self.tools: list[str] = []
        self.text: list[str] = []

    def on_reasoning(self, text: str) -> None:
        pass

    def on_text(self, text: str | None) -> None:
        if text:
            self.text.append(text)

    def on_tool_start(self, call_id: str | None, name: str, arguments: Any) -> None:
        self.tools.append(name)

    def on_tool_complete(self, call_id: str | None, name: str, result: Any, is_error: bool) -> None:
        self.tools.append(f"{name} done")

    def on_commentary(self, text: str, already_streamed: bool) -> None:
        pass

    def on_compaction(self, summary: str) -> None:
        pass

    def on_approval_request(self, command: str, description: str, choices: tuple[str, ...]) -> None:
        pass

    def on_approval_response(self, choice: str) -> None:
        pass


class Client:
    """The turn's Suspender: a client that returns `output` for every tool call at once (None: no output)."""

    def __init__(self, output: str | None) -> None:
        self.output = output
        self.calls: list[tuple[str, str, str]] = []

    async def approval(self, command: str, description: str, choices: tuple[str, ...]) -> str:
        return "deny"

    async def question(self, question: str, choices: tuple[str, ...] = ()) -> str | None:
        return None

    async def tool_call(self, call_id: str, name: str, arguments: str) -> str | None:
        self.calls.append((call_id, name, arguments))
        return self.output


@pytest.fixture(scope="module")
def runtime(hermes_home: HomeFactory) -> Iterator[HermesRuntime]:
    home = hermes_home()
    patch = pytest.MonkeyPatch()
    patch.setenv("HERMES_HOME", str(home))  # Hermes resolves its config from the process' home
    runtime = HermesRuntime(load_settings(home, environ={}))
    yield runtime
    asyncio.run(runtime.close())
    patch.undo()


def turn(
    runtime: HermesRuntime,
    session_id: str,
    text: str,
    client: Client,
    tools: tuple[ClientTool, ...] = (),
    choice: ToolChoice | None = None,
) -> tuple[TurnResult, Recorder]:
    request = TurnRequest(
        turn_id=f"turn-{uuid.uuid4().hex[:8]}",
        session_id=session_id,
        input=text_message("user", text),
        client_tools=tools,
        tool_choice=choice or ToolChoice(),
    )
    sink = Recorder()
    return asyncio.run(runtime.run(AgentTurn(request, sink, client))), sink


def test_a_client_tool_is_called_through_the_suspension_and_its_output_reaches_the_provider(
    runtime: HermesRuntime, provider: ScriptedProvider
) -> None:
    """§15.5 / W-15.2: the declared tool is offered beside Hermes' own; the agent's call suspends the turn with the
    model's call id and arguments; the client's output is the tool result the provider gets next; the call is never
    reported as a server tool's progress."""
    marker = f"client-{uuid.uuid4().hex[:8]}"
    client = Client(FORECAST)
    result, sink = turn(runtime, f"s-{marker}", f"[client-tool] {marker}", client, (WEATHER,))
    assert result.status is TurnStatus.COMPLETED and result.final_text == CLIENT_TOOL_DONE + FORECAST, result
    assert [(name, json.loads(args)) for _, name, args in client.calls] == [(CLIENT_TOOL, CLIENT_TOOL_ARGS)]
    first, last = turn_requests(provider, marker)[0], turn_requests(provider, marker)[-1]
    assert CLIENT_TOOL in first.tools and "terminal" in first.tools
    tool_message = next(m for m in reversed(last.messages) if m.get("role") == "tool")
    assert tool_message["tool_call_id"] == client.calls[0][0] and last_tool_result(last.messages) == FORECAST
    assert sink.tools == []  # no server tool ran, and the client's call is not one


def test_a_warm_agent_does_not_keep_the_client_tools_of_an_earlier_turn(
    runtime: HermesRuntime, provider: ScriptedProvider
) -> None:
    """§15.5: the tools are lent for one turn; the conversation's next turn runs on the same (warm) agent without
    them."""
    session_id = f"s-warm-{uuid.uuid4().hex[:8]}"
    first, second = f"lent-{uuid.uuid4().hex[:8]}", f"after-{uuid.uuid4().hex[:8]}"
    turn(runtime, session_id, f"[client-tool] {first}", Client(FORECAST), (WEATHER,))
    hits = runtime.agents.stats().hits  # type: ignore[union-attr]
    result, _ = turn(runtime, session_id, f"[client-tool] {second}", Client(FORECAST))
    assert runtime.agents.stats().hits == hits + 1  # type: ignore[union-attr]
    assert result.final_text == NO_CLIENT_TOOL
    assert all(CLIENT_TOOL not in r.tools and "terminal" in r.tools for r in turn_requests(provider, second))


def test_a_client_tool_without_output_is_an_error_the_agent_sees(
    runtime: HermesRuntime, provider: ScriptedProvider
) -> None:
    """§15.1: no output (timeout, stop, the conversation moved on) → the tool returns an error to the agent."""
    marker = f"no-output-{uuid.uuid4().hex[:8]}"
    result, _ = turn(runtime, f"s-{marker}", f"[client-tool] {marker}", Client(None), (WEATHER,))
    assert result.status is TurnStatus.COMPLETED
    error = json.loads(last_tool_result(turn_requests(provider, marker)[-1].messages))
    assert error == {"error": f"The client returned no output for {CLIENT_TOOL}."}


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        (ToolChoice(REQUIRED), "required"),
        (ToolChoice(FUNCTION, CLIENT_TOOL), {"type": "function", "function": {"name": CLIENT_TOOL}}),
    ],
    ids=["required", "function"],
)
def test_tool_choice_reaches_the_provider_until_the_client_tool_is_called(
    runtime: HermesRuntime, provider: ScriptedProvider, choice: ToolChoice, sent: Any
) -> None:
    """§15.2: `required` and a named function are the provider request's tool_choice up to the agent's call; the
    request after the client's output chooses freely again (else the agent would loop on forced calls)."""
    marker = f"choice-{uuid.uuid4().hex[:8]}"
    result, _ = turn(runtime, f"s-{marker}", f"[client-tool] {marker}", Client(FORECAST), (WEATHER,), choice)
    assert result.status is TurnStatus.COMPLETED
    requests = turn_requests(provider, marker)
    assert [r.body.get("tool_choice") for r in requests] == [sent, None]


def test_tool_choice_none_offers_no_client_tool(runtime: HermesRuntime, provider: ScriptedProvider) -> None:
    """§15.2: `none` — the declared tools are not offered this turn."""
    marker = f"none-{uuid.uuid4().hex[:8]}"
    client = Client(FORECAST)
    result, _ = turn(runtime, f"s-{marker}", f"[client-tool] {marker}", client, (WEATHER,), ToolChoice(NONE))
    assert result.final_text == NO_CLIENT_TOOL and client.calls == []
    assert all(CLIENT_TOOL not in r.tools for r in turn_requests(provider, marker))


def test_a_client_tool_named_like_an_agent_tool_is_not_lent(runtime: HermesRuntime, provider: ScriptedProvider) -> None:
    """§15.5: a declared tool whose name is one of the agent's own tools is not offered (the agent keeps its own;
    a provider rejects two tools of one name): Hermes' `terminal` runs, the client is never asked."""
    marker = f"clash-{uuid.uuid4().hex[:8]}"
    client = Client(FORECAST)
    result, sink = turn(runtime, f"s-{marker}", f"run it {marker}", client, (ClientTool("terminal"),))
    assert result.status is TurnStatus.COMPLETED and client.calls == []
    assert sink.tools == ["terminal", "terminal done"]
    assert all(r.tools.count("terminal") == 1 for r in turn_requests(provider, marker))
