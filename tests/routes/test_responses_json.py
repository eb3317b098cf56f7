"""Non-streaming Responses and the request a create accepts: the JSON reply equals the stream's terminal
Response, a failed turn is 200 with its error, model and tools are echoed, booleans parsed, the run and session
headers on every reply (WIRE.md §4.1, §4.5, §1.11; W-4.9).

Every request goes through the plugin's startup hook, the real middlewares, the SQLite store and the
scripted runtime (tests/scripts/chat.yaml); nothing on the server side is mocked. Shared helpers:
tests/routes/responses_helpers.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.helpers import (
    ITEM_ID,
    RESPONSE_ID,
    RESPONSES,
    RUN_ID,
    USE_TOOL_ANSWER,
)
from tests.live import executions

from .responses_helpers import create, message_texts, poll_status, rejected, stream_response


def normalized(value: Any) -> Any:
    """A Response object with ids and timestamps blanked, for comparing two turns of the same input."""
    if isinstance(value, dict):
        return {
            k: ("<id>" if k in ("id", "call_id", "created_at", "completed_at") else normalized(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


@pytest.mark.parametrize("text", ["use tool", "exhaust", "fail", "fail early", "hello", "commentary", "final only"])
async def test_json_reply_equals_stream_terminal_response(api: TestClient, auth: dict[str, str], text: str) -> None:
    """W-4.9: stream:false returns the terminal event's response (modulo ids/timestamps), HTTP 200 on failure too."""
    stream = await stream_response(api, auth, text)
    _, reply = await create(api, auth, text)
    assert normalized(reply) == normalized(stream.response)
    assert RESPONSE_ID.match(reply["id"])
    assert reply["id"] != stream.response["id"]
    for item in reply["output"]:
        assert ITEM_ID[item["type"]].match(item["id"])


