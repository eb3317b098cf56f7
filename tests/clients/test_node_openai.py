"""The official OpenAI Node SDK (`openai`, pinned in tests/clients/node/package.json) against the real gateway.

Scenario scripts in tests/clients/node print one JSON line each (`node_clients` fixture). The "use tool" turn
of tests/scripts/chat.yaml: reasoning, terminal tool ("ls -la"), commentary, reasoning, answer, usage 42/17.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.helpers import COMMENTARY, USE_TOOL_ANSWER, USE_TOOL_REASONING, USE_TOOL_TYPES, parse_sse
from tests.live import LiveGateway

from .compat import ROWS
from .conftest import KEEPALIVE_ANSWER, KEEPALIVE_REASONING, KeepaliveRun, NodeClients

ROW = ROWS["openai-node"]

# slow (left out by ./test --fast): Node processes per scenario and the shared 25 s keepalive turn.
pytestmark = pytest.mark.slow
SECOND_BURST = "\n\nTwo entries."


def progress_chunks(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool progress records reach the SDK as chunks with an empty delta and the fields at the chunk root."""
    return [c for c in chunks if c.get("status") in ("running", "completed")]


def test_chat_raw_stream_yields_reasoning_content_progress_and_usage(
    node_clients: NodeClients, clients_gateway: LiveGateway
) -> None:
    """W-3.1–W-3.5 via openai-node: one role chunk, reasoning_content and content deltas, the two progress
    records as empty-delta chunks, one finish chunk with stop and usage."""
    chunks = node_clients.run("openai-chat-raw", clients_gateway)["chunks"]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert all(len(c["choices"]) == 1 for c in chunks)
    assert deltas[0] == {"role": "assistant", "content": ""}
    assert all("role" not in d for d in deltas[1:])
    reasoning = "".join(d.get("reasoning_content", "") for d in deltas)
    content = "".join(d.get("content") or "" for d in deltas)
    assert reasoning == USE_TOOL_REASONING
    assert content == USE_TOOL_ANSWER
    assert len({c["id"] for c in chunks}) == 1 and re.fullmatch(r"chatcmpl-[0-9a-f]{32}", chunks[0]["id"])
    assert [c["choices"][0]["finish_reason"] for c in chunks[:-1]] == [None] * (len(chunks) - 1)
    finish = chunks[-1]
    assert finish["choices"][0]["finish_reason"] == "stop"
    assert finish["usage"] == {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59}
    progress = progress_chunks(chunks)
    assert [(p["tool"], p["status"]) for p in progress] == [("terminal", "running"), ("terminal", "completed")]
    assert progress[0]["toolCallId"] == progress[1]["toolCallId"]
    assert all(p["choices"][0]["delta"] == {"content": ""} for p in progress)
    assert [p["event"]["data"]["description"] for p in progress] == ["Running terminal: ls -la", "Ran terminal: ls -la"]
    assert not any("tool_calls" in d for d in deltas), "server tools never appear as delta.tool_calls"
    assert ROW.reasoning.works is bool(reasoning) and ROW.tool_progress.works is bool(progress)


def test_chat_stream_helper_final_chat_completion(node_clients: NodeClients, clients_gateway: LiveGateway) -> None:
    """W-3.1, W-3.14: `chat.completions.stream().finalChatCompletion()` resolves with role exactly "assistant",
    the whole answer and finish stop. The SDK copies unknown delta fields instead of concatenating them, so
    `message.reasoning_content` is only the last reasoning delta (README: read reasoning from the raw chunks)."""
    result = node_clients.run("openai-chat-final", clients_gateway)
    completion = result["completion"]
    choice = completion["choices"][0]
    message = choice["message"]
    assert message["role"] == "assistant"
    assert message["content"] == USE_TOOL_ANSWER
    assert choice["finish_reason"] == "stop"
    assert "tool_calls" not in message
    assert completion["usage"] == {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59}
    assert "".join(result["contentDeltas"]) == USE_TOOL_ANSWER
    last_reasoning = message["reasoning_content"]
    assert last_reasoning and SECOND_BURST.endswith(last_reasoning), last_reasoning
    assert result["chunkEvents"] >= 6


