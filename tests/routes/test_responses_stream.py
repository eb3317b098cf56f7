"""Responses streams, event by event: the order of events of each scripted turn, its first events, how an
incomplete, failed or cancelled turn closes its items (WIRE.md §4.1-4.4, §2; W-4.1, W-4.2, W-4.8, W-2.x).

Every request goes through the plugin's startup hook, the real middlewares, the SQLite store and the
scripted runtime (tests/scripts/chat.yaml); nothing on the server side is mocked. Shared helpers:
tests/routes/responses_helpers.py.
"""

from __future__ import annotations

import asyncio
import json
import re

from aiohttp.test_utils import TestClient

from tests.helpers import (
    DEFAULT_ANSWER,
    EXHAUST_SUMMARY,
    RESPONSE_ID,
    RESPONSES,
    USE_TOOL_ANSWER,
    read_until,
)

from .responses_helpers import (
    HEAD,
    USE_TOOL_SUMMARY,
    ResponseStream,
    check_responses_framing,
    first_id,
    get_stream,
    message_texts,
    snapshot,
    stream_response,
)

DELTAS = ("response.reasoning_summary_text.delta", "response.output_text.delta")
REASONING_BURST = [
    "response.output_item.added",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_text.delta+",
    "response.reasoning_summary_text.done",
    "response.reasoning_summary_part.done",
    "response.output_item.done",
]
MESSAGE = [
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta+",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
]
TOOL_PAIR = [
    "response.output_item.added",
    "response.function_call_arguments.done",
    "response.output_item.done",
    "response.output_item.added",
    "response.output_item.done",
]
ITEM_LIFECYCLE = ("response.output_item.added", "response.output_item.done")


def collapsed(names: list[str]) -> list[str]:
    """Event names with each run of one delta kind collapsed into `<name>+` (delta boundaries may vary, §2.2)."""
    out: list[str] = []
    for name in names:
        if name in DELTAS:
            if out and out[-1] == name + "+":
                continue
            name += "+"
        out.append(name)
    return out


async def test_use_tool_stream_exact_event_order(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.1–W-4.8: reasoning burst, tool pair, commentary, second burst, message, completed — in that order."""
    result = await stream_response(api, auth, "use tool")
    assert collapsed(result.names) == [
        *HEAD,
        *REASONING_BURST,
        *TOOL_PAIR,
        "response.output_item.added",
        "response.output_item.done",  # commentary
        *REASONING_BURST,
        *MESSAGE,
        "response.completed",
    ]
    response = result.response
    assert response["status"] == "completed"
    assert response["error"] is None and response["incomplete_details"] is None
    assert response["usage"] == {
        "input_tokens": 42,
        "output_tokens": 17,
        "total_tokens": 59,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    rs1, fc, fco, commentary, rs2, message = response["output"]
    assert rs1["summary"] == [{"type": "summary_text", "text": USE_TOOL_SUMMARY[0]}]
    assert rs2["summary"] == [{"type": "summary_text", "text": USE_TOOL_SUMMARY[1]}]
    assert (fc["type"], fc["status"], fc["name"]) == ("function_call", "completed", "terminal")
    assert json.loads(fc["arguments"]) == {"command": "ls -la"}
    assert re.match(r"^call_[0-9a-f]{24}$", fc["call_id"])
    assert fco == {
        "id": fco["id"],
        "type": "function_call_output",
        "status": "completed",
        "call_id": fc["call_id"],
        "output": "README.md\nsrc/",
    }
    assert commentary["phase"] == "commentary" and commentary["status"] == "completed"
    assert commentary["content"] == [
        {"type": "output_text", "text": "Listed the files.", "annotations": [], "logprobs": []}
    ]
    assert message["phase"] == "final_answer"
    assert message["content"] == [{"type": "output_text", "text": USE_TOOL_ANSWER, "annotations": [], "logprobs": []}]
    deltas = "".join(e["delta"] for e in result.events if e["type"] == "response.output_text.delta")
    assert deltas == USE_TOOL_ANSWER
    for event in result.events:
        if event["type"] == "response.output_text.delta":
            assert event["content_index"] == 0 and event["logprobs"] == []
    assert result.raw.endswith(b"\n\n")
    for record in result.records:  # compact one-line JSON, raw UTF-8 (§2.2)
        assert record.data == json.dumps(record.json(), ensure_ascii=False, separators=(",", ":"))


async def test_first_events_are_created_then_in_progress(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.1: response.created seq 0 (in_progress, output [], usage null), then response.in_progress seq 1."""
    result = await stream_response(api, auth, "hello", metadata={"k": "v"}, instructions="Be brief.")
    created, in_progress = result.events[:2]
    response = created["response"]
    assert RESPONSE_ID.match(response["id"])
    assert response["status"] == "in_progress"
    assert response["object"] == "response"
    assert isinstance(response["created_at"], int)
    assert (response["background"], response["store"], response["model"]) == (False, True, "hermes-agent")
    assert response["metadata"] == {"k": "v"} and response["instructions"] == "Be brief."
    assert (response["tools"], response["tool_choice"], response["parallel_tool_calls"]) == ([], "auto", True)
    assert in_progress["response"] == {**response, "status": "in_progress"}
    assert result.response["id"] == response["id"]
    assert message_texts(result.response) == [("final_answer", DEFAULT_ANSWER)]


async def test_exhaust_stream_ends_incomplete_with_summary_as_final_answer(
    api: TestClient, auth: dict[str, str]
) -> None:
    """W-4.16, W-4.18, §4.4: response.incomplete, reason iteration_budget_exhausted, summary last message item."""
    result = await stream_response(api, auth, "exhaust")
    assert collapsed(result.names) == [*HEAD, *REASONING_BURST, *TOOL_PAIR, *MESSAGE, "response.incomplete"]
    response = result.response
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "iteration_budget_exhausted"}
    assert response["error"] is None
    assert response["usage"]["input_tokens"] == 90210 and response["usage"]["output_tokens"] == 4012
    last = response["output"][-1]
    assert (last["type"], last["status"], last["phase"]) == ("message", "completed", "final_answer")
    assert last["content"][0]["text"] == EXHAUST_SUMMARY
    assert message_texts(response) == [("final_answer", EXHAUST_SUMMARY)]
    fco = next(i for i in response["output"] if i["type"] == "function_call_output")
    assert fco["output"] == "41"


