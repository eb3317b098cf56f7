"""The Vercel AI SDK (`ai` `streamText`) with `@ai-sdk/openai-compatible` (Chat Completions) and with
`@ai-sdk/openai` `.responses()` (Responses API) against the real gateway; versions pinned in
tests/clients/node/package.json.

The "use tool" turn of tests/scripts/chat.yaml: reasoning, terminal tool ("ls -la"), commentary, reasoning,
answer, usage 42/17; any other prompt: reasoning "Thinking it through.", answer, usage 12/6.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from hermes_api_plugin.protocol.responses import NOTHING_NEW
from tests.helpers import parse_sse
from tests.live import LiveGateway

from .compat import ROWS
from .conftest import KEEPALIVE_ANSWER, KEEPALIVE_REASONING, KeepaliveRun, NodeClients

# slow (left out by ./test --fast): Node processes per scenario and the shared 25 s keepalive turn.
pytestmark = pytest.mark.slow

COMPATIBLE = ROWS["vercel-openai-compatible"]
RESPONSES = ROWS["vercel-openai-responses"]
TURNS = {
    "use tool": ("I should look at the files first.", "Two entries.", "Your project has README.md and src/.", 42, 17),
    "hello": ("Thinking it through.", None, "Hello from the scripted runtime.", 12, 6),
}
PROMPTS = [pytest.param("use tool", id="use-tool"), pytest.param("hello", id="default")]


def of_type(parts: list[dict[str, Any]], *types: str) -> list[dict[str, Any]]:
    return [p for p in parts if p["type"] in types]


def joined(parts: list[dict[str, Any]], kind: str) -> str:
    return "".join(p["text"] for p in of_type(parts, f"{kind}-delta"))


def blocks(parts: list[dict[str, Any]], kind: str) -> list[str]:
    """The text of each `<kind>-start` … `<kind>-end` block, by part id, in order of start."""
    texts: dict[str, str] = {}
    for part in parts:
        if part["type"] == f"{kind}-start":
            texts[part["id"]] = ""
        elif part["type"] == f"{kind}-delta":
            texts[part["id"]] += part["text"]
    return list(texts.values())


def assert_well_formed(parts: list[dict[str, Any]]) -> None:
    assert parts[0]["type"] == "start" and parts[-1]["type"] == "finish"
    assert of_type(parts, "error") == [], f"error part: {of_type(parts, 'error')}"
    assert of_type(parts, "abort") == []
    for kind in ("reasoning", "text"):
        assert [p["id"] for p in of_type(parts, f"{kind}-start")] == [p["id"] for p in of_type(parts, f"{kind}-end")]


# -- @ai-sdk/openai-compatible ------------------------------------------------------------------------------------


def _text_of(execution: dict[str, Any]) -> str:
    """The text of the input of a turn the scripted runtime logged."""
    return "".join(p.get("text", "") for p in execution["input"]["content"])


def _execution_of(gateway: Any, text: str) -> dict[str, Any]:
    """The one execution the scripted runtime logged for the turn whose input is `text`."""
    [execution] = [e for e in gateway.executions() if _text_of(e) == text]
    return execution


@pytest.mark.parametrize("prompt", PROMPTS)
def test_openai_compatible_stream_text_has_reasoning_and_text_parts_and_finishes_stop(
    node_clients: NodeClients, clients_gateway: LiveGateway, prompt: str
) -> None:
    """§3.3 via `createOpenAICompatible`: `reasoning_content` becomes reasoning parts, content becomes text parts,
    finish `stop` with the usage, no `error` part; the tool progress chunks (empty delta) produce no part."""
    first, second, answer, prompt_tokens, completion_tokens = TURNS[prompt]
    result = node_clients.run("vercel-openai-compatible", clients_gateway, prompt)
    parts = result["parts"]
    assert_well_formed(parts)
    reasoning = first + (f"\n\n{second}" if second else "")
    assert joined(parts, "reasoning") == reasoning
    assert joined(parts, "text") == answer
    assert (result["text"], result["reasoningText"]) == (answer, reasoning)
    assert result["finishReason"] == "stop"
    assert [p["finishReason"] for p in of_type(parts, "finish-step", "finish")] == ["stop", "stop"]
    assert (result["usage"]["inputTokens"], result["usage"]["outputTokens"]) == (prompt_tokens, completion_tokens)
    tool_parts = [p for p in parts if p["type"].startswith("tool-")]
    assert tool_parts == []
    assert COMPATIBLE.chat.works is (result["finishReason"] == "stop")
    assert COMPATIBLE.reasoning.works is bool(joined(parts, "reasoning"))
    assert COMPATIBLE.tool_progress.works is bool(tool_parts)


# -- @ai-sdk/openai .responses() ------------------------------------------------------------------------------------


def test_openai_responses_use_tool_turn_reports_the_server_tool_as_tool_call_and_tool_error(
    node_clients: NodeClients, clients_gateway: LiveGateway
) -> None:
    """§4.2, §4.4 notes via `createOpenAI().responses()` (default options, one step): the reasoning items become
    reasoning parts (from the summaries), the answer text parts; the server-executed `function_call` becomes a
    `tool-call` part (dynamic, invalid: the app has no such tool) plus one `tool-error` part, its
    `function_call_output` produces no part, the commentary item an empty text block; finish `tool-calls`,
    and no `error` part."""
    first, second, answer, _, _ = TURNS["use tool"]
    result = node_clients.run("vercel-openai-responses", clients_gateway, "use tool")
    parts = result["parts"]
    assert_well_formed(parts)
    assert blocks(parts, "reasoning") == [first, second]
    assert result["text"] == answer
    texts = of_type(parts, "text-start")
    assert [p["providerMetadata"]["openai"].get("phase") for p in texts] == ["commentary", None]
    assert blocks(parts, "text") == ["", answer], "commentary arrives without text deltas"
    ends = of_type(parts, "text-end")
    assert [p["providerMetadata"]["openai"].get("phase") for p in ends] == ["commentary", "final_answer"]

    calls, errors = of_type(parts, "tool-call"), of_type(parts, "tool-error")
    assert len(calls) == 1 and len(errors) == 1
    call, error = calls[0], errors[0]
    assert (call["toolName"], call["input"]) == ("terminal", {"command": "ls -la"})
    assert call["invalid"] is True and call["dynamic"] is True
    assert call["providerMetadata"]["openai"]["itemId"].startswith("fc_")
    assert error["toolCallId"] == call["toolCallId"]
    assert "NoSuchToolError" in str(error["error"])
    assert of_type(parts, "tool-result") == []
    assert [p["type"] for p in parts].index("tool-call") < [p["type"] for p in parts].index("text-delta")
    assert result["finishReason"] == "tool-calls"
    assert [p["finishReason"] for p in of_type(parts, "finish-step", "finish")] == ["tool-calls", "tool-calls"]
    assert result["steps"] == 1
    assert (result["usage"]["inputTokens"], result["usage"]["outputTokens"]) == (42, 17)
    # What an app appends for its next turn: the tool call and an error tool result for the server's call_id
    # (§4.1 uses the stored output instead when that history comes back).
    assistant, tool = result["responseMessages"]
    assert [c["type"] for c in assistant["content"]] == ["reasoning", "tool-call", "text", "reasoning", "text"]
    assert tool["role"] == "tool"
    assert tool["content"][0]["toolCallId"] == call["toolCallId"]
    assert tool["content"][0]["output"]["type"] == "error-text"
    assert RESPONSES.tool_progress.works is bool(calls)
    assert RESPONSES.reasoning.works is bool(blocks(parts, "reasoning"))


def test_openai_responses_default_turn_finishes_stop(node_clients: NodeClients, clients_gateway: LiveGateway) -> None:
    """Without tools the Responses stream is reasoning + text, finish `stop`, no `error` part."""
    first, _, answer, prompt_tokens, completion_tokens = TURNS["hello"]
    result = node_clients.run("vercel-openai-responses", clients_gateway, "hello")
    parts = result["parts"]
    assert_well_formed(parts)
    assert blocks(parts, "reasoning") == [first]
    assert blocks(parts, "text") == [answer]
    assert of_type(parts, "text-end")[0]["providerMetadata"]["openai"]["phase"] == "final_answer"
    assert result["finishReason"] == "stop"
    assert [p for p in parts if p["type"].startswith("tool-")] == []
    assert (result["usage"]["inputTokens"], result["usage"]["outputTokens"]) == (prompt_tokens, completion_tokens)
    assert RESPONSES.responses.works is (result["finishReason"] == "stop")


def test_openai_responses_next_user_turn_with_the_sdk_history_gets_the_stored_tool_output(
    node_clients: NodeClients, clients_gateway: LiveGateway
) -> None:
    """§4.1 via the SDK: an app appends `response.messages` (the server's tool call plus the SDK's own tool-error
    result) and the next user message; the server answers it normally and the agent's history holds the stored
    tool output, not the SDK's error text."""
    follow_up = f"hello again {uuid.uuid4().hex[:8]}"
    result = node_clients.run(
        "vercel-openai-responses", clients_gateway, "use tool", extra_env={"HERMES_FOLLOW_UP": follow_up}
    )
    second = result["followUp"]
    assert_well_formed(second["parts"])
    assert (second["text"], second["finishReason"]) == (TURNS["hello"][2], "stop")
    execution = _execution_of(clients_gateway, follow_up)
    tool_messages = [m for m in execution["history"] if m["role"] == "tool"]
    assert len(tool_messages) == 1
    assert "".join(p.get("text", "") for p in tool_messages[0]["content"]) == "README.md\nsrc/"
    assert "NoSuchToolError" not in json.dumps(execution["history"])


