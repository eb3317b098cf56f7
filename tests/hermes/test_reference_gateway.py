"""The real Hermes `AIAgent` behind the reference gateway, driven through the official `openai` package.

One gateway process per module (`hermes-api gateway`, `agent.runtime: auto` → `hermes`, `agent.max_turns: 2`)
against the scripted provider of `provider.py`: real reasoning deltas, a real `terminal` tool run (`echo
tool-ok`), real interrupts. WIRE.md §3.3/§3.4 (chat stream, tool progress), §4.2 (Responses stream), §3.6
(finish semantics: stop, length + iteration_budget_exhausted, cancelled), §5.5 (disconnect), §8.1/§8.3
(runtime `hermes`), §10 (reasoning).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.live import LiveGateway, start_gateway

from .conftest import HomeFactory
from .provider import ANSWER_PREFIX, SUMMARY_TEXT, TOOL_COMMAND, ScriptedProvider
from .support import http, wait_for

MAX_TURNS = 2


@pytest.fixture(scope="module")
def gateway(hermes_home: HomeFactory) -> Iterator[LiveGateway]:
    live = start_gateway(hermes_home(agent={"max_turns": MAX_TURNS}), timeout=60)
    yield live
    live.stop()


@pytest.fixture
def client(gateway: LiveGateway) -> Iterator[openai.OpenAI]:
    sdk = openai.OpenAI(base_url=gateway.url + "/v1", api_key=gateway.key, max_retries=0, timeout=90.0)
    try:
        yield sdk
    finally:
        sdk.close()


def unique(text: str) -> str:
    """Prompts are unique per test: derived session ids come from the first user message."""
    return f"{text} ({uuid.uuid4().hex[:8]})"


def extra(obj: Any, key: str) -> Any:
    value = getattr(obj, key, None)
    if value is None and getattr(obj, "model_extra", None):
        value = obj.model_extra.get(key)
    return value


def test_runtime_is_hermes_when_a_provider_is_configured(client: openai.OpenAI, gateway: LiveGateway) -> None:
    """agent.runtime auto + hermes-agent importable + model.provider → hermes, logged and advertised (§8.1, §8.3)."""
    models = client.models.list()
    assert [extra(m, "metadata") for m in models.data] == [{"runtime": "hermes"}]
    assert "[API Server] Agent runtime: hermes" in gateway.output()
    assert "Scripted runtime" not in gateway.output()


def test_chat_stream_reasoning_tool_progress_and_real_tool_output(
    client: openai.OpenAI, provider: ScriptedProvider, gateway: LiveGateway
) -> None:
    """Reasoning deltas before the answer, a running/completed progress pair for `terminal`, the answer quotes
    the real tool output, finish `stop` (§3.3, §3.4, §3.6, §10.1)."""
    prompt = unique("What does the command print?")
    order: list[str] = []
    reasoning, content, progress = [], [], []
    finish = None
    with client.chat.completions.create(
        model="hermes-agent", messages=[{"role": "user", "content": prompt}], stream=True
    ) as stream:
        for chunk in stream:
            assert len(chunk.choices) == 1
            delta = chunk.choices[0].delta
            if extra(delta, "reasoning_content"):
                reasoning.append(extra(delta, "reasoning_content"))
                order.append("reasoning")
            if delta.content:
                content.append(delta.content)
                order.append("content")
            if extra(chunk, "status") in ("running", "completed"):
                progress.append(chunk.model_extra)
                order.append("tool")
            finish = chunk.choices[0].finish_reason or finish
    assert finish == "stop"
    assert "I should run the command first." in "".join(reasoning)
    assert order.index("reasoning") < order.index("content")
    assert [p["status"] for p in progress] == ["running", "completed"]
    assert {p["tool"] for p in progress} == {"terminal"}
    assert progress[0]["label"] == TOOL_COMMAND
    answer = "".join(content)
    assert ANSWER_PREFIX + "tool-ok" in answer
    calls = provider.calls(marker=prompt)
    assert [c.last_role for c in calls] == ["user", "tool"]
    assert "terminal" in calls[0].tools
    assert "tool-ok" in calls[1].messages[-1]["content"]  # the tool really ran on the gateway host
    assert "falling back to:" not in gateway.output()  # hermes.compat took no fallback on the pinned hermes-agent


def test_chat_non_streaming_answer_and_reasoning(client: openai.OpenAI) -> None:
    """§3.2: the final answer with the tool output and `reasoning_content` on the message."""
    completion = client.chat.completions.create(
        model="hermes-agent", messages=[{"role": "user", "content": unique("Run it, no stream")}]
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert "tool-ok" in (choice.message.content or "")
    assert "I should run the command first." in extra(choice.message, "reasoning_content")
    assert completion.usage is not None and completion.usage.total_tokens > 0


def test_responses_stream_function_call_output_holds_real_tool_output(client: openai.OpenAI) -> None:
    """§4.2: reasoning item before the message, a terminal function_call + function_call_output with `tool-ok`,
    `response.completed`."""
    events = list(
        client.responses.create(model="hermes-agent", input=unique("Responses: run the command"), stream=True)
    )
    types = [e.type for e in events]
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert types.index("response.reasoning_summary_text.delta") < types.index("response.output_text.delta")
    done = [e.item for e in events if e.type == "response.output_item.done"]
    calls = [i for i in done if i.type == "function_call"]
    outputs = [i for i in done if i.type == "function_call_output"]
    assert [c.name for c in calls] == ["terminal"]
    assert json.loads(calls[0].arguments) == {"command": TOOL_COMMAND}
    assert len(outputs) == 1 and outputs[0].call_id == calls[0].call_id
    assert "tool-ok" in outputs[0].output
    final = events[-1].response
    assert final.status == "completed"
    assert "tool-ok" in final.output_text


def test_reasoning_effort_reaches_the_provider_and_opt_out_hides_reasoning(
    client: openai.OpenAI, provider: ScriptedProvider
) -> None:
    """§10.2: the request's effort is passed to the agent turn (and on to the model); §10.1: with
    model_options.reasoning.enabled false nothing reasoning-related is emitted."""
    prompt = unique("Low effort, hidden reasoning")
    chunks = list(
        client.chat.completions.create(
            model="hermes-agent",
            messages=[{"role": "user", "content": prompt}],
            stream=True,
            reasoning_effort="low",
            extra_body={"model_options": {"reasoning": {"enabled": False}}},
        )
    )
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert not any(extra(c.choices[0].delta, "reasoning_content") for c in chunks)
    assert "tool-ok" in "".join(c.choices[0].delta.content or "" for c in chunks)
    assert provider.calls(marker=prompt)[0].body.get("reasoning_effort") == "low"


def test_iteration_budget_exhausted_is_length_with_error_code(
    client: openai.OpenAI, provider: ScriptedProvider
) -> None:
    """A provider that always asks for a tool + agent.max_turns 2 → finish `length`, `iteration_budget_exhausted`,
    the closing summary as the answer (§3.6)."""
    prompt = unique("[always-tool] keep going")
    chunks = list(
        client.chat.completions.create(
            model="hermes-agent", stream=True, messages=[{"role": "user", "content": prompt}]
        )
    )
    finish = chunks[-1]
    assert finish.choices[0].finish_reason == "length"
    assert extra(finish, "hermes") == {
        "completed": False,
        "partial": True,
        "failed": False,
        "error_code": "iteration_budget_exhausted",
    }
    assert extra(finish, "error") is None
    assert SUMMARY_TEXT in "".join(c.choices[0].delta.content or "" for c in chunks)
    calls = provider.calls(marker=prompt)
    assert sum(1 for c in calls if c.tools) == MAX_TURNS  # two tool rounds, then the toolless summary call
    assert not calls[-1].tools


def test_iteration_budget_on_responses_is_incomplete(client: openai.OpenAI) -> None:
    """§3.6 / §4.4: the same outcome on Responses is `incomplete` with reason iteration_budget_exhausted."""
    response = client.responses.create(model="hermes-agent", input=unique("[always-tool] responses budget"))
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "iteration_budget_exhausted"
    assert SUMMARY_TEXT in response.output_text


def test_disconnect_during_reasoning_interrupts_the_agent(
    client: openai.OpenAI, provider: ScriptedProvider, gateway: LiveGateway
) -> None:
    """§5.5: a client that goes away mid-turn interrupts the real agent: Hermes drops the provider stream at once
    and makes no further request."""
    prompt = unique("[slow-stream] think for a long time")
    with client.chat.completions.create(
        model="hermes-agent", stream=True, messages=[{"role": "user", "content": prompt}]
    ) as stream:
        for chunk in stream:
            if extra(chunk.choices[0].delta, "reasoning_content"):
                break  # leaving the block closes the connection mid-turn
    assert wait_for(lambda: any(c.ended is not None for c in provider.calls(marker=prompt)), 10), (
        "the provider's 30 s reasoning stream was not cut by the interrupt"
    )
    calls = provider.calls(marker=prompt)
    assert len(calls) == 1 and calls[0].aborted
    assert calls[0].ended is not None and calls[0].ended - calls[0].started < 15
    time.sleep(2.0)
    assert len(provider.calls(marker=prompt)) == 1  # no request after the interrupt
    assert wait_for(lambda: "reason=interrupted" in gateway.output(), 5), gateway.output()[-3000:]


def test_disconnect_during_a_tool_stops_the_tool_and_the_turn(
    client: openai.OpenAI, provider: ScriptedProvider, gateway: LiveGateway
) -> None:
    """§5.5: disconnecting while `terminal` runs `sleep 30` stops the command and the agent: no follow-up
    request reaches the provider."""
    prompt = unique("[slow-tool] run a long command")
    before = gateway.output().count("reason=interrupted")
    with client.chat.completions.create(
        model="hermes-agent", stream=True, messages=[{"role": "user", "content": prompt}]
    ) as stream:
        for chunk in stream:
            if extra(chunk, "status") == "running":
                break
    assert wait_for(lambda: gateway.output().count("reason=interrupted") > before, 15), gateway.output()[-3000:]
    time.sleep(1.0)
    assert [c.last_role for c in provider.calls(marker=prompt)] == ["user"]


def test_run_stop_interrupts_the_agent(gateway: LiveGateway, provider: ScriptedProvider) -> None:
    """§6.4: POST /v1/runs/{id}/stop while `terminal` runs `sleep 30` → the run settles `cancelled` at once
    and the provider gets no follow-up request."""
    prompt = unique("[slow-tool] a run to stop")
    run_id = http(gateway, "POST", "/v1/runs", {"input": prompt})["run_id"]
    assert wait_for(lambda: http(gateway, "GET", f"/v1/runs/{run_id}")["last_event"] == "tool.started", 30)
    stopped_at = time.monotonic()
    assert http(gateway, "POST", f"/v1/runs/{run_id}/stop", {})["status"] in ("stopping", "cancelled")
    assert wait_for(lambda: http(gateway, "GET", f"/v1/runs/{run_id}")["status"] == "cancelled", 10)
    assert time.monotonic() - stopped_at < 8
    events = http(gateway, "GET", f"/v1/runs/{run_id}/events")
    assert '"event":"run.cancelled"' in events.replace(" ", "")
    time.sleep(1.0)
    assert [c.last_role for c in provider.calls(marker=prompt)] == ["user"]


def test_session_history_with_tool_calls_reaches_the_agent(client: openai.OpenAI, provider: ScriptedProvider) -> None:
    """Turns on one X-Hermes-Session-Id: the second turn's agent sees the first turn's user message, its
    terminal tool call and the tool result (history converted to OpenAI messages for run_conversation)."""
    session = {"X-Hermes-Session-Id": f"hermes-e2e-{uuid.uuid4().hex[:8]}"}
    first = unique("First turn, run it")
    client.chat.completions.create(
        model="hermes-agent", messages=[{"role": "user", "content": first}], extra_headers=session
    )
    second = client.chat.completions.create(
        model="hermes-agent", extra_headers=session, messages=[{"role": "user", "content": "And again"}]
    )
    assert "tool-ok" in (second.choices[0].message.content or "")
    request = provider.calls(marker=first)[-1]  # the conversation's first user message is still `first`
    assert request.messages[-1]["role"] == "tool"
    roles = [m["role"] for m in request.messages if m["role"] != "system"]
    assert roles[:4] == ["user", "assistant", "tool", "assistant"]
    earlier_call = next(m for m in request.messages if m["role"] == "assistant" and m.get("tool_calls"))
    assert earlier_call["tool_calls"][0]["function"]["name"] == "terminal"
    earlier_result = next(m for m in request.messages if m["role"] == "tool")
    assert "tool-ok" in earlier_result["content"]
    assert earlier_result["tool_call_id"] == earlier_call["tool_calls"][0]["id"]
