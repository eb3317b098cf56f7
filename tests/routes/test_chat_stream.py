"""Chat Completions streaming and JSON replies against the real app in-process (WIRE.md §3, §2, §10).

Every request goes through the plugin's startup hook, the real middlewares and the scripted runtime
(tests/scripts/chat.yaml); nothing on the server side is mocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sqlite3
import stat
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from hermes_api_plugin.config.settings import load_settings
from hermes_api_plugin.gateway.server import (
    ReferenceGateway,
    build_plugin_manager,
    runner_kwargs,
)
from hermes_api_plugin.http.app_keys import TURNS
from hermes_api_plugin.runtimes import select_runtime
from tests.helpers import (
    CHAT,
    COMPLETION_ID,
    DEFAULT_ANSWER,
    EXHAUST_SUMMARY,
    PROGRESS,
    RUN_ID,
    USE_TOOL_ANSWER,
    USE_TOOL_REASONING,
    SseRecord,
    assert_error_envelope,
    chat_body,
    execution_for,
    fetch,
    history_texts,
    read_reply,
    read_until,
)
from tests.live import executions

from .support import ChatStream, check_stream_framing, json_chat, stream_chat

CALL_ID = re.compile(r"^call_[0-9a-f]{24}$")
DERIVED_SESSION = re.compile(r"^api-[0-9a-f]{16}$")


# -- helpers ------------------------------------------------------------------------------------------


def progress_by_call(result: ChatStream) -> dict[str, list[dict[str, Any]]]:
    calls: dict[str, list[dict[str, Any]]] = {}
    for record in result.progress:
        calls.setdefault(record["toolCallId"], []).append(record)
    return calls


# -- W-3.1 … W-3.4, W-3.14: the shape of a stream ------------------------------------------------------


async def test_chat_stream_first_chunk_is_the_only_role_chunk(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.1: the first chunk's delta is exactly {"role":"assistant","content":""}; no other chunk has role."""
    result = await stream_chat(api, auth, "use tool")
    first = result.records[0]
    assert first.event is None
    assert first.json()["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert first.json()["choices"][0]["finish_reason"] is None
    for chunk in result.chunks[1:]:
        assert "role" not in chunk["choices"][0]["delta"], chunk


async def test_chat_stream_chunks_share_id_created_model_and_one_choice(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.2: constant id (chatcmpl- + 32 hex), object, constant integer created, model; one choice index 0."""
    result = await stream_chat(api, auth, "use tool")
    chunks = result.chunks
    assert len({c["id"] for c in chunks}) == 1
    assert COMPLETION_ID.match(chunks[0]["id"])
    assert len({c["created"] for c in chunks}) == 1
    assert isinstance(chunks[0]["created"], int) and not isinstance(chunks[0]["created"], bool)
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk"
        assert chunk["model"] == "hermes-agent"
        assert len(chunk["choices"]) == 1
        choice = chunk["choices"][0]
        assert choice["index"] == 0
        assert "finish_reason" in choice


async def test_chat_stream_model_defaults_to_advertised_name_and_echoes_request_model(
    api: TestClient, auth: dict[str, str]
) -> None:
    """W-3.2 / §3.2: `model` is the request's model, or the advertised name when absent."""
    async with api.post(
        CHAT, json={"stream": True, "messages": [{"role": "user", "content": "hello"}]}, headers=auth
    ) as resp:
        chunks = (await read_reply(resp)).chunks
    assert {c["model"] for c in chunks} == {"hermes-agent"}
    result = await stream_chat(api, auth, "hello", model="my-frontend-model")
    assert {c["model"] for c in result.chunks} == {"my-frontend-model"}


async def test_chat_stream_reasoning_and_text_chunk_shapes(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.3: reasoning chunks are {"content":"","reasoning_content":…}; text chunks have no reasoning_content."""
    result = await stream_chat(api, auth, "use tool")
    body = result.plain[1:-1]
    reasoning = [c for c in body if "reasoning_content" in c["choices"][0]["delta"]]
    text = [c for c in body if "reasoning_content" not in c["choices"][0]["delta"]]
    assert reasoning and text
    for chunk in reasoning:
        delta = chunk["choices"][0]["delta"]
        assert set(delta) == {"content", "reasoning_content"}
        assert delta["content"] == ""
        assert isinstance(delta["reasoning_content"], str) and delta["reasoning_content"]
        assert chunk["choices"][0]["finish_reason"] is None
    for chunk in text:
        delta = chunk["choices"][0]["delta"]
        assert set(delta) == {"content"}
        assert delta["content"]
        assert chunk["choices"][0]["finish_reason"] is None
    assert "".join(c["choices"][0]["delta"]["content"] for c in text) == USE_TOOL_ANSWER


async def test_chat_stream_single_finish_chunk_with_usage_then_done(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.4, W-2.5: one finish chunk, last data chunk, delta {}, usage 42/17/59; [DONE] is the very last record."""
    result = await stream_chat(api, auth, "use tool")
    finish = result.finish
    assert finish["choices"][0]["finish_reason"] == "stop"
    assert finish["choices"][0]["delta"] == {}
    assert finish["usage"] == {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59}
    assert all(isinstance(v, int) for v in finish["usage"].values())
    assert "hermes" not in finish and "error" not in finish
    assert [c for c in result.chunks if c["choices"][0]["finish_reason"] is not None] == [finish]
    assert all(c["choices"] for c in result.chunks), "no choices:[] usage chunk"
    assert all("usage" not in c for c in result.chunks[:-1])
    assert result.records[-1] == SseRecord(None, "[DONE]")
    assert result.raw.endswith(b"data: [DONE]\n\n")


async def test_chat_stream_head_headers(api: TestClient, auth: dict[str, str]) -> None:
    """W-2.1: 200, text/event-stream, no-cache, X-Accel-Buffering no, session and run id headers."""
    result = await stream_chat(api, auth, "hello")
    assert result.headers["Cache-Control"] == "no-cache"
    assert result.headers["X-Accel-Buffering"] == "no"
    assert DERIVED_SESSION.match(result.headers["X-Hermes-Session-Id"])
    assert "Content-Length" not in result.headers


async def test_chat_stream_reasoning_equals_json_reasoning_content(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.14: bursts after the first start with "\\n\\n"; the concatenation equals message.reasoning_content."""
    result = await stream_chat(api, auth, "use tool")
    assert result.reasoning == USE_TOOL_REASONING
    # The first reasoning chunk after the tool opens the second burst with the separator.
    tool_index = next(i for i, r in enumerate(result.records) if r.event == PROGRESS)
    second_burst = next(
        r.json()
        for r in result.records[tool_index:]
        if r.event is None and r.data != "[DONE]" and "reasoning_content" in r.json()["choices"][0]["delta"]
    )
    assert second_burst["choices"][0]["delta"]["reasoning_content"].startswith("\n\n")
    _, reply = await json_chat(api, auth, "use tool")
    assert reply["choices"][0]["message"]["reasoning_content"] == result.reasoning
    assert reply["choices"][0]["message"]["content"] == result.content == USE_TOOL_ANSWER


async def test_chat_stream_reasoning_before_content(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.3: reasoning arrives before any answer text (the script reasons, runs a tool, reasons, answers)."""
    result = await stream_chat(api, auth, "use tool")
    kinds = []
    for chunk in result.plain[1:-1]:
        delta = chunk["choices"][0]["delta"]
        kinds.append("reasoning" if "reasoning_content" in delta else "text")
    assert kinds[0] == "reasoning"
    assert "text" in kinds
    last_reasoning = max(i for i, k in enumerate(kinds) if k == "reasoning")
    first_text = kinds.index("text")
    assert last_reasoning < first_text


async def test_chat_json_reply_shape(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.8: 200 chat.completion with message, reasoning_content, usage; no hermes block on stop."""
    headers, reply = await json_chat(api, auth, "use tool")
    assert COMPLETION_ID.match(reply["id"])
    assert reply["object"] == "chat.completion"
    assert isinstance(reply["created"], int)
    assert reply["model"] == "hermes-agent"
    assert reply["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": USE_TOOL_ANSWER, "reasoning_content": USE_TOOL_REASONING},
            "finish_reason": "stop",
        }
    ]
    assert reply["usage"] == {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59}
    assert "hermes" not in reply and "error" not in reply
    assert DERIVED_SESSION.match(headers["X-Hermes-Session-Id"])


# -- W-3.5, W-3.6: tool progress ------------------------------------------------------------------------


async def test_chat_stream_tool_progress_records_are_full_chunks(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.5: running then completed, chunk-shaped, with the Open WebUI status event."""
    result = await stream_chat(api, auth, "use tool")
    base = result.chunks[0]
    progress = result.progress
    assert [p["status"] for p in progress] == ["running", "completed"]
    running, completed = progress
    for record in progress:
        assert record["id"] == base["id"] and record["created"] == base["created"] and record["model"] == base["model"]
        assert record["object"] == "chat.completion.chunk"
        assert record["choices"] == [{"index": 0, "delta": {"content": ""}, "finish_reason": None}]
        assert record["tool"] == "terminal"
        assert record["emoji"] == "💻"
        assert record["label"] == "ls -la"
        assert isinstance(record["toolCallId"], str) and record["toolCallId"]
    assert running["toolCallId"] == completed["toolCallId"]
    assert "duration_ms" not in running and "is_error" not in running
    assert running["event"] == {"type": "status", "data": {"description": "Running terminal: ls -la", "done": False}}
    assert completed["event"] == {"type": "status", "data": {"description": "Ran terminal: ls -la", "done": True}}
    assert isinstance(completed["duration_ms"], int) and not isinstance(completed["duration_ms"], bool)
    assert 150 <= completed["duration_ms"] < 10_000  # the scripted tool takes 0.2 s
    assert completed["is_error"] is False
    # Order: reasoning, running, completed, more reasoning, text.
    order = [r.event or "chunk" for r in result.records]
    assert order.index(PROGRESS) > 1


async def test_chat_stream_hidden_tool_and_failed_tool(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.5, W-3.6: `_`-prefixed tools are never reported; a tool error shows is_error and "Failed …"."""
    result = await stream_chat(api, auth, "hidden tool")
    assert b"_internal" not in result.raw
    assert all(not p["tool"].startswith("_") for p in result.progress)
    assert [(p["tool"], p["status"]) for p in result.progress] == [("read_file", "running"), ("read_file", "completed")]
    running, completed = result.progress
    assert running["toolCallId"] == completed["toolCallId"]
    assert running["label"] == "notes.txt"
    assert running["event"]["data"] == {"description": "Running read_file: notes.txt", "done": False}
    assert completed["is_error"] is True
    assert completed["event"] == {
        "type": "status",
        "data": {"description": "Failed read_file: notes.txt", "done": True},
    }
    assert result.content == "Read it."
    assert result.finish["choices"][0]["finish_reason"] == "stop"


async def test_chat_stream_progress_header_off_removes_progress(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.6: `X-Hermes-Tool-Progress: off` removes every progress record for that request."""
    result = await stream_chat(api, auth, "use tool", headers={"X-Hermes-Tool-Progress": "off"})
    assert result.progress == []
    assert b"event:" not in result.raw
    assert result.content == USE_TOOL_ANSWER
    assert result.reasoning == USE_TOOL_REASONING
    # `on` (and any other value) keeps the configured behaviour.
    on = await stream_chat(api, auth, "use tool", headers={"X-Hermes-Tool-Progress": "on"})
    assert [p["status"] for p in on.progress] == ["running", "completed"]


async def test_chat_stream_progress_config_off_removes_progress(make_api: Any, auth: dict[str, str]) -> None:
    """W-3.6, W-8.4: api_server.tool_progress_events false removes progress and capabilities say so."""
    api = await make_api(config={"api_server": {"tool_progress_events": False}})
    result = await stream_chat(api, auth, "use tool")
    assert result.progress == []
    assert b"event:" not in result.raw
    assert result.content == USE_TOOL_ANSWER
    hidden = await stream_chat(api, auth, "hidden tool")
    assert hidden.progress == []
    async with api.get("/v1/capabilities", headers=auth) as resp:
        assert resp.status == 200
        capabilities = await resp.json()
    assert capabilities["features"]["tool_progress_events"] is False
    assert capabilities["features"]["reasoning_streaming"] is True


async def test_capabilities_report_tool_progress_on_by_default(api: TestClient, auth: dict[str, str]) -> None:
    """W-8.4: the default configuration reports tool_progress_events true."""
    async with api.get("/v1/capabilities", headers=auth) as resp:
        capabilities = await resp.json()
    assert capabilities["features"]["tool_progress_events"] is True


# -- W-3.7, W-3.8: finish variants ---------------------------------------------------------------------


async def test_chat_stream_fail_early_finishes_error(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.7, W-2.6: a failure before any text → finish error, root error agent_error, partial false."""
    result = await stream_chat(api, auth, "fail early")
    finish = result.finish
    assert finish["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "error"}
    assert finish["error"] == {
        "message": "Provider authentication failed",
        "type": "server_error",
        "param": None,
        "code": "agent_error",
    }
    assert finish["hermes"] == {"completed": False, "partial": False, "failed": True, "error_code": "agent_error"}
    assert set(finish["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert result.content == ""


async def test_chat_stream_fail_after_text_is_partial(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.7: diagnostic text is streamed as content first and makes partial true."""
    result = await stream_chat(api, auth, "fail")
    assert result.content == "Diagnostic: "
    assert result.reasoning == "Trying the provider."
    finish = result.finish
    assert finish["choices"][0]["finish_reason"] == "error"
    assert finish["error"]["code"] == "agent_error"
    assert finish["error"]["message"] == "Provider authentication failed"
    assert finish["hermes"] == {"completed": False, "partial": True, "failed": True, "error_code": "agent_error"}
    text_indexes = [i for i, c in enumerate(result.chunks) if c["choices"][0]["delta"].get("content")]
    assert text_indexes and max(text_indexes) < len(result.chunks) - 1


async def test_chat_stream_budget_exhausted_finishes_length(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.7, W-4.16 (chat): the summary is streamed, then finish length with iteration_budget_exhausted."""
    result = await stream_chat(api, auth, "exhaust")
    assert result.content == EXHAUST_SUMMARY
    finish = result.finish
    assert finish["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "length"}
    assert "error" not in finish
    assert finish["hermes"] == {
        "completed": False,
        "partial": True,
        "failed": False,
        "error_code": "iteration_budget_exhausted",
    }
    assert finish["usage"] == {"prompt_tokens": 90210, "completion_tokens": 4012, "total_tokens": 94222}
    # The summary text precedes the finish chunk; the tool ran to completion normally.
    last_text = max(i for i, c in enumerate(result.chunks) if c["choices"][0]["delta"].get("content"))
    assert last_text < len(result.chunks) - 1
    assert [p["status"] for p in result.progress] == ["running", "completed"]
    assert result.progress[1]["is_error"] is False


async def test_chat_stream_stop_has_no_hermes_block(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.7: a completed turn finishes stop without hermes or error."""
    result = await stream_chat(api, auth, "hello")
    assert result.content == DEFAULT_ANSWER
    assert result.finish["choices"][0]["finish_reason"] == "stop"
    assert "hermes" not in result.finish and "error" not in result.finish
    assert result.finish["usage"] == {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}


async def test_chat_json_finish_matches_stream_for_every_outcome(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.8: JSON replies carry the same finish_reason / hermes / error as the stream, HTTP 200."""
    expected_content = {
        "hello": DEFAULT_ANSWER,
        "fail early": "",
        "fail": "Diagnostic: ",
        "exhaust": EXHAUST_SUMMARY,
    }
    for text, content in expected_content.items():
        stream = await stream_chat(api, auth, text)
        _, reply = await json_chat(api, auth, text)
        choice = reply["choices"][0]
        assert reply["object"] == "chat.completion"
        assert choice["finish_reason"] == stream.finish["choices"][0]["finish_reason"], text
        assert reply.get("hermes") == stream.finish.get("hermes"), text
        assert reply.get("error") == stream.finish.get("error"), text
        assert reply["usage"] == stream.finish["usage"], text
        assert choice["message"]["role"] == "assistant"
        assert choice["message"]["content"] == content == stream.content, text
        assert choice["message"].get("reasoning_content") == (stream.reasoning or None), text
    _, failed = await json_chat(api, auth, "fail early")
    assert failed["error"] == {
        "message": "Provider authentication failed",
        "type": "server_error",
        "param": None,
        "code": "agent_error",
    }
    assert failed["hermes"] == {"completed": False, "partial": False, "failed": True, "error_code": "agent_error"}
    _, exhausted = await json_chat(api, auth, "exhaust")
    assert exhausted["choices"][0]["finish_reason"] == "length"
    assert exhausted["hermes"]["error_code"] == "iteration_budget_exhausted"
    assert exhausted["hermes"]["partial"] is True
    assert "error" not in exhausted


# -- W-3.13: a running tool stopped by a cancel ---------------------------------------------------------


async def test_chat_stream_cancel_stops_running_tool_before_cancelled_finish(
    api: TestClient, auth: dict[str, str]
) -> None:
    """W-3.13, W-3.7: cancel while a tool runs → completed is_error "Stopped …" (done:true), then finish cancelled."""
    async with api.post(CHAT, json=chat_body("hang"), headers=auth) as resp:
        assert resp.status == 200
        run_id = resp.headers["X-Hermes-Run-Id"]
        assert RUN_ID.match(run_id)
        raw = await read_until(resp, b'"status":"running"')
        turn = api.server.app[TURNS].get(run_id)
        assert turn is not None
        turn.cancel()
        raw += await asyncio.wait_for(resp.content.read(), 10)
    result = ChatStream(resp.status, resp.headers, raw)
    check_stream_framing(result)
    assert [p["status"] for p in result.progress] == ["running", "completed"]
    running, stopped = result.progress
    assert stopped["toolCallId"] == running["toolCallId"]
    assert stopped["is_error"] is True
    assert isinstance(stopped["duration_ms"], int)
    assert stopped["event"] == {"type": "status", "data": {"description": "Stopped terminal: sleep 600", "done": True}}
    # The stopped record comes right before the finish chunk.
    assert result.records[-3].event == PROGRESS and result.records[-3].json()["status"] == "completed"
    finish = result.finish
    assert finish["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "cancelled"}
    assert finish["hermes"] == {"completed": False, "partial": False, "failed": False, "error_code": "cancelled"}
    assert "error" not in finish
    assert "never reached" not in result.content
    assert api.server.app[TURNS].get(run_id) is None, "the turn settled and left the registry"


@pytest.mark.parametrize(
    ("text", "reason", "error_code"),
    [("fail while running", "error", "agent_error"), ("exhaust while running", "length", "iteration_budget_exhausted")],
)
async def test_chat_stream_tool_running_at_failure_or_budget_end_is_stopped(
    api: TestClient, auth: dict[str, str], text: str, reason: str, error_code: str
) -> None:
    """W-3.13: a tool still running when the turn fails or runs out of budget gets a Stopped record first."""
    result = await stream_chat(api, auth, text)
    assert [p["status"] for p in result.progress] == ["running", "completed"]
    stopped = result.progress[1]
    assert stopped["is_error"] is True
    assert stopped["event"] == {"type": "status", "data": {"description": "Stopped terminal: make test", "done": True}}
    assert result.records[-3].event == PROGRESS
    assert result.finish["choices"][0]["finish_reason"] == reason
    assert result.finish["hermes"]["error_code"] == error_code
    _, reply = await json_chat(api, auth, text)
    assert reply["choices"][0]["message"]["content"] == result.content
    if reason == "length":
        assert result.content == "Out of budget while the tests ran."


# -- W-3.15, W-3.16, redaction, commentary ---------------------------------------------------------------


async def test_chat_stream_unstreamed_final_text_arrives_as_one_chunk(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.15: the part of the final answer that was not streamed arrives as one text chunk before finish."""
    result = await stream_chat(api, auth, "final only")
    assert result.content == "Streamed part. Unstreamed rest."
    assert result.chunks[-2]["choices"][0]["delta"] == {"content": "Unstreamed rest."}
    assert result.finish["choices"][0]["finish_reason"] == "stop"
    _, reply = await json_chat(api, auth, "final only")
    assert reply["choices"][0]["message"]["content"] == "Streamed part. Unstreamed rest."


async def test_chat_stream_odd_tool_ids_are_substituted(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.16: missing, repeated and invalid ids become call_ + 24 hex; non-ASCII names are \\u-escaped."""
    result = await stream_chat(api, auth, "odd ids")
    progress = result.progress
    assert [p["status"] for p in progress] == ["running", "completed"] * 4
    ids = [progress[i]["toolCallId"] for i in range(0, 8, 2)]
    for i in range(0, 8, 2):
        assert progress[i]["toolCallId"] == progress[i + 1]["toolCallId"]
    assert len(set(ids)) == 4
    empty_id, first_dup, second_dup, spaced = ids
    assert CALL_ID.match(empty_id)
    assert first_dup == "dup"
    assert CALL_ID.match(second_dup)
    assert CALL_ID.match(spaced)
    assert "call with space" not in ids
    names = [progress[i]["tool"] for i in range(0, 8, 2)]
    assert names[:3] == ["terminal"] * 3
    assert names[3] == "w\\u00e9rk\\u0020tool"
    assert "\\u00e9" in names[3] and len("\\u00e9") == 6
    assert all(re.fullmatch(r"[\x21-\x7e]{1,256}", name) for name in names)


async def test_chat_stream_tool_label_is_redacted(api: TestClient, auth: dict[str, str]) -> None:
    """§3.4: the label is secret-redacted; the bearer token never reaches the stream."""
    result = await stream_chat(api, auth, "secret")
    assert [p["status"] for p in result.progress] == ["running", "completed"]
    for record in result.progress:
        assert "sk-abcdefghijklmnopqrstuv" not in record["label"]
        assert "sk-abcdefghijklmnopqrstuv" not in record["event"]["data"]["description"]
        assert record["label"].startswith("curl")
    assert b"sk-abcdefghijklmnopqrstuv" not in result.raw


async def test_chat_carries_no_commentary(api: TestClient, auth: dict[str, str]) -> None:
    """§3.3, §10.3: commentary is not sent on chat; reasoning bursts around it are joined with a blank line."""
    result = await stream_chat(api, auth, "commentary")
    assert b"Let me check something." not in result.raw
    assert result.content == "Checked."
    assert result.reasoning == "First thought.\n\nSecond thought."
    _, reply = await json_chat(api, auth, "commentary")
    message = reply["choices"][0]["message"]
    assert message["content"] == "Checked."
    assert message["reasoning_content"] == "First thought.\n\nSecond thought."
    assert "Let me check something." not in json.dumps(reply)


# -- W-10.1, W-10.2: reasoning options -----------------------------------------------------------------


async def test_chat_reasoning_disabled_removes_reasoning_everywhere(api: TestClient, auth: dict[str, str]) -> None:
    """W-10.1: model_options.reasoning.enabled false → no reasoning_content key (stream and JSON)."""
    options = {"reasoning": {"enabled": False}}
    result = await stream_chat(api, auth, "use tool", model_options=options)
    assert b"reasoning_content" not in result.raw
    assert all("reasoning_content" not in c["choices"][0]["delta"] for c in result.chunks)
    assert result.content == USE_TOOL_ANSWER
    _, reply = await json_chat(api, auth, "use tool", model_options=options)
    assert "reasoning_content" not in reply["choices"][0]["message"]
    assert reply["choices"][0]["message"]["content"] == USE_TOOL_ANSWER
    logged = [e for e in executions(api.home) if e["input"]["content"][0]["text"] == "use tool"]  # type: ignore[attr-defined]
    assert len(logged) == 2
    assert all(e["reasoning_enabled"] is False for e in logged)


async def test_chat_reasoning_effort_reaches_the_agent(api: TestClient, auth: dict[str, str]) -> None:
    """W-10.2: reasoning_effort reaches the turn; model_options.reasoning.effort wins over it."""
    await json_chat(api, auth, "effort one", reasoning_effort="high")
    await json_chat(api, auth, "effort two", reasoning_effort="high", model_options={"reasoning": {"effort": "low"}})
    await json_chat(api, auth, "effort three")
    assert execution_for(api, "effort one")["reasoning_effort"] == "high"
    assert execution_for(api, "effort one")["reasoning_enabled"] is True
    assert execution_for(api, "effort two")["reasoning_effort"] == "low"
    assert execution_for(api, "effort three")["reasoning_effort"] is None


async def test_chat_invalid_reasoning_effort_is_rejected(api: TestClient, auth: dict[str, str]) -> None:
    """W-10.2: an unknown effort gets 400 invalid_parameter and runs nothing."""
    refused = await fetch(api, "POST", CHAT, json=chat_body("hello", reasoning_effort="enormous"), headers=auth)
    assert_error_envelope(refused, 400, "invalid_parameter", param="reasoning_effort")
    assert executions(api.home) == []  # type: ignore[attr-defined]


# -- W-3.9, W-3.10: prompt, history and sessions -------------------------------------------------------


async def test_chat_system_and_developer_messages_become_system_prompt(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.9: system and developer texts are joined with "\\n" in order into the turn's system prompt."""
    messages = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "prompt check"},
        {"role": "developer", "content": [{"type": "text", "text": "Use metric units."}]},
        {"role": "assistant", "content": "Sure."},
        {"role": "user", "content": "prompt check again"},
    ]
    result = await stream_chat(api, auth, messages=messages)
    assert result.content == DEFAULT_ANSWER
    execution = execution_for(api, "prompt check again")
    assert execution["system_prompt"] == "Be terse.\nUse metric units."
    assert history_texts(execution) == [("user", "prompt check"), ("assistant", "Sure.")]


async def test_chat_derived_session_id_follows_the_opening(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.10: without X-Hermes-Session-Id the header is api- + 16 hex, equal for equal openings — while the history
    sent is the conversation as this gateway answered it (issue 14: an edited answer starts a session of its own,
    tests/routes/test_chat_continuity.py)."""
    system = {"role": "system", "content": "You are helpful."}
    first = [system, {"role": "user", "content": "opening one"}]
    continued = first + [{"role": "assistant", "content": DEFAULT_ANSWER}, {"role": "user", "content": "follow up"}]
    headers_a, _ = await json_chat(api, auth, messages=first)
    stream_b = await stream_chat(api, auth, messages=continued)
    headers_c, _ = await json_chat(api, auth, messages=[system, {"role": "user", "content": "opening two"}])
    headers_d, _ = await json_chat(
        api, auth, messages=[{"role": "system", "content": "Other."}, {"role": "user", "content": "opening one"}]
    )
    sid_a = headers_a["X-Hermes-Session-Id"]
    assert DERIVED_SESSION.match(sid_a)
    assert stream_b.headers["X-Hermes-Session-Id"] == sid_a
    assert DERIVED_SESSION.match(headers_c["X-Hermes-Session-Id"])
    assert headers_c["X-Hermes-Session-Id"] != sid_a
    assert headers_d["X-Hermes-Session-Id"] != sid_a
    assert execution_for(api, "follow up")["session_id"] == sid_a


async def test_chat_body_history_reaches_agent_without_tool_messages(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.9, §3.1: earlier user/assistant messages are the history; tool messages and tool_calls are dropped."""
    messages = [
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "README.md"},
        {"role": "assistant", "content": "There is a README."},
        {"role": "user", "content": [{"type": "text", "text": "history check"}]},
    ]
    _, reply = await json_chat(api, auth, messages=messages)
    assert reply["choices"][0]["message"]["content"] == DEFAULT_ANSWER
    execution = execution_for(api, "history check")
    assert history_texts(execution) == [("user", "list files"), ("assistant", "There is a README.")]
    assert "README.md" not in json.dumps(execution["history"])
    assert execution["system_prompt"] is None


async def test_chat_explicit_session_uses_server_history(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.10: with X-Hermes-Session-Id the header is echoed, history comes from the session, body history ignored."""
    session = {"X-Hermes-Session-Id": "my-session"}
    first = [
        {"role": "user", "content": "ignored opening"},
        {"role": "assistant", "content": "ignored answer"},
        {"role": "user", "content": "session turn one"},
    ]
    stream = await stream_chat(api, auth, messages=first, headers=session)
    assert stream.headers["X-Hermes-Session-Id"] == "my-session"
    assert stream.content == DEFAULT_ANSWER
    one = execution_for(api, "session turn one")
    assert one["session_id"] == "my-session"
    assert one["history"] == []

    second = [
        {"role": "system", "content": "Still applies."},
        {"role": "user", "content": "another ignored opening"},
        {"role": "assistant", "content": "another ignored answer"},
        {"role": "user", "content": "session turn two"},
    ]
    headers, reply = await json_chat(api, auth, messages=second, headers=session)
    assert headers["X-Hermes-Session-Id"] == "my-session"
    assert reply["choices"][0]["message"]["content"] == DEFAULT_ANSWER
    two = execution_for(api, "session turn two")
    assert two["session_id"] == "my-session"
    assert two["system_prompt"] == "Still applies."
    assert history_texts(two) == [("user", "session turn one"), ("assistant", DEFAULT_ANSWER)]

    # The session lives in the SQLite store, file mode 0600.
    db = api.home / "hermes_api.sqlite3"  # type: ignore[attr-defined]
    assert db.exists()
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        rows = conn.execute(
            "SELECT role, content FROM messages WHERE session_id = ? ORDER BY id", ("my-session",)
        ).fetchall()
    assert [(role, "".join(p["text"] for p in json.loads(content))) for role, content in rows] == [
        ("user", "session turn one"),
        ("assistant", DEFAULT_ANSWER),
        ("user", "session turn two"),
        ("assistant", DEFAULT_ANSWER),
    ]


async def test_chat_explicit_session_survives_an_app_restart(
    make_api: Any, aiohttp_client: Any, auth: dict[str, str]
) -> None:
    """W-3.10: the server-side session is durable — a new app on the same home sees the history."""
    api = await make_api()
    session = {"X-Hermes-Session-Id": "durable-session"}
    await json_chat(api, auth, "durable one", headers=session)
    home = api.home  # type: ignore[attr-defined]
    await api.close()  # shutdown: drain, close the store
    settings = load_settings(home, environ={"HERMES_HOME": str(home)})
    pm = build_plugin_manager()
    gateway = ReferenceGateway(settings, select_runtime(settings), pm)
    pm.hook.hermes_api_gateway_startup(gateway=gateway)
    kwargs = {k: v for k, v in runner_kwargs().items() if k != "handler_cancellation"}
    client = await aiohttp_client(gateway.apps[0], server_kwargs=kwargs)
    await json_chat(client, auth, "durable two", headers=session)
    two = [e for e in executions(home) if e["input"]["content"][0]["text"] == "durable two"]
    assert len(two) == 1
    assert history_texts(two[0]) == [("user", "durable one"), ("assistant", DEFAULT_ANSWER)]


# -- W-3.11 -----------------------------------------------------------------------------------------------


async def test_the_servers_own_tools_never_appear_in_tool_calls(api: TestClient, auth: dict[str, str]) -> None:
    """W-3.11 as §15.2 amends it (W-15.3): with client tools declared, a turn the agent answers with its own tools
    streams them as tool progress, never as `tool_calls`; `tool_choice: none` offers the client's tools to no one."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    for choice in ("auto", "none"):
        result = await stream_chat(api, auth, "use tool", tools=tools, tool_choice=choice)
        assert b"tool_calls" not in result.raw
        assert all("tool_calls" not in c["choices"][0]["delta"] for c in result.chunks)
        assert result.finish["choices"][0]["finish_reason"] == "stop"
        assert result.content == USE_TOOL_ANSWER
    _, reply = await json_chat(api, auth, "use tool", tools=tools, tool_choice="none")
    assert "tool_calls" not in reply["choices"][0]["message"]
    assert reply["choices"][0]["finish_reason"] == "stop"


# -- run ids -------------------------------------------------------------------------------------------


async def test_every_chat_reply_carries_a_fresh_run_id(api: TestClient, auth: dict[str, str]) -> None:
    """§1.6, W-6.6: stream and JSON replies carry X-Hermes-Run-Id run_ + 32 hex, one per turn."""
    ids = []
    for text in ("hello", "fail early", "exhaust"):
        ids.append((await stream_chat(api, auth, text)).headers["X-Hermes-Run-Id"])
        headers, _ = await json_chat(api, auth, text)
        ids.append(headers["X-Hermes-Run-Id"])
    assert all(RUN_ID.match(run_id) for run_id in ids)
    assert len(set(ids)) == len(ids)
    logged = [e["turn_id"] for e in executions(api.home)]  # type: ignore[attr-defined]
    assert sorted(logged) == sorted(ids)


# -- W-1.12: draining (the registry's real drain, as the gateway's shutdown hook calls it) ---------------


async def test_drain_settles_open_stream_cancelled_and_refuses_new_turns(api: TestClient, auth: dict[str, str]) -> None:
    """W-1.12: during shutdown an open stream ends `cancelled` + [DONE]; new turns get 503 gateway_draining."""
    registry = api.server.app[TURNS]
    async with api.post(CHAT, json=chat_body("hang"), headers=auth) as resp:
        raw = await read_until(resp, b'"status":"running"')
        drained = asyncio.ensure_future(registry.drain())
        raw += await asyncio.wait_for(resp.content.read(), 10)
    await asyncio.wait_for(drained, 15)
    result = ChatStream(resp.status, resp.headers, raw)
    check_stream_framing(result)
    assert result.finish["choices"][0]["finish_reason"] == "cancelled"
    assert result.progress[-1]["event"]["data"]["description"] == "Stopped terminal: sleep 600"
    for stream in (True, False):
        refused = await fetch(api, "POST", CHAT, json=chat_body("hello", stream=stream), headers=auth)
        assert refused.headers["Retry-After"] == "1"
        assert_error_envelope(refused, 503, "gateway_draining", type="server_error", param=None)
    assert registry.active == 0