def test_openai_responses_agent_loop_sends_back_a_server_tool_and_is_answered_not_refused(
    node_clients: NodeClients, clients_gateway: LiveGateway
) -> None:
    """§15.3 (W-15.3's neighbour): with `stopWhen: stepCountIs(n > 1)` and tool items on, the SDK answers the server's
    already-executed tool call with its own tool error and sends a second request whose only new item is that
    `function_call_output`. The server ignores an output for its own call (it was 400 `missing_user_message`): the
    agent is told nothing new arrived and answers, so step 2 finishes `stop` with no `error` part, and the tool ran
    once (the scripted runtime's executions: one `use tool` turn)."""
    before = len([e for e in clients_gateway.executions() if _text_of(e) == "use tool"])
    result = node_clients.run(
        "vercel-openai-responses", clients_gateway, "use tool", extra_env={"HERMES_MAX_STEPS": "3"}
    )
    parts = result["parts"]
    assert of_type(parts, "error") == []
    assert [p["finishReason"] for p in of_type(parts, "finish-step")] == ["tool-calls", "stop"]
    assert joined(parts, "text") == TURNS["use tool"][2] + TURNS["hello"][2]
    assert result["transport"]["responses"] == 2
    assert len([e for e in clients_gateway.executions() if _text_of(e) == "use tool"]) == before + 1
    assert _text_of(clients_gateway.executions()[-1]) == NOTHING_NEW