def test_responses_stream_final_response(node_clients: NodeClients, clients_gateway: LiveGateway) -> None:
    """W-4.1–W-4.8 via openai-node: `responses.stream()` iterates every event (gapless sequence numbers, one
    terminal event) and `finalResponse()` has the reasoning items, the executed tool pair, the commentary and
    the final answer."""
    result = node_clients.run("openai-responses-final", clients_gateway)
    events, response = result["events"], result["response"]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events[:2]] == ["response.created", "response.in_progress"]
    assert events[-1]["type"] == "response.completed"
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    reasoning = "".join(e["delta"] for e in events if e["type"] == "response.reasoning_summary_text.delta")
    assert text == USE_TOOL_ANSWER
    assert reasoning == "I should look at the files first.Two entries."
    assert response["status"] == "completed"
    output = response["output"]
    assert [item["type"] for item in output] == USE_TOOL_TYPES
    first, call, call_output, commentary, second, answer = output
    assert first["summary"] == [{"type": "summary_text", "text": "I should look at the files first."}]
    assert second["summary"][0]["text"] == "Two entries."
    assert (call["name"], call["arguments"], call["status"]) == ("terminal", '{"command":"ls -la"}', "completed")
    assert call_output["call_id"] == call["call_id"] and call_output["output"] == "README.md\nsrc/"
    assert commentary["phase"] == "commentary" and commentary["content"][0]["text"] == COMMENTARY
    assert answer["phase"] == "final_answer" and answer["content"][0]["text"] == USE_TOOL_ANSWER
    assert response["output_text"] == COMMENTARY + USE_TOOL_ANSWER
    assert response["usage"]["total_tokens"] == 59
    assert ROW.responses.works is (response["status"] == "completed")


@pytest.mark.parametrize(
    ("name", "surface"),
    [
        pytest.param("openai-node-chat-raw", "raw-chat", id="openai-node-chat-raw"),
        pytest.param("openai-node-chat-final", "raw-chat", id="openai-node-chat-final"),
        pytest.param("openai-node-responses-final", "raw-responses", id="openai-node-responses-final"),
    ],
)
def test_keepalive_turn_completes_with_a_5s_idle_timeout(keepalive_run: KeepaliveRun, name: str, surface: str) -> None:
    """W-2.4: the 25 s tool turn completes in the client although its transport aborts after 5 s without a
    byte; the keepalive comments reach the client's fetch, and a raw reader of the same surface sees them too."""
    result = keepalive_run.result(name)
    assert result["ok"] is True, f"{name}: {result.get('error')}\n{result.get('stderr', '')}"
    transport = result["transport"]
    assert transport["idleTimeouts"] == 0
    assert transport["keepalives"] >= 2, transport
    assert transport["maxIdleMs"] < 5000, transport
    assert result["elapsedMs"] >= 24_000, "the turn holds a 25 s tool"
    if name == "openai-node-chat-raw":
        deltas = [c["choices"][0]["delta"] for c in result["chunks"]]
        assert "".join(d.get("content") or "" for d in deltas) == KEEPALIVE_ANSWER
        assert "".join(d.get("reasoning_content", "") for d in deltas) == KEEPALIVE_REASONING
        assert result["chunks"][-1]["choices"][0]["finish_reason"] == "stop"
    elif name == "openai-node-chat-final":
        assert result["completion"]["choices"][0]["message"]["content"] == KEEPALIVE_ANSWER
    else:
        assert result["response"]["status"] == "completed"
        assert result["response"]["output_text"] == KEEPALIVE_ANSWER
    raw = keepalive_run.result(surface)
    assert raw["ok"] is True, raw.get("error")
    _, keepalives = parse_sse(raw["raw"])
    assert keepalives >= 2