async def test_exhaust_while_tool_runs_closes_the_stopped_tool_before_the_open_summary_message(
    api: TestClient, auth: dict[str, str]
) -> None:
    """§4.4 (the stopped-tool exception), W-4.16, W-4.17, W-4.18: the budget runs out while the tool still runs and
    the summary is already streaming, so the summary's message item (index 1) was added after the function_call
    (index 0). The end of the turn closes the function_call, adds and closes its `[interrupted]` output right away
    (index 2, after the open message), then closes the message `completed` with `phase: final_answer`. Items never
    move: the terminal output, the stored object and the replay list fc, message, fco (output_index order), and the
    summary is the final answer although the stopped tool's output follows it (§4.2)."""
    result = await stream_response(api, auth, "exhaust while running")
    response = result.response
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "iteration_budget_exhausted"}
    item_events = [r.json() for r in result.records if r.event in ITEM_LIFECYCLE]
    assert [(e["type"].rsplit(".", 1)[-1], e["output_index"], e["item"]["type"]) for e in item_events] == [
        ("added", 0, "function_call"),
        ("added", 1, "message"),
        ("done", 0, "function_call"),
        ("added", 2, "function_call_output"),
        ("done", 2, "function_call_output"),
        ("done", 1, "message"),
    ]
    assert result.names[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.incomplete",
    ]
    assert [i["type"] for i in response["output"]] == ["function_call", "message", "function_call_output"]
    fc, message, fco = response["output"]
    assert fc["status"] == "completed"
    assert (fco["output"], fco["status"], fco["call_id"]) == ("[interrupted]", "completed", fc["call_id"])
    assert (message["status"], message["phase"]) == ("completed", "final_answer")
    assert message_texts(response) == [("final_answer", "Out of budget while the tests ran.")]
    assert (await snapshot(api, auth, response["id"]))["output"] == response["output"]
    assert (await get_stream(api, auth, response["id"])).events == result.events


async def test_fail_early_stream_ends_failed(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.8, §4.4: response.failed with error {code agent_error, message}, no output."""
    result = await stream_response(api, auth, "fail early")
    assert result.names == [*HEAD, "response.failed"]
    response = result.response
    assert response["status"] == "failed"
    assert response["error"] == {"code": "agent_error", "message": "Provider authentication failed"}
    assert response["incomplete_details"] is None
    assert response["output"] == []


async def test_fail_stream_keeps_diagnostic_message_completed(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.8, W-4.17, W-4.18: the diagnostic text is a completed message without final_answer, then failed."""
    result = await stream_response(api, auth, "fail")
    assert collapsed(result.names) == [*HEAD, *REASONING_BURST, *MESSAGE, "response.failed"]
    response = result.response
    assert response["error"] == {"code": "agent_error", "message": "Provider authentication failed"}
    reasoning, message = response["output"]
    assert reasoning["summary"][0]["text"] == "Trying the provider."
    assert message["status"] == "completed"
    assert "phase" not in message
    assert message["content"][0]["text"] == "Diagnostic: "


async def test_fail_while_tool_runs_closes_tool_before_failed(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.17: a tool running at the failure: fc completed and fco [interrupted] before response.failed."""
    result = await stream_response(api, auth, "fail while running")
    assert result.names == [*HEAD, *TOOL_PAIR, "response.failed"]
    fc, fco = result.response["output"]
    assert fc["status"] == "completed"
    assert fco["output"] == "[interrupted]" and fco["status"] == "completed" and fco["call_id"] == fc["call_id"]
    assert result.response["error"] == {"code": "agent_error", "message": "Provider connection reset"}


async def test_background_stream_cancel_of_running_tool(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.13, W-4.17: cancel of a background stream → fc completed, fco [interrupted], response.cancelled."""
    body = {"model": "hermes-agent", "input": "hang", "stream": True, "background": True}
    async with api.post(RESPONSES, json=body, headers=auth) as resp:
        assert resp.status == 200
        raw = await read_until(resp, b"response.function_call_arguments.done")
        response_id = first_id(raw)
        async with api.post(f"{RESPONSES}/{response_id}/cancel", headers=auth) as cancel:
            assert cancel.status == 200, await cancel.text()
            cancelled = await cancel.json()
        raw += await asyncio.wait_for(resp.content.read(), 10)
        result = ResponseStream(resp.status, resp.headers, raw)
    check_responses_framing(result)
    assert collapsed(result.names) == [*HEAD, *REASONING_BURST, *TOOL_PAIR, "response.cancelled"]
    response = result.response
    assert response["status"] == "cancelled"
    assert response["error"] is None and response["incomplete_details"] is None
    rs, fc, fco = response["output"]
    assert rs["status"] == "completed"
    assert fc["status"] == "completed" and fc["name"] == "terminal"
    assert fco == {
        "id": fco["id"],
        "type": "function_call_output",
        "status": "completed",
        "call_id": fc["call_id"],
        "output": "[interrupted]",
    }
    assert cancelled["status"] == "cancelled"
    assert cancelled == response