def test_openai_responses_agent_loop_with_tool_items_off_finishes_stop(
    node_clients: NodeClients, clients_gateway: LiveGateway
) -> None:
    """With `X-Hermes-Tool-Items: off` the server leaves its (already executed) tools out of the stream, so
    the SDK's agent loop sees no tool call: one step, finish `stop`, the answer and reasoning, no error."""
    result = node_clients.run(
        "vercel-openai-responses",
        clients_gateway,
        "use tool",
        extra_env={"HERMES_MAX_STEPS": "3", "HERMES_TOOL_ITEMS": "off"},
    )
    parts = result["parts"]
    assert of_type(parts, "error") == []
    assert of_type(parts, "tool-call") == [] and of_type(parts, "tool-error") == []
    assert [p["finishReason"] for p in of_type(parts, "finish-step")] == ["stop"]
    assert joined(parts, "text") == TURNS["use tool"][2]
    assert result["transport"]["responses"] == 1


def test_openai_responses_follow_up_with_tool_items_off_references_the_items_it_was_shown(
    node_clients: NodeClients, clients_gateway: LiveGateway
) -> None:
    """W-4.21 via the SDK: with `X-Hermes-Tool-Items: off` the app appends `response.messages` (reasoning,
    commentary and answer, no tool call) and the next user message; the SDK refers to the stored items by the ids
    the filtered stream showed, and the agent's history gets exactly those items: the commentary, then the answer
    (issue 12: the answer's id used to bring back the commentary and a reasoning id was 400)."""
    follow_up = f"tool items off follow up {uuid.uuid4().hex[:8]}"
    result = node_clients.run(
        "vercel-openai-responses",
        clients_gateway,
        "use tool",
        extra_env={"HERMES_TOOL_ITEMS": "off", "HERMES_FOLLOW_UP": follow_up},
    )
    (assistant,) = result["responseMessages"]
    assert [c["type"] for c in assistant["content"]] == ["reasoning", "text", "reasoning", "text"]
    second = result["followUp"]
    assert_well_formed(second["parts"])
    assert (second["text"], second["finishReason"]) == (TURNS["hello"][2], "stop")
    execution = _execution_of(clients_gateway, follow_up)
    history = [(m["role"], "".join(p.get("text", "") for p in m["content"])) for m in execution["history"]]
    assert history == [("user", "use tool"), ("assistant", "Listed the files."), ("assistant", TURNS["use tool"][2])]


# -- keepalive ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "surface"),
    [
        pytest.param("vercel-openai-compatible", "raw-chat", id="vercel-openai-compatible"),
        pytest.param("vercel-openai-responses", "raw-responses", id="vercel-openai-responses"),
    ],
)
def test_keepalive_turn_completes_with_a_5s_idle_timeout(keepalive_run: KeepaliveRun, name: str, surface: str) -> None:
    """W-2.4: the 25 s tool turn completes in streamText although the transport aborts after 5 s without a byte;
    the comments reach the fetch (and a raw reader of the same surface), never a part."""
    result = keepalive_run.result(name)
    assert result["ok"] is True, f"{name}: {result.get('error')}\n{result.get('stderr', '')}"
    parts = result["parts"]
    assert of_type(parts, "error") == []
    assert joined(parts, "text") == KEEPALIVE_ANSWER
    assert joined(parts, "reasoning") == KEEPALIVE_REASONING
    assert result["finishReason"] == ("stop" if name == "vercel-openai-compatible" else "tool-calls")
    transport = result["transport"]
    assert transport["idleTimeouts"] == 0 and transport["maxIdleMs"] < 5000, transport
    assert transport["keepalives"] >= 2, transport
    assert result["elapsedMs"] >= 24_000
    raw = keepalive_run.result(surface)
    assert raw["ok"] is True, raw.get("error")
    assert parse_sse(raw["raw"])[1] >= 2