async def test_json_reply_lists_reasoning_before_its_message(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.9, §10.1: reasoning items precede the message they precede in the stream."""
    _, reply = await create(api, auth, "use tool")
    assert [i["type"] for i in reply["output"]] == [
        "reasoning",
        "function_call",
        "function_call_output",
        "message",
        "reasoning",
        "message",
    ]
    assert reply["status"] == "completed"
    assert message_texts(reply) == [("commentary", "Listed the files."), ("final_answer", USE_TOOL_ANSWER)]
    _, hello = await create(api, auth, "hello")
    assert [i["type"] for i in hello["output"]] == ["reasoning", "message"]


async def test_json_reply_for_failed_turn_is_200_with_error(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.9, §1.7: a failed turn is HTTP 200 with status failed and error."""
    _, reply = await create(api, auth, "fail early")
    assert reply["status"] == "failed"
    assert reply["error"] == {"code": "agent_error", "message": "Provider authentication failed"}


async def test_final_only_answer_is_one_delta_in_the_final_message(api: TestClient, auth: dict[str, str]) -> None:
    """§4.2, W-3.15: an unstreamed final answer arrives as one delta in the final message item."""
    result = await stream_response(api, auth, "final only")
    deltas = [e["delta"] for e in result.events if e["type"] == "response.output_text.delta"]
    assert "".join(deltas) == "Streamed part. Unstreamed rest."
    assert deltas[-1] == "Unstreamed rest."
    assert message_texts(result.response) == [("final_answer", "Streamed part. Unstreamed rest.")]


async def test_hidden_tool_is_not_shown_and_tool_error_still_has_output(api: TestClient, auth: dict[str, str]) -> None:
    """§4.2: `_`-prefixed tools are not shown; a failed tool still gets its completed output item."""
    result = await stream_response(api, auth, "hidden tool")
    assert b"_internal" not in result.raw
    fc, fco, message = result.response["output"]
    assert fc["name"] == "read_file" and fco["output"] == "hi" and fco["status"] == "completed"
    assert message["content"][0]["text"] == "Read it."


async def test_tool_output_is_truncated_per_config(make_api: Any, auth: dict[str, str]) -> None:
    """W-4.6, §12: api_server.responses.tool_output_max_chars cuts outputs with …[truncated N chars]."""
    api = await make_api(config={"api_server": {"responses": {"tool_output_max_chars": 4}}})
    result = await stream_response(api, auth, "use tool")
    fco = next(i for i in result.response["output"] if i["type"] == "function_call_output")
    assert fco["output"] == "READ…[truncated 10 chars]"


async def test_post_replies_carry_session_and_run_headers(api: TestClient, auth: dict[str, str]) -> None:
    """§4.7, §1.6: stream, JSON and background replies carry X-Hermes-Session-Id and X-Hermes-Run-Id (run_ + 32 hex)."""
    stream = await stream_response(api, auth, "hello")
    json_headers, _ = await create(api, auth, "hello")
    background_headers, background = await create(api, auth, "hello", background=True)
    run_ids = [h["X-Hermes-Run-Id"] for h in (stream.headers, json_headers, background_headers)]
    assert all(RUN_ID.match(r) for r in run_ids)
    assert len(set(run_ids)) == 3
    for headers in (stream.headers, json_headers, background_headers):
        assert headers["X-Hermes-Session-Id"]
        assert "X-Hermes-Session-Key" not in headers
    await poll_status(api, auth, background["id"], {"completed"})
    logged = {e["turn_id"]: e["session_id"] for e in executions(api.home)}  # type: ignore[attr-defined]
    assert logged == {
        h["X-Hermes-Run-Id"]: h["X-Hermes-Session-Id"] for h in (stream.headers, json_headers, background_headers)
    }


async def test_model_is_echoed_or_defaults_to_the_advertised_name(api: TestClient, auth: dict[str, str]) -> None:
    """§4.5: `model` is the request's model, or the advertised name when absent."""
    _, named = await create(api, auth, "hello", model="my-frontend-model")
    assert named["model"] == "my-frontend-model"
    async with api.post(RESPONSES, json={"input": "hello"}, headers=auth) as resp:
        reply = json.loads(await resp.text())
    assert reply["model"] == "hermes-agent"


@pytest.mark.parametrize(
    ("value", "streamed"), [("true", True), ("1", True), ("yes", True), ("false", False), ("0", False), ("no", False)]
)
async def test_boolean_strings_are_accepted(api: TestClient, auth: dict[str, str], value: str, streamed: bool) -> None:
    """§1.10: stream/store/background accept "true"/"false"/"1"/"0"/"yes"/"no"."""
    async with api.post(RESPONSES, json={"input": "hello", "stream": value, "store": value}, headers=auth) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/event-stream" if streamed else "application/json")
        await resp.read()


async def test_invalid_boolean_is_rejected(api: TestClient, auth: dict[str, str]) -> None:
    """§1.10: any other value → 400 invalid_parameter naming the field."""
    error = await rejected(api, auth, {"input": "hello", "stream": "maybe"})
    assert (error["code"], error["param"]) == ("invalid_parameter", "stream")


async def test_request_tools_are_echoed_and_never_executed(api: TestClient, auth: dict[str, str]) -> None:
    """§4.1: tools, tool_choice, parallel_tool_calls are echoed on the Response object; with `tool_choice: "none"` the
    declared function is not offered (§15.3 offers it otherwise)."""
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}]
    result = await stream_response(api, auth, "hello", tools=tools, tool_choice="none", parallel_tool_calls=False)
    for event in (result.events[0], result.terminal):
        # §16: an echoed function tool carries every FunctionTool field (description null, strict as OpenAI defaults)
        assert event["response"]["tools"] == [{**tools[0], "description": None, "strict": True}]
        assert event["response"]["tool_choice"] == "none"
        assert event["response"]["parallel_tool_calls"] is False
    assert [i["type"] for i in result.response["output"]] == ["reasoning", "message"]
    assert not [e for e in result.events if "response" not in e and "get_weather" in json.dumps(e)]
