"""The Responses API through HTTP against the real app in-process (WIRE.md §4, §2, §10; checklist W-4.x).

Every request goes through the plugin's startup hook, the real middlewares, the SQLite store and the
scripted runtime (tests/scripts/chat.yaml); nothing on the server side is mocked.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient
from multidict import CIMultiDictProxy

from hermes_api_plugin.keys import TURNS
from tests.helpers import (
    DEFAULT_ANSWER,
    EXHAUST_SUMMARY,
    ITEM_ID,
    REASONING_BURST,
    RESPONSE_ID,
    RESPONSE_KEYS,
    RESPONSE_TERMINALS,
    RESPONSES,
    RUN_ID,
    TOOL_TYPES,
    USAGE_KEYS,
    USE_TOOL_ANSWER,
    USE_TOOL_REASONING,
    Reply,
    assert_error_envelope,
    complete_records,
    execution_for,
    fetch,
    read_until,
    wait_for_async,
)
from tests.live import executions

DELTAS = ("response.reasoning_summary_text.delta", "response.output_text.delta")

USE_TOOL_SUMMARY = tuple(USE_TOOL_REASONING.split("\n\n"))  # one summary part per paragraph

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
HEAD = ["response.created", "response.in_progress"]
ITEM_LIFECYCLE = ("response.output_item.added", "response.output_item.done")


# -- helpers ------------------------------------------------------------------------------------------------


class ResponseStream(Reply):
    """A Responses stream: its named events, the terminal event and the final Response."""

    @property
    def names(self) -> list[str]:
        return [r.event or "" for r in self.records]

    @property
    def terminal(self) -> dict[str, Any]:
        return self.events[-1]

    @property
    def response(self) -> dict[str, Any]:
        return self.terminal["response"]


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


def check_responses_framing(result: ResponseStream) -> None:
    """Rules of every Responses stream: W-2.x framing, W-4.1, W-4.2, W-4.3, W-4.8."""
    assert result.headers["Content-Type"].startswith("text/event-stream")
    assert "Content-Length" not in result.headers
    assert b"\nid:" not in result.raw and not result.raw.startswith(b"id:"), "no id: lines on Responses streams"
    assert b"retry:" not in result.raw
    assert b"[DONE]" not in result.raw
    assert result.records, result.raw
    for record in result.records:
        assert record.id is None
        assert record.event is not None, record
        assert record.json()["type"] == record.event
    events = result.events
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert not any(r.event.startswith("hermes.") or r.event == "error" for r in result.records)  # type: ignore[union-attr]
    created, in_progress = events[0], events[1]
    assert created["type"] == "response.created" and created["sequence_number"] == 0
    assert created["response"]["output"] == [] and created["response"]["usage"] is None
    assert created["response"]["status"] in ("in_progress", "queued")
    assert in_progress["type"] == "response.in_progress" and in_progress["sequence_number"] == 1
    assert in_progress["response"]["status"] == "in_progress" and in_progress["response"]["output"] == []
    for event in (created, in_progress, events[-1]):
        assert set(event["response"]) == RESPONSE_KEYS
    assert len({e["response"]["id"] for e in events if "response" in e}) == 1
    assert sum(1 for e in events if e["type"] in RESPONSE_TERMINALS) == 1
    assert events[-1]["type"] in RESPONSE_TERMINALS
    # W-4.3: added precedes every reference, indexes dense from 0.
    added: dict[int, str] = {}
    done: dict[int, dict[str, Any]] = {}
    for event in events:
        if "output_index" not in event:
            continue
        index = event["output_index"]
        if event["type"] == "response.output_item.added":
            assert index == len(added)
            added[index] = event["item"]["id"]
        else:
            assert index in added, event
            assert event.get("item_id", added[index]) == added[index]
            if event["type"] == "response.output_item.done":
                assert event["item"]["id"] == added[index]
                done[index] = event["item"]
    # W-4.8: the terminal output is exactly the done items in index order; usage has five keys.
    response = events[-1]["response"]
    assert response["output"] == [done[i] for i in sorted(done)]
    assert set(done) == set(added)
    assert set(response["usage"]) == USAGE_KEYS
    for item in response["output"]:
        assert ITEM_ID[item["type"]].match(item["id"]), item


async def read_stream(resp: ClientResponse) -> ResponseStream:
    return ResponseStream(resp.status, resp.headers, await asyncio.wait_for(resp.read(), 30))


async def stream_response(
    api: TestClient, auth: dict[str, str], text: Any = None, *, headers: dict[str, str] | None = None, **body: Any
) -> ResponseStream:
    payload = {"model": "hermes-agent", "stream": True, **body}
    if text is not None:
        payload["input"] = text
    async with api.post(RESPONSES, json=payload, headers={**auth, **(headers or {})}) as resp:
        assert resp.status == 200, await resp.text()
        result = await read_stream(resp)
    check_responses_framing(result)
    assert RUN_ID.match(result.headers["X-Hermes-Run-Id"])
    return result


async def create(
    api: TestClient, auth: dict[str, str], text: Any = None, *, headers: dict[str, str] | None = None, **body: Any
) -> tuple[CIMultiDictProxy[str], dict[str, Any]]:
    """A non-streaming POST /v1/responses; 200 with a JSON Response object."""
    payload = {"model": "hermes-agent", **body}
    if text is not None:
        payload["input"] = text
    async with api.post(RESPONSES, json=payload, headers={**auth, **(headers or {})}) as resp:
        assert resp.status == 200, await resp.text()
        assert resp.headers["Content-Type"] == "application/json; charset=utf-8"
        reply = json.loads(await asyncio.wait_for(resp.text(), 30))
        response_headers = resp.headers
    assert set(reply) == RESPONSE_KEYS, reply
    assert RUN_ID.match(response_headers["X-Hermes-Run-Id"])
    return response_headers, reply


async def rejected(
    api: TestClient,
    auth: dict[str, str],
    body: dict[str, Any],
    status: int = 400,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    return assert_error_envelope(
        await fetch(api, "POST", RESPONSES, json=body, headers={**auth, **(headers or {})}), status
    )


async def get_json(
    api: TestClient, auth: dict[str, str], path: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    async with api.get(path, headers={**auth, **(headers or {})}) as resp:
        return resp.status, await resp.json()


async def get_stream(
    api: TestClient, auth: dict[str, str], response_id: str, query: str = "", *, headers: dict[str, str] | None = None
) -> ResponseStream:
    """GET ?stream=true (a replay, or live events of a running response), read to its end."""
    async with api.get(f"{RESPONSES}/{response_id}?stream=true{query}", headers={**auth, **(headers or {})}) as resp:
        replay = await read_stream(resp)
    if replay.status == 200:
        assert replay.is_stream, replay.headers
    return replay


async def snapshot(api: TestClient, auth: dict[str, str], response_id: str) -> dict[str, Any]:
    """GET /v1/responses/{id}, which must answer 200."""
    status, body = await get_json(api, auth, f"{RESPONSES}/{response_id}")
    assert status == 200, body
    return body


async def poll_status(
    api: TestClient, auth: dict[str, str], response_id: str, wanted: set[str], timeout: float = 10.0
) -> dict[str, Any]:
    """The stored response as soon as its status is one of `wanted`."""
    return await wait_for_async(
        lambda: snapshot(api, auth, response_id),
        timeout,
        until=lambda body: body["status"] in wanted,
        what=f"a status in {sorted(wanted)}",
    )


def first_id(raw: bytes) -> str:
    """The response id in the first record (response.created) of a partly read stream."""
    return complete_records(raw)[0].json()["response"]["id"]  # type: ignore[no-any-return]


def history_of(execution: dict[str, Any]) -> list[tuple[Any, ...]]:
    """(role, text) per history message, plus tool call names / the tool_call_id where present."""
    out: list[tuple[Any, ...]] = []
    for m in execution["history"]:
        text = "".join(p.get("text", "") for p in m["content"])
        entry: tuple[Any, ...] = (m["role"], text)
        if m.get("tool_calls"):
            entry += (tuple(c["function"]["name"] for c in m["tool_calls"]),)
        if m.get("tool_call_id"):
            entry += ("tool_call_id",)
        out.append(entry)
    return out


def normalized(value: Any) -> Any:
    """A Response object with ids and timestamps blanked, for comparing two turns of the same input."""
    if isinstance(value, dict):
        return {k: ("<id>" if k in ("id", "call_id", "created_at") else normalized(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def message_texts(response: dict[str, Any]) -> list[tuple[str | None, str]]:
    return [(i.get("phase"), i["content"][0]["text"]) for i in response["output"] if i["type"] == "message"]


USE_TOOL_HISTORY = [
    ("user", "use tool"),
    ("assistant", "", ("terminal",)),
    ("tool", "README.md\nsrc/", "tool_call_id"),
    ("assistant", USE_TOOL_ANSWER),
]


# -- W-4.1, W-4.2, W-4.8, W-2.x: raw streams ------------------------------------------------------------------


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
    assert commentary["content"] == [{"type": "output_text", "text": "Listed the files.", "annotations": []}]
    assert message["phase"] == "final_answer"
    assert message["content"] == [{"type": "output_text", "text": USE_TOOL_ANSWER, "annotations": []}]
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


# -- W-4.9: non-streaming replies ----------------------------------------------------------------------------


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


# -- W-10.1, W-10.2, W-10.3, W-4.7: reasoning and commentary options ---------------------------------------


async def test_reasoning_disabled_removes_reasoning_items(api: TestClient, auth: dict[str, str]) -> None:
    """W-10.1: model_options.reasoning.enabled false → no reasoning items or events (stream, JSON, GET)."""
    options = {"reasoning": {"enabled": False}}
    result = await stream_response(api, auth, "use tool", model_options=options)
    assert b"reasoning_summary" not in result.raw and b'"type":"reasoning"' not in result.raw
    assert not any(r.event.startswith("response.reasoning") for r in result.records)  # type: ignore[union-attr]
    assert [i["type"] for i in result.response["output"]] == [
        "function_call",
        "function_call_output",
        "message",
        "message",
    ]
    _, reply = await create(api, auth, "use tool", model_options=options)
    assert all(i["type"] != "reasoning" for i in reply["output"])
    status, stored = await get_json(api, auth, f"{RESPONSES}/{reply['id']}")
    assert status == 200 and all(i["type"] != "reasoning" for i in stored["output"])
    logged = [e for e in executions(api.home) if e["input"]["content"][0]["text"] == "use tool"]  # type: ignore[attr-defined]
    assert [e["reasoning_enabled"] for e in logged] == [False, False]


async def test_reasoning_effort_reaches_the_agent(api: TestClient, auth: dict[str, str]) -> None:
    """W-10.2: Responses reasoning.effort reaches the turn; model_options.reasoning.effort wins over it."""
    await create(api, auth, "effort one", reasoning={"effort": "high", "summary": "auto"})
    await create(api, auth, "effort two", reasoning={"effort": "high"}, model_options={"reasoning": {"effort": "low"}})
    await create(api, auth, "effort three")
    assert execution_for(api, "effort one")["reasoning_effort"] == "high"
    assert execution_for(api, "effort two")["reasoning_effort"] == "low"
    assert execution_for(api, "effort three")["reasoning_effort"] is None


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"reasoning": {"effort": "enormous"}}, "reasoning.effort"),
        ({"model_options": {"reasoning": {"effort": "enormous"}}}, "model_options.reasoning.effort"),
    ],
)
async def test_invalid_reasoning_effort_is_rejected(
    api: TestClient, auth: dict[str, str], body: dict[str, Any], param: str
) -> None:
    """W-10.2: an unknown effort → 400 invalid_parameter; nothing runs."""
    error = await rejected(api, auth, {"input": "hello", **body})
    assert (error["type"], error["code"], error["param"]) == ("invalid_request_error", "invalid_parameter", param)
    assert executions(api.home) == []  # type: ignore[attr-defined]


async def test_show_reasoning_false_does_not_remove_reasoning(make_api: Any, auth: dict[str, str]) -> None:
    """W-10.3: display.show_reasoning false (global and api_server platform) keeps reasoning items."""
    api = await make_api(
        config={"display": {"show_reasoning": False, "platforms": {"api_server": {"show_reasoning": False}}}}
    )
    result = await stream_response(api, auth, "use tool")
    assert [i["type"] for i in result.response["output"]].count("reasoning") == 2


async def test_commentary_items_by_default(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.7: commentary is a completed message item with phase commentary, added and done back to back."""
    result = await stream_response(api, auth, "commentary")
    commentary = [
        e
        for e in result.events
        if e["type"].startswith("response.output_item") and e["item"].get("phase") == "commentary"
    ]
    assert [e["type"] for e in commentary] == ["response.output_item.added", "response.output_item.done"]
    assert commentary[0]["item"] == commentary[1]["item"]
    assert commentary[1]["sequence_number"] == commentary[0]["sequence_number"] + 1
    assert [i["type"] for i in result.response["output"]] == ["reasoning", "message", "reasoning", "message"]
    assert message_texts(result.response) == [("commentary", "Let me check something."), ("final_answer", "Checked.")]


@pytest.mark.parametrize(
    "display",
    [{"interim_assistant_messages": False}, {"platforms": {"api_server": {"interim_assistant_messages": False}}}],
    ids=["global", "api_server-platform"],
)
async def test_interim_messages_off_removes_commentary(
    make_api: Any, auth: dict[str, str], display: dict[str, Any]
) -> None:
    """W-4.7, §10.3: display(.platforms.api_server).interim_assistant_messages false → no commentary items."""
    api = await make_api(config={"display": display})
    result = await stream_response(api, auth, "use tool")
    assert b"Listed the files." not in result.raw
    assert b"commentary" not in result.raw
    assert message_texts(result.response) == [("final_answer", USE_TOOL_ANSWER)]
    _, reply = await create(api, auth, "commentary")
    assert message_texts(reply) == [("final_answer", "Checked.")]


async def test_platform_interim_setting_overrides_global(make_api: Any, auth: dict[str, str]) -> None:
    """§10.3: the api_server platform setting wins over display.interim_assistant_messages."""
    api = await make_api(
        config={
            "display": {
                "interim_assistant_messages": False,
                "platforms": {"api_server": {"interim_assistant_messages": True}},
            }
        }
    )
    _, reply = await create(api, auth, "commentary")
    assert message_texts(reply) == [("commentary", "Let me check something."), ("final_answer", "Checked.")]


# -- W-4.10, W-4.11: chaining, conversations, sessions -------------------------------------------------------


async def test_previous_response_id_continues_with_tool_history(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.10, §4.7: the chained turn sees the earlier input, the tool call, its result and the answer."""
    headers_one, first = await create(api, auth, "use tool")
    headers_two, second = await create(api, auth, "what next", previous_response_id=first["id"])
    assert second["previous_response_id"] == first["id"]
    assert headers_two["X-Hermes-Session-Id"] == headers_one["X-Hermes-Session-Id"]
    execution = execution_for(api, "what next")
    assert history_of(execution) == USE_TOOL_HISTORY
    call = execution["history"][1]["tool_calls"][0]
    fc = next(i for i in first["output"] if i["type"] == "function_call")
    assert call["id"] == fc["call_id"] == execution["history"][2]["tool_call_id"]
    assert json.loads(call["function"]["arguments"]) == {"command": "ls -la"}
    assert execution["session_id"] == headers_one["X-Hermes-Session-Id"]
    # A third link sees the whole chain.
    await create(api, auth, "and then", previous_response_id=second["id"])
    assert history_of(execution_for(api, "and then")) == [
        *USE_TOOL_HISTORY,
        ("user", "what next"),
        ("assistant", DEFAULT_ANSWER),
    ]


async def test_unknown_previous_response_id_is_404(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.10: unknown previous_response_id → 404 response_not_found, param previous_response_id."""
    error = await rejected(api, auth, {"input": "hi", "previous_response_id": "resp_" + "0" * 32}, 404)
    assert (error["type"], error["code"], error["param"]) == (
        "not_found_error",
        "response_not_found",
        "previous_response_id",
    )
    error = await rejected(api, auth, {"input": "hi", "stream": True, "previous_response_id": "resp_nope"}, 404)
    assert error["code"] == "response_not_found"
    assert executions(api.home) == []  # type: ignore[attr-defined]


async def test_previous_response_id_with_conversation_conflicts(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.10: both previous_response_id and conversation → 400 conflicting_parameters."""
    _, first = await create(api, auth, "hello")
    for conversation in ("proj", {"id": "proj"}):
        error = await rejected(
            api, auth, {"input": "hi", "previous_response_id": first["id"], "conversation": conversation}
        )
        assert (error["type"], error["code"]) == ("invalid_request_error", "conflicting_parameters")


async def test_conversation_name_continues_across_three_turns(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.10, §4.7 example: each request with the same conversation continues the previous one."""
    h1, one = await create(api, auth, "conv hello", conversation="my-project")
    h2, two = await create(api, auth, "conv src", conversation={"id": "my-project"})
    stream = await stream_response(api, auth, "conv tests", conversation="my-project")
    three = stream.response
    assert one["previous_response_id"] is None
    assert two["previous_response_id"] == one["id"]
    assert three["previous_response_id"] == two["id"]
    assert h1["X-Hermes-Session-Id"] == h2["X-Hermes-Session-Id"] == stream.headers["X-Hermes-Session-Id"]
    assert history_of(execution_for(api, "conv hello")) == []
    assert history_of(execution_for(api, "conv src")) == [("user", "conv hello"), ("assistant", DEFAULT_ANSWER)]
    assert history_of(execution_for(api, "conv tests")) == [
        ("user", "conv hello"),
        ("assistant", DEFAULT_ANSWER),
        ("user", "conv src"),
        ("assistant", DEFAULT_ANSWER),
    ]


async def test_store_false_is_not_retrievable_and_does_not_advance_conversation(
    api: TestClient, auth: dict[str, str]
) -> None:
    """W-4.10, §4.1: store:false → GET 404, not chainable, and the conversation name stays where it was."""
    _, one = await create(api, auth, "unstored one", conversation="keep")
    _, two = await create(api, auth, "unstored two", conversation="keep", store=False)
    assert two["store"] is False
    assert two["previous_response_id"] == one["id"]
    assert history_of(execution_for(api, "unstored two")) == [("user", "unstored one"), ("assistant", DEFAULT_ANSWER)]
    assert_error_envelope(await fetch(api, "GET", f"{RESPONSES}/{two['id']}", headers=auth), 404, "response_not_found")
    error = await rejected(api, auth, {"input": "x", "previous_response_id": two["id"]}, 404)
    assert error["param"] == "previous_response_id"
    _, three = await create(api, auth, "unstored three", conversation="keep")
    assert three["previous_response_id"] == one["id"]
    assert history_of(execution_for(api, "unstored three")) == [("user", "unstored one"), ("assistant", DEFAULT_ANSWER)]


async def test_store_false_stream_is_not_retrievable(api: TestClient, auth: dict[str, str]) -> None:
    """§4.1: store:false on a stream: the turn runs, nothing is stored."""
    result = await stream_response(api, auth, "hello", store=False)
    assert result.response["store"] is False
    status, _ = await get_json(api, auth, f"{RESPONSES}/{result.response['id']}")
    assert status == 404


async def test_instructions_are_inherited_along_a_chain_and_replaced_when_sent(
    api: TestClient, auth: dict[str, str]
) -> None:
    """§4.1, §4.5: instructions apply to chained turns without their own; a sent value replaces them."""
    _, one = await create(api, auth, "instr one", instructions="Be terse.")
    _, two = await create(api, auth, "instr two", previous_response_id=one["id"])
    _, three = await create(api, auth, "instr three", previous_response_id=two["id"], instructions="Be verbose.")
    _, four = await create(api, auth, "instr four", previous_response_id=three["id"])
    assert execution_for(api, "instr one")["system_prompt"] == "Be terse."
    assert execution_for(api, "instr two")["system_prompt"] == "Be terse."
    assert execution_for(api, "instr three")["system_prompt"] == "Be verbose."
    assert execution_for(api, "instr four")["system_prompt"] == "Be verbose."
    assert [r["instructions"] for r in (one, two, three, four)] == [
        "Be terse.",
        "Be terse.",
        "Be verbose.",
        "Be verbose.",
    ]
    _, plain = await create(api, auth, "instr none")
    assert plain["instructions"] is None
    assert execution_for(api, "instr none")["system_prompt"] is None


async def test_system_and_developer_input_items_extend_the_system_prompt(api: TestClient, auth: dict[str, str]) -> None:
    """§4.1: system/developer items are appended to the ephemeral system prompt after instructions."""
    items = [
        {"role": "system", "content": "Use metric."},
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "No emoji."}]},
        {"role": "user", "content": "sys items"},
    ]
    await create(api, auth, items, instructions="Be terse.")
    execution = execution_for(api, "sys items")
    assert execution["system_prompt"] == "Be terse.\nUse metric.\nNo emoji."
    assert execution["history"] == []


async def test_conversation_history_replaces_stored_history(api: TestClient, auth: dict[str, str]) -> None:
    """§4.1, §4.7: conversation_history replaces the chain's history; the session stays the chain's."""
    headers_one, one = await create(api, auth, "use tool")
    history = [{"role": "user", "content": "alt question"}, {"role": "assistant", "content": "alt answer"}]
    headers_two, two = await create(
        api, auth, "explicit history", previous_response_id=one["id"], conversation_history=history
    )
    assert history_of(execution_for(api, "explicit history")) == [("user", "alt question"), ("assistant", "alt answer")]
    assert headers_two["X-Hermes-Session-Id"] == headers_one["X-Hermes-Session-Id"]
    assert two["previous_response_id"] == one["id"]
    error = await rejected(api, auth, {"input": "x", "conversation_history": [{"role": "user"}]})
    assert (error["code"], error["param"]) == ("invalid_parameter", "conversation_history[0]")


@pytest.mark.parametrize(("truncation", "kept"), [("auto", 100), ("disabled", 120), (None, 120)])
async def test_truncation_auto_keeps_the_last_100_messages(
    api: TestClient, auth: dict[str, str], truncation: str | None, kept: int
) -> None:
    """§4.1: truncation auto is accepted and keeps the most recent 100 history messages; disabled keeps all."""
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(120)]
    body: dict[str, Any] = {"conversation_history": history}
    if truncation is not None:
        body["truncation"] = truncation
    _, reply = await create(api, auth, "truncation check", **body)
    assert reply["status"] == "completed"
    texts = [t for _, t in history_of(execution_for(api, "truncation check"))]
    assert texts == [f"m{i}" for i in range(120 - kept, 120)]


async def test_invalid_truncation_is_rejected(api: TestClient, auth: dict[str, str]) -> None:
    """§4.1: truncation other than auto/disabled → 400 invalid_parameter."""
    error = await rejected(api, auth, {"input": "hi", "truncation": "sometimes"})
    assert (error["code"], error["param"]) == ("invalid_parameter", "truncation")


async def test_session_key_continues_declared_session(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.11, §4.7 row 4: X-Hermes-Session-Key continues the key's session; the header is echoed."""
    key = {"X-Hermes-Session-Key": "agent:main:telegram:dm:42"}
    h1, _ = await create(api, auth, "key one", headers=key)
    result = await stream_response(api, auth, "key two", headers=key)
    assert h1["X-Hermes-Session-Key"] == key["X-Hermes-Session-Key"]
    assert result.headers["X-Hermes-Session-Key"] == key["X-Hermes-Session-Key"]
    assert result.headers["X-Hermes-Session-Id"] == h1["X-Hermes-Session-Id"]
    assert history_of(execution_for(api, "key one")) == []
    assert history_of(execution_for(api, "key two")) == [("user", "key one"), ("assistant", DEFAULT_ANSWER)]
    assert execution_for(api, "key two")["session_id"] == h1["X-Hermes-Session-Id"]


async def test_explicit_chain_wins_over_session_key_and_keeps_binding(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.11: previous_response_id wins over the key and does not rebind it; the key still continues its own."""
    key = {"X-Hermes-Session-Key": "bound-key"}
    key_headers, _ = await create(api, auth, "bound one", headers=key)
    other_headers, other = await create(api, auth, "other chain")
    chained_headers, _ = await create(api, auth, "explicit wins", headers=key, previous_response_id=other["id"])
    assert chained_headers["X-Hermes-Session-Id"] == other_headers["X-Hermes-Session-Id"]
    assert chained_headers["X-Hermes-Session-Id"] != key_headers["X-Hermes-Session-Id"]
    assert history_of(execution_for(api, "explicit wins")) == [("user", "other chain"), ("assistant", DEFAULT_ANSWER)]
    third_headers, _ = await create(api, auth, "bound again", headers=key)
    assert third_headers["X-Hermes-Session-Id"] == key_headers["X-Hermes-Session-Id"]
    assert history_of(execution_for(api, "bound again")) == [("user", "bound one"), ("assistant", DEFAULT_ANSWER)]


async def test_conversation_wins_over_session_key_and_keeps_binding(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.11, §4.7 rows 2–3: a conversation (new or known) wins over the key and leaves its binding alone."""
    key = {"X-Hermes-Session-Key": "conv-key"}
    key_headers, _ = await create(api, auth, "ck one", headers=key)
    conv_headers, _ = await create(api, auth, "ck conv", headers=key, conversation="ck-name")
    assert conv_headers["X-Hermes-Session-Id"] != key_headers["X-Hermes-Session-Id"]
    assert history_of(execution_for(api, "ck conv")) == []
    again_headers, _ = await create(api, auth, "ck two", headers=key)
    assert again_headers["X-Hermes-Session-Id"] == key_headers["X-Hermes-Session-Id"]
    assert history_of(execution_for(api, "ck two")) == [("user", "ck one"), ("assistant", DEFAULT_ANSWER)]


async def test_responses_ignore_x_hermes_session_id_request_header(api: TestClient, auth: dict[str, str]) -> None:
    """§4.7: /v1/responses does not read X-Hermes-Session-Id; it reports the effective session instead."""
    headers, _ = await create(api, auth, "sid ignored", headers={"X-Hermes-Session-Id": "client-chosen"})
    assert headers["X-Hermes-Session-Id"] != "client-chosen"
    assert execution_for(api, "sid ignored")["session_id"] == headers["X-Hermes-Session-Id"]


async def test_chaining_from_a_running_response_is_queued(api: TestClient, auth: dict[str, str]) -> None:
    """§4.7, W-4.1: a request chained on a still-running response is created `queued` and runs after it settles."""
    _, running = await create(api, auth, "hang", background=True)
    await read_tool_start(api, auth, running["id"])
    body = {"model": "hermes-agent", "input": "next step", "stream": True, "previous_response_id": running["id"]}
    async with api.post(RESPONSES, json=body, headers=auth) as resp:
        assert resp.status == 200
        raw = await read_until(resp, b"\n\n")
        first = complete_records(raw)[0].json()
        assert first["response"]["status"] == "queued"
        queued_id = first["response"]["id"]
        status, snapshot = await get_json(api, auth, f"{RESPONSES}/{queued_id}")
        assert status == 200 and snapshot["status"] == "queued"
        assert b"response.in_progress" not in raw
        async with api.post(f"{RESPONSES}/{running['id']}/cancel", headers=auth) as cancel:
            assert cancel.status == 200
            assert (await cancel.json())["status"] == "cancelled"
        raw += await asyncio.wait_for(resp.content.read(), 10)
        result = ResponseStream(resp.status, resp.headers, raw)
    check_responses_framing(result)
    assert result.names[:2] == HEAD
    assert result.response["status"] == "completed"
    history = history_of(execution_for(api, "next step"))
    assert history[0] == ("user", "hang")
    assert ("tool", "[interrupted]", "tool_call_id") in history


async def read_tool_start(api: TestClient, auth: dict[str, str], response_id: str) -> None:
    """Wait until a background response's tool has started (its journal shows the function_call)."""
    started = await wait_for_async(
        lambda: snapshot(api, auth, response_id),  # the burst is done once the tool started
        until=lambda body: any(i["type"] == "reasoning" for i in body["output"]),
        what="the tool start",
    )
    assert started["status"] == "in_progress"


# -- W-4.15, §4.1: input items -----------------------------------------------------------------------------


async def test_input_items_message_forms_build_history(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.15: message items (with and without type), assistant messages and plain strings become history."""
    items = [
        "plain string first",
        {"role": "assistant", "content": "assistant without type"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "typed user"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "typed assistant"}]},
        {"type": "reasoning", "id": "rs_x", "summary": [{"type": "summary_text", "text": "skip me"}]},
        {"role": "user", "content": "items last"},
    ]
    _, reply = await create(api, auth, items)
    assert reply["status"] == "completed"
    execution = execution_for(api, "items last")
    assert history_of(execution) == [
        ("user", "plain string first"),
        ("assistant", "assistant without type"),
        ("user", "typed user"),
        ("assistant", "typed assistant"),
    ]
    assert "skip me" not in json.dumps(execution)


async def test_input_function_call_items_become_tool_history(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.15: function_call + function_call_output input items are history (never executed)."""
    items = [
        {"role": "user", "content": "earlier"},
        {"type": "function_call", "call_id": "call_client_1", "name": "lookup", "arguments": '{"q":1}'},
        {"type": "function_call_output", "call_id": "call_client_1", "output": "client result"},
        {"role": "assistant", "content": "done earlier"},
        {"role": "user", "content": "fc history"},
    ]
    _, reply = await create(api, auth, items)
    assert all(i.get("name") != "lookup" for i in reply["output"])
    execution = execution_for(api, "fc history")
    assert history_of(execution) == [
        ("user", "earlier"),
        ("assistant", "", ("lookup",)),
        ("tool", "client result", "tool_call_id"),
        ("assistant", "done earlier"),
    ]
    assert execution["history"][1]["tool_calls"][0]["id"] == "call_client_1"
    assert execution["history"][2]["tool_call_id"] == "call_client_1"


async def test_function_call_output_of_server_tool_uses_stored_output(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.19: a client function_call_output for a call_id this server ran reaches the agent as the stored output."""
    _, first = await create(api, auth, "use tool")
    fc = next(i for i in first["output"] if i["type"] == "function_call")
    items = [
        {"role": "user", "content": "use tool"},
        {"type": "function_call", "call_id": fc["call_id"], "name": fc["name"], "arguments": fc["arguments"]},
        {
            "type": "function_call_output",
            "call_id": fc["call_id"],
            "output": "Error: tool execution is not supported by this client",
        },
        {"role": "user", "content": "vercel follow up"},
    ]
    await create(api, auth, items)
    execution = execution_for(api, "vercel follow up")
    tool_messages = [m for m in execution["history"] if m["role"] == "tool"]
    assert len(tool_messages) == 1
    assert tool_messages[0]["content"] == [{"type": "text", "text": "README.md\nsrc/"}]
    assert tool_messages[0]["tool_call_id"] == fc["call_id"]
    assert "not supported by this client" not in json.dumps(execution)


async def test_item_reference_resolves_stored_output_items(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.15: item_reference to stored output items (message, function_call, output, reasoning) resolves."""
    _, first = await create(api, auth, "use tool")
    rs1, fc, fco, commentary, rs2, message = first["output"]
    items = [
        {"role": "user", "content": "use tool"},
        {"type": "item_reference", "id": rs1["id"]},
        {"type": "item_reference", "id": fc["id"]},
        {"type": "item_reference", "id": fco["id"]},
        {"type": "item_reference", "id": commentary["id"]},
        {"type": "item_reference", "id": rs2["id"]},
        {"type": "item_reference", "id": message["id"]},
        "ref check",
    ]
    _, reply = await create(api, auth, items)
    assert reply["status"] == "completed"
    execution = execution_for(api, "ref check")
    assert history_of(execution) == [
        ("user", "use tool"),
        ("assistant", "", ("terminal",)),
        ("tool", "README.md\nsrc/", "tool_call_id"),
        ("assistant", "Listed the files."),
        ("assistant", USE_TOOL_ANSWER),
    ]
    assert execution["history"][1]["tool_calls"][0]["id"] == fc["call_id"] == execution["history"][2]["tool_call_id"]
    assert USE_TOOL_SUMMARY[0] not in json.dumps(execution["history"]), "reasoning references are skipped"


async def test_item_reference_to_stored_input_item_resolves(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.15: an input item id listed by input_items can be referenced later."""
    _, first = await create(api, auth, "referenced input")
    status, listing = await get_json(api, auth, f"{RESPONSES}/{first['id']}/input_items")
    assert status == 200
    await create(api, auth, [{"type": "item_reference", "id": listing["data"][0]["id"]}, "input ref check"])
    assert history_of(execution_for(api, "input ref check")) == [("user", "referenced input")]


async def test_unknown_item_reference_is_rejected(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.15: unknown item_reference → 400 item_reference_not_found, param input[i]."""
    error = await rejected(api, auth, {"input": ["first", {"type": "item_reference", "id": "msg_" + "0" * 24}, "last"]})
    assert (error["type"], error["code"], error["param"]) == (
        "invalid_request_error",
        "item_reference_not_found",
        "input[1]",
    )
    assert executions(api.home) == []  # type: ignore[attr-defined]


async def test_unknown_input_item_type_is_rejected(api: TestClient, auth: dict[str, str]) -> None:
    """§4.1: anything else → 400 invalid_parameter, param input[i]."""
    error = await rejected(api, auth, {"input": [{"type": "computer_call", "id": "x"}, "last"]})
    assert (error["code"], error["param"]) == ("invalid_parameter", "input[0]")
    error = await rejected(api, auth, {"input": ["first", 42, "last"]})
    assert (error["code"], error["param"]) == ("invalid_parameter", "input[1]")


@pytest.mark.parametrize(
    "input_value",
    [
        "",
        [],
        "   ",
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        [{"role": "user", "content": "q"}, {"type": "function_call_output", "call_id": "call_x", "output": "o"}],
        [{"role": "system", "content": "only system"}],
        [{"type": "reasoning", "summary": []}],
        [{"role": "user", "content": [{"type": "input_text", "text": "  "}]}],
    ],
    ids=[
        "empty-string",
        "empty-list",
        "blank-string",
        "assistant-last",
        "tool-output-last",
        "system-only",
        "reasoning-only",
        "blank-user-part",
    ],
)
async def test_turn_input_must_be_a_user_message(api: TestClient, auth: dict[str, str], input_value: Any) -> None:
    """§4.1, §1.7: the last item must be a user message with text or an image → else 400 missing_user_message."""
    error = await rejected(api, auth, {"input": input_value})
    assert (error["type"], error["code"], error["param"]) == ("invalid_request_error", "missing_user_message", "input")
    assert executions(api.home) == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("body", [{}, {"input": None}], ids=["absent", "null"])
async def test_missing_input_is_missing_required_parameter(
    api: TestClient, auth: dict[str, str], body: dict[str, Any]
) -> None:
    """§4.1: input missing or null → 400 missing_required_parameter, param input."""
    error = await rejected(api, auth, {"model": "hermes-agent", **body})
    assert (error["code"], error["param"]) == ("missing_required_parameter", "input")


async def test_background_without_store_is_rejected(api: TestClient, auth: dict[str, str]) -> None:
    """§4.1, §1.7: background:true with store:false → 400 invalid_parameter."""
    error = await rejected(api, auth, {"input": "hi", "background": True, "store": False})
    assert (error["code"], error["param"]) == ("invalid_parameter", "background")


async def test_input_image_reaches_the_agent(api: TestClient, auth: dict[str, str]) -> None:
    """§4.1, W-9.1: an input_image part reaches the agent as an image with detail preserved."""
    png = "data:image/png;base64,iVBORw0KGgo="
    items = [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "describe"},
                {"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "low"},
                {"type": "input_image", "image_url": png},
            ],
        }
    ]
    await create(api, auth, items)
    execution = execution_for(api, "describe")
    assert execution["input"]["content"] == [
        {"type": "text", "text": "describe"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "low"}},
        {"type": "image_url", "image_url": {"url": png}},
    ]


async def test_image_only_user_message_is_a_valid_turn_input(api: TestClient, auth: dict[str, str]) -> None:
    """§4.1: a user message with only an image is a valid turn input."""
    _, reply = await create(
        api, auth, [{"role": "user", "content": [{"type": "input_image", "image_url": "https://example.com/only.png"}]}]
    )
    assert reply["status"] == "completed"


# -- W-4.12, W-4.14: read back, resume, delete, input items -----------------------------------------------


async def test_get_returns_stored_object_with_reasoning_before_message(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.12: GET returns the stored terminal object; reasoning items come before the message."""
    result = await stream_response(api, auth, "use tool")
    status, stored = await get_json(api, auth, f"{RESPONSES}/{result.response['id']}")
    assert status == 200
    assert stored == result.response
    types = [i["type"] for i in stored["output"]]
    assert types.index("reasoning") < types.index("message")
    assert types[-2:] == ["reasoning", "message"]


async def test_get_unknown_response_is_404(api: TestClient, auth: dict[str, str]) -> None:
    """§4.6: unknown id → 404 response_not_found (GET, DELETE, cancel, input_items)."""
    missing = "resp_" + "0" * 32
    for method, path in (
        ("GET", missing),
        ("DELETE", missing),
        ("POST", f"{missing}/cancel"),
        ("GET", f"{missing}/input_items"),
    ):
        assert_error_envelope(
            await fetch(api, method, f"{RESPONSES}/{path}", headers=auth),
            404,
            "response_not_found",
            type="not_found_error",
        )


async def test_get_stream_replays_the_original_events(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.12: GET ?stream=true yields exactly the original stream's events, then closes."""
    original = await stream_response(api, auth, "use tool")
    replay = await get_stream(api, auth, original.response["id"])
    assert replay.status == 200
    assert [(r.event, r.json()) for r in replay.records] == [(r.event, r.json()) for r in original.records]
    assert b"\nid:" not in replay.raw and not replay.raw.startswith(b"id:")


@pytest.mark.parametrize("text", ["exhaust", "fail", "commentary"])
async def test_get_stream_replays_other_outcomes(api: TestClient, auth: dict[str, str], text: str) -> None:
    """W-4.12: the replay is identical for incomplete, failed and commentary turns too."""
    original = await stream_response(api, auth, text)
    assert (await get_stream(api, auth, original.response["id"])).events == original.events


async def test_get_stream_starting_after_yields_later_events(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.12: ?starting_after=N yields exactly the events with sequence_number > N."""
    original = await stream_response(api, auth, "use tool")
    response_id = original.response["id"]
    last = original.terminal["sequence_number"]
    for after in (0, 1, 5, last // 2, last - 1):
        later = await get_stream(api, auth, response_id, f"&starting_after={after}")
        assert later.status == 200
        assert later.events == [e for e in original.events if e["sequence_number"] > after]
    assert (await get_stream(api, auth, response_id, "&starting_after=-1")).events == original.events


@pytest.mark.parametrize("offset", [0, 1, 100])
async def test_get_stream_starting_after_terminal_is_empty(api: TestClient, auth: dict[str, str], offset: int) -> None:
    """W-4.12, §2.3: starting_after at or past the terminal sequence_number → head only, no records."""
    original = await stream_response(api, auth, "hello")
    after = original.terminal["sequence_number"] + offset
    replay = await get_stream(api, auth, original.response["id"], f"&starting_after={after}")
    assert replay.status == 200
    assert replay.raw == b""


async def test_get_stream_starting_after_must_be_an_integer(api: TestClient, auth: dict[str, str]) -> None:
    """§4.6: starting_after=abc → 400 invalid_parameter."""
    _, reply = await create(api, auth, "hello")
    refused = await fetch(api, "GET", f"{RESPONSES}/{reply['id']}?stream=true&starting_after=abc", headers=auth)
    assert_error_envelope(refused, 400, "invalid_parameter", param="starting_after")


async def test_get_stream_of_a_json_turn_has_the_same_terminal(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.12, W-4.9: a stream:false turn's journal replays as a full stream whose terminal equals the reply."""
    _, reply = await create(api, auth, "use tool")
    replay = await get_stream(api, auth, reply["id"])
    assert replay.status == 200
    check_responses_framing(replay)
    assert replay.response == reply


async def test_get_stream_follows_a_running_response_live(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.12: a resume stream of a running response replays the journal, then live events to the terminal."""
    _, running = await create(api, auth, "hang", background=True)
    await read_tool_start(api, auth, running["id"])
    async with api.get(f"{RESPONSES}/{running['id']}?stream=true&starting_after=1", headers=auth) as resp:
        assert resp.status == 200
        raw = await read_until(resp, b"response.function_call_arguments.done")
        async with api.post(f"{RESPONSES}/{running['id']}/cancel", headers=auth) as cancel:
            assert cancel.status == 200
        raw += await asyncio.wait_for(resp.content.read(), 10)
    events = ResponseStream(resp.status, resp.headers, raw).events
    assert events[0]["sequence_number"] == 2
    assert [e["sequence_number"] for e in events] == list(range(2, 2 + len(events)))
    assert events[-1]["type"] == "response.cancelled"
    assert (await get_stream(api, auth, running["id"])).events[2:] == events


async def test_delete_removes_response_and_conversation_name(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.14: DELETE → {id, object, deleted}; then GET 404 and the conversation name starts fresh."""
    _, first = await create(api, auth, "del one", conversation="del-conv")
    async with api.delete(f"{RESPONSES}/{first['id']}", headers=auth) as resp:
        assert resp.status == 200
        assert await resp.json() == {"id": first["id"], "object": "response", "deleted": True}
    assert_error_envelope(
        await fetch(api, "GET", f"{RESPONSES}/{first['id']}", headers=auth), 404, "response_not_found"
    )
    assert (await get_stream(api, auth, first["id"])).status == 404
    async with api.delete(f"{RESPONSES}/{first['id']}", headers=auth) as again:
        assert again.status == 404
    error = await rejected(api, auth, {"input": "x", "previous_response_id": first["id"]}, 404)
    assert error["code"] == "response_not_found"
    _, fresh = await create(api, auth, "del two", conversation="del-conv")
    assert fresh["previous_response_id"] is None
    assert execution_for(api, "del two")["history"] == []


async def test_delete_removes_item_references(api: TestClient, auth: dict[str, str]) -> None:
    """§4.8: DELETE removes the response's item-reference entries."""
    _, first = await create(api, auth, "hello")
    message = first["output"][-1]
    async with api.delete(f"{RESPONSES}/{first['id']}", headers=auth) as resp:
        assert resp.status == 200
    error = await rejected(api, auth, {"input": [{"type": "item_reference", "id": message["id"]}, "after delete"]})
    assert (error["code"], error["param"]) == ("item_reference_not_found", "input[0]")


async def test_delete_of_running_response_is_409(api: TestClient, auth: dict[str, str]) -> None:
    """§4.8: DELETE of a running response → 409 response_in_progress (conflict_error)."""
    _, running = await create(api, auth, "hang", background=True)
    assert_error_envelope(
        await fetch(api, "DELETE", f"{RESPONSES}/{running['id']}", headers=auth),
        409,
        "response_in_progress",
        type="conflict_error",
    )
    async with api.post(f"{RESPONSES}/{running['id']}/cancel", headers=auth) as cancel:
        assert (await cancel.json())["status"] == "cancelled"
    async with api.delete(f"{RESPONSES}/{running['id']}", headers=auth) as resp:
        assert resp.status == 200


async def test_input_items_lists_string_input_as_user_message(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.14, §4.8: the list shape; a string input becomes a user message item with an id."""
    _, reply = await create(api, auth, "What broke?")
    status, listing = await get_json(api, auth, f"{RESPONSES}/{reply['id']}/input_items")
    assert status == 200
    assert set(listing) == {"object", "data", "first_id", "last_id", "has_more"}
    assert listing["object"] == "list"
    (item,) = listing["data"]
    assert item == {
        "id": item["id"],
        "type": "message",
        "role": "user",
        "status": "completed",
        "content": [{"type": "input_text", "text": "What broke?"}],
    }
    assert ITEM_ID["message"].match(item["id"])
    assert listing["first_id"] == listing["last_id"] == item["id"]
    assert listing["has_more"] is False


async def test_input_items_limit_order_after(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.14, §4.8: limit, order (default desc) and after page through the stored input items."""
    items = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]
    _, reply = await create(api, auth, items)
    path = f"{RESPONSES}/{reply['id']}/input_items"

    def texts(listing: dict[str, Any]) -> list[str]:
        return [i["content"][0]["text"] for i in listing["data"]]

    _, default = await get_json(api, auth, path)
    assert texts(default) == ["c", "b", "a"]
    assert [i["role"] for i in default["data"]] == ["user", "assistant", "user"]
    assert default["data"][1]["content"] == [{"type": "output_text", "text": "b"}]
    _, asc = await get_json(api, auth, f"{path}?order=asc")
    assert texts(asc) == ["a", "b", "c"]
    _, page = await get_json(api, auth, f"{path}?limit=2")
    assert texts(page) == ["c", "b"] and page["has_more"] is True
    assert page["first_id"] == page["data"][0]["id"] and page["last_id"] == page["data"][1]["id"]
    _, rest = await get_json(api, auth, f"{path}?limit=2&after={page['last_id']}")
    assert texts(rest) == ["a"] and rest["has_more"] is False
    _, asc_after = await get_json(api, auth, f"{path}?order=asc&after={asc['data'][0]['id']}")
    assert texts(asc_after) == ["b", "c"]
    for query in ("limit=0", "limit=101", "limit=x", "order=sideways"):
        assert_error_envelope(await fetch(api, "GET", f"{path}?{query}", headers=auth), 400, "invalid_parameter")


# -- W-4.13: background and cancel -------------------------------------------------------------------------------


async def test_background_returns_at_once_and_completes_without_client(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.13, §4.9: background:true stream:false → 200 at once, in_progress/queued; it completes on its own."""
    headers, reply = await create(api, auth, "use tool", background=True)
    assert reply["status"] in ("in_progress", "queued")
    assert reply["background"] is True
    assert reply["output"] == [] and reply["usage"] is None
    assert RUN_ID.match(headers["X-Hermes-Run-Id"])
    done = await poll_status(api, auth, reply["id"], {"completed"})
    assert done["background"] is True
    assert message_texts(done) == [("commentary", "Listed the files."), ("final_answer", USE_TOOL_ANSWER)]
    assert done["usage"]["total_tokens"] == 59


async def test_cancel_background_hang_settles_cancelled(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.13, W-4.17: cancel of a running background response → 200 status cancelled, tool closed."""
    _, running = await create(api, auth, "hang", background=True)
    await read_tool_start(api, auth, running["id"])
    async with api.post(f"{RESPONSES}/{running['id']}/cancel", headers=auth) as resp:
        assert resp.status == 200
        cancelled = await resp.json()
    assert set(cancelled) == RESPONSE_KEYS
    assert cancelled["status"] == "cancelled"
    assert [(i["type"], i["status"]) for i in cancelled["output"]] == [
        ("reasoning", "completed"),
        ("function_call", "completed"),
        ("function_call_output", "completed"),
    ]
    assert cancelled["output"][-1]["output"] == "[interrupted]"
    status, stored = await get_json(api, auth, f"{RESPONSES}/{running['id']}")
    assert status == 200 and stored == cancelled
    # A second cancel of the settled background response returns the stored object unchanged.
    async with api.post(f"{RESPONSES}/{running['id']}/cancel", headers=auth) as again:
        assert again.status == 200
        assert await again.json() == cancelled


async def test_cancel_of_settled_foreground_response_is_not_cancellable(api: TestClient, auth: dict[str, str]) -> None:
    """§4.8: cancel of a foreground response (not background, not detached) → 400 response_not_cancellable."""
    _, reply = await create(api, auth, "hello")
    assert_error_envelope(
        await fetch(api, "POST", f"{RESPONSES}/{reply['id']}/cancel", headers=auth),
        400,
        "response_not_cancellable",
        type="invalid_request_error",
    )


async def test_cancel_of_connected_foreground_stream_is_not_cancellable(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.13: cancelling a running foreground response whose client is connected → 400 response_not_cancellable."""
    body = {"model": "hermes-agent", "input": "hang", "stream": True}
    async with api.post(RESPONSES, json=body, headers=auth) as resp:
        raw = await read_until(resp, b"response.function_call_arguments.done")
        response_id = first_id(raw)
        assert_error_envelope(
            await fetch(api, "POST", f"{RESPONSES}/{response_id}/cancel", headers=auth), 400, "response_not_cancellable"
        )
        status, snapshot = await get_json(api, auth, f"{RESPONSES}/{response_id}")
        assert status == 200 and snapshot["status"] == "in_progress"
        turn = api.server.app[TURNS].get(resp.headers["X-Hermes-Run-Id"])
        assert turn is not None
        turn.cancel()  # the run's own stop (§6.4) still works while the client is connected
        raw += await asyncio.wait_for(resp.content.read(), 10)
    assert ResponseStream(resp.status, resp.headers, raw).names[-1] == "response.cancelled"


# -- headers ------------------------------------------------------------------------------------------------------


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


# -- W-4.20: eviction ---------------------------------------------------------------------------------------------


async def test_max_stored_evicts_least_recently_accessed(make_api: Any, auth: dict[str, str]) -> None:
    """W-4.20: with max_stored 2, a third stored response evicts the first: GET 404, its conversation name gone."""
    api = await make_api(config={"api_server": {"responses": {"max_stored": 2}}})
    _, one = await create(api, auth, "evict one", conversation="evict-conv")
    _, two = await create(api, auth, "evict two")
    _, three = await create(api, auth, "evict three")
    status, _ = await get_json(api, auth, f"{RESPONSES}/{one['id']}")
    assert status == 404
    for kept in (two, three):
        status, _ = await get_json(api, auth, f"{RESPONSES}/{kept['id']}")
        assert status == 200
    _, fresh = await create(api, auth, "evict four", conversation="evict-conv")
    assert fresh["previous_response_id"] is None
    assert execution_for(api, "evict four")["history"] == []


async def test_access_refreshes_eviction_order(make_api: Any, auth: dict[str, str]) -> None:
    """W-4.20, §4.6: least recently *accessed* is evicted first — a GET keeps a response."""
    api = await make_api(config={"api_server": {"responses": {"max_stored": 2}}})
    _, one = await create(api, auth, "lru one")
    _, two = await create(api, auth, "lru two")
    status, _ = await get_json(api, auth, f"{RESPONSES}/{one['id']}")
    assert status == 200
    await create(api, auth, "lru three")
    assert (await get_json(api, auth, f"{RESPONSES}/{one['id']}"))[0] == 200
    assert (await get_json(api, auth, f"{RESPONSES}/{two['id']}"))[0] == 404


# -- §4.9, §5.5: disconnects -------------------------------------------------------------------------------------


async def test_background_stream_survives_a_disconnect(api: TestClient, auth: dict[str, str]) -> None:
    """§4.9: background:true stream:true — a disconnect does not stop the turn; GET shows it completed."""
    body = {"model": "hermes-agent", "input": "use tool", "stream": True, "background": True}
    async with api.post(RESPONSES, json=body, headers=auth) as resp:
        raw = await read_until(resp, b"\n\n")
        response_id = first_id(raw)
        resp.close()
    done = await poll_status(api, auth, response_id, {"completed", "cancelled", "failed"})
    assert done["status"] == "completed"
    assert message_texts(done)[-1] == ("final_answer", USE_TOOL_ANSWER)


async def test_foreground_stream_disconnect_cancels_the_turn(api: TestClient, auth: dict[str, str]) -> None:
    """§5.5: without a key or background, a disconnect cancels the turn; the stored response settles cancelled."""
    body = {"model": "hermes-agent", "input": "hang", "stream": True}
    async with api.post(RESPONSES, json=body, headers=auth) as resp:
        raw = await read_until(resp, b"response.function_call_arguments.done")
        response_id = first_id(raw)
        resp.close()
    cancelled = await poll_status(api, auth, response_id, {"cancelled", "completed", "failed"})
    assert cancelled["status"] == "cancelled"
    assert cancelled["output"][-1]["output"] == "[interrupted]"


async def test_cancel_settles_a_detached_foreground_response(make_api: Any, auth: dict[str, str]) -> None:
    """W-4.13, §4.8: a foreground turn running without its client (on_disconnect continue) can be cancelled."""
    api = await make_api(config={"api_server": {"on_disconnect": "continue"}})
    body = {"model": "hermes-agent", "input": "hang", "stream": True}
    async with api.post(RESPONSES, json=body, headers=auth) as resp:
        raw = await read_until(resp, b"response.function_call_arguments.done")
        response_id = first_id(raw)
        run_id = resp.headers["X-Hermes-Run-Id"]
        resp.close()
    turn = api.server.app[TURNS].get(run_id)
    assert turn is not None
    await wait_for_async(lambda: turn.detached, what="the server noticing the disconnect")
    assert (await get_json(api, auth, f"{RESPONSES}/{response_id}"))[1]["status"] == "in_progress"
    async with api.post(f"{RESPONSES}/{response_id}/cancel", headers=auth) as cancel:
        assert cancel.status == 200
        cancelled = await cancel.json()
    assert cancelled["status"] == "cancelled"
    assert cancelled["background"] is False


async def test_model_is_echoed_or_defaults_to_the_advertised_name(api: TestClient, auth: dict[str, str]) -> None:
    """§4.5: `model` is the request's model, or the advertised name when absent."""
    _, named = await create(api, auth, "hello", model="my-frontend-model")
    assert named["model"] == "my-frontend-model"
    async with api.post(RESPONSES, json={"input": "hello"}, headers=auth) as resp:
        reply = json.loads(await resp.text())
    assert reply["model"] == "hermes-agent"


async def test_cancel_of_queued_background_response_never_starts_it(api: TestClient, auth: dict[str, str]) -> None:
    """§4.8, §4.9: a background response queued behind its chain's running turn is cancelled without running."""
    _, running = await create(api, auth, "hang", background=True)
    await read_tool_start(api, auth, running["id"])
    _, queued = await create(api, auth, "queued never runs", background=True, previous_response_id=running["id"])
    assert queued["status"] == "queued"
    assert queued["previous_response_id"] == running["id"]
    async with api.post(f"{RESPONSES}/{queued['id']}/cancel", headers=auth) as resp:
        assert resp.status == 200
        cancelled = await resp.json()
    assert cancelled["status"] == "cancelled"
    assert cancelled["output"] == []
    async with api.post(f"{RESPONSES}/{running['id']}/cancel", headers=auth) as resp:
        assert (await resp.json())["status"] == "cancelled"
    replay = await get_stream(api, auth, queued["id"])
    assert replay.status == 200
    assert replay.names == ["response.created", "response.cancelled"], "a queued turn never gets response.in_progress"
    assert not [
        e
        for e in executions(api.home)  # type: ignore[attr-defined]
        if e["input"]["content"][0]["text"] == "queued never runs"
    ]


async def test_input_items_keep_tool_items_with_their_prefixes(api: TestClient, auth: dict[str, str]) -> None:
    """§4.5, §4.8: stored function_call / function_call_output input items get fc_ / fco_ ids."""
    items = [
        {"role": "user", "content": "q"},
        {"type": "function_call", "call_id": "call_c", "name": "lookup", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_c", "output": "r"},
        {"role": "user", "content": "tool items listed"},
    ]
    _, reply = await create(api, auth, items)
    _, listing = await get_json(api, auth, f"{RESPONSES}/{reply['id']}/input_items?order=asc")
    assert [i["type"] for i in listing["data"]] == ["message", "function_call", "function_call_output", "message"]
    for item in listing["data"]:
        assert ITEM_ID[item["type"]].match(item["id"]), item
    assert listing["data"][1]["call_id"] == listing["data"][2]["call_id"] == "call_c"
    assert len({i["id"] for i in listing["data"]}) == 4


async def test_resent_client_tool_output_still_gets_the_stored_output(api: TestClient, auth: dict[str, str]) -> None:
    """W-4.19: a client that re-sends its own error function_call_output on every turn (Vercel appends
    response.messages) keeps getting the server's stored output, not its text stored by an earlier request."""
    _, first = await create(api, auth, "use tool")
    fc = next(i for i in first["output"] if i["type"] == "function_call")
    prefix = [
        {"role": "user", "content": "use tool"},
        {"type": "function_call", "call_id": fc["call_id"], "name": fc["name"], "arguments": fc["arguments"]},
        {"type": "function_call_output", "call_id": fc["call_id"], "output": "CLIENT-ERROR: not executed"},
    ]
    await create(api, auth, [*prefix, {"role": "user", "content": "resend one"}])
    await create(
        api,
        auth,
        [*prefix, {"role": "assistant", "content": DEFAULT_ANSWER}, {"role": "user", "content": "resend two"}],
    )
    for text in ("resend one", "resend two"):
        tools = [m for m in execution_for(api, text)["history"] if m["role"] == "tool"]
        assert [m["content"] for m in tools] == [[{"type": "text", "text": "README.md\nsrc/"}]], text


async def test_get_stream_carries_the_run_and_session_headers(api: TestClient, auth: dict[str, str]) -> None:
    """§2.1, §6.2: a replay stream carries the turn's X-Hermes-Run-Id and its session id."""
    original = await stream_response(api, auth, "hello")
    async with api.get(f"{RESPONSES}/{original.response['id']}?stream=true", headers=auth) as resp:
        assert resp.status == 200
        await resp.read()
        assert resp.headers["X-Hermes-Run-Id"] == original.headers["X-Hermes-Run-Id"]
        assert resp.headers["X-Hermes-Session-Id"] == original.headers["X-Hermes-Session-Id"]
        assert resp.headers["Cache-Control"] == "no-cache"


async def test_conversation_name_moves_as_soon_as_a_response_is_created(api: TestClient, auth: dict[str, str]) -> None:
    """§4.7: the name points at a running response at once; a second request on it is queued behind it."""
    _, running = await create(api, auth, "hang", background=True, conversation="busy")
    await read_tool_start(api, auth, running["id"])
    _, second = await create(api, auth, "busy follow up", background=True, conversation="busy")
    assert second["previous_response_id"] == running["id"]
    assert second["status"] == "queued"
    async with api.post(f"{RESPONSES}/{running['id']}/cancel", headers=auth) as resp:
        assert (await resp.json())["status"] == "cancelled"
    done = await poll_status(api, auth, second["id"], {"completed", "failed", "cancelled"})
    assert done["status"] == "completed"
    assert history_of(execution_for(api, "busy follow up"))[0] == ("user", "hang")


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
    """§4.1: tools, tool_choice, parallel_tool_calls are echoed on the Response object and never executed."""
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}]
    result = await stream_response(api, auth, "hello", tools=tools, tool_choice="required", parallel_tool_calls=False)
    for event in (result.events[0], result.terminal):
        assert event["response"]["tools"] == tools
        assert event["response"]["tool_choice"] == "required"
        assert event["response"]["parallel_tool_calls"] is False
    assert [i["type"] for i in result.response["output"]] == ["reasoning", "message"]
    assert not [e for e in result.events if "response" not in e and "get_weather" in json.dumps(e)]


# -- W-4.21: X-Hermes-Tool-Items: off ------------------------------------------------------------------------------

TOOL_ITEMS_OFF = {"X-Hermes-Tool-Items": "off"}


def without_tools(response: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in response["output"] if i["type"] not in TOOL_TYPES]


def assert_no_tool_items(result: ResponseStream) -> None:
    """W-4.21 on a stream (check_responses_framing has checked the dense sequence numbers and output indexes)."""
    assert not [e for e in result.events if e.get("item", {}).get("type") in TOOL_TYPES]
    assert not [n for n in result.names if n.startswith("response.function_call")]


async def test_tool_items_off_every_delivery_shows_the_stored_items_with_dense_numbers(
    api: TestClient, auth: dict[str, str]
) -> None:
    """W-4.21, §1.6: with `X-Hermes-Tool-Items: off`, the create stream, create JSON, GET JSON and GET ?stream=true
    (from the start and with starting_after) show no function_call/function_call_output items; the items they show
    are the stored items (same ids, same content, same order); output_index and sequence_number are dense per
    delivery; a resume that sends the same header continues the numbering of the stream it resumes."""
    stream = await stream_response(api, auth, "use tool", headers=TOOL_ITEMS_OFF)
    assert_no_tool_items(stream)
    stored = await snapshot(api, auth, stream.response["id"])
    assert [i["type"] for i in stored["output"]].count("function_call") == 1, "the stored response keeps its tools"
    shown = without_tools(stored)
    assert [(i["type"], i.get("phase")) for i in shown] == [
        ("reasoning", None),
        ("message", "commentary"),
        ("reasoning", None),
        ("message", "final_answer"),
    ]
    assert stream.response == {**stored, "output": shown}
    added = [e for e in stream.events if e["type"] == "response.output_item.added"]
    assert [e["item"]["id"] for e in added] == [i["id"] for i in shown]

    status, got = await get_json(api, auth, f"{RESPONSES}/{stream.response['id']}", TOOL_ITEMS_OFF)
    assert status == 200 and got == stream.response

    replay = await get_stream(api, auth, stream.response["id"], headers=TOOL_ITEMS_OFF)
    check_responses_framing(replay)
    assert replay.events == stream.events
    after = added[1]["sequence_number"]  # resume just after the commentary was added
    resumed = await get_stream(api, auth, stream.response["id"], f"&starting_after={after}", headers=TOOL_ITEMS_OFF)
    assert resumed.events == [e for e in stream.events if e["sequence_number"] > after]
    assert resumed.events[0]["sequence_number"] == after + 1

    _, reply = await create(api, auth, "use tool", headers=TOOL_ITEMS_OFF)
    stored_reply = await snapshot(api, auth, reply["id"])
    assert reply == {**stored_reply, "output": without_tools(stored_reply)}
    assert len(without_tools(stored_reply)) < len(stored_reply["output"])


async def test_tool_items_off_item_references_resolve_to_the_items_the_client_saw(
    api: TestClient, auth: dict[str, str]
) -> None:
    """W-4.21, §4.1: a follow-up `item_reference` to the reasoning, commentary and answer ids a filtered delivery
    showed resolves to those same stored items: the reasoning is found (and skipped, not 400), the commentary
    id brings the commentary, the answer id the answer (issue 12: it used to bring the commentary)."""
    stream = await stream_response(api, auth, "use tool", headers=TOOL_ITEMS_OFF)
    rs1, commentary, rs2, answer = stream.response["output"]

    def refs(*items: dict[str, Any]) -> list[Any]:
        return [{"type": "item_reference", "id": i["id"]} for i in items]

    await create(api, auth, [*refs(answer), "answer ref only"], headers=TOOL_ITEMS_OFF)
    assert history_of(execution_for(api, "answer ref only")) == [("assistant", USE_TOOL_ANSWER)]
    items = [{"role": "user", "content": "use tool"}, *refs(rs1, commentary, rs2, answer), "tool items ref check"]
    _, reply = await create(api, auth, items, headers=TOOL_ITEMS_OFF)
    assert reply["status"] == "completed"
    assert history_of(execution_for(api, "tool items ref check")) == [
        ("user", "use tool"),
        ("assistant", "Listed the files."),
        ("assistant", USE_TOOL_ANSWER),
    ]


async def test_tool_items_off_on_a_running_response_shows_its_done_items_and_live_events(
    api: TestClient, auth: dict[str, str]
) -> None:
    """W-4.21: while the turn runs, GET JSON with the header off lists the done items it shows with their stored
    ids, and a live GET ?stream=true with the header off numbers its events as the later full replay does."""
    _, running = await create(api, auth, "tool then wait", background=True)
    response_id = running["id"]
    live = await wait_for_async(
        lambda: snapshot(api, auth, response_id),
        until=lambda body: any(i.get("phase") == "commentary" for i in body["output"]),
        what="the commentary",
    )
    assert [i["type"] for i in live["output"]] == ["reasoning", "function_call", "function_call_output", "message"]
    status, filtered = await get_json(api, auth, f"{RESPONSES}/{response_id}", TOOL_ITEMS_OFF)
    assert status == 200 and filtered == {**live, "output": without_tools(live)}
    async with api.get(f"{RESPONSES}/{response_id}?stream=true", headers={**auth, **TOOL_ITEMS_OFF}) as resp:
        raw = await read_until(resp, b"Waiting.")  # the burst after the commentary: the turn now sleeps
        async with api.post(f"{RESPONSES}/{response_id}/cancel", headers=auth) as cancel:
            assert cancel.status == 200
        raw += await asyncio.wait_for(resp.content.read(), 10)
        followed = ResponseStream(resp.status, resp.headers, raw)
    check_responses_framing(followed)
    assert_no_tool_items(followed)
    assert followed.events[-1]["type"] == "response.cancelled"
    assert (await get_stream(api, auth, response_id, headers=TOOL_ITEMS_OFF)).events == followed.events
    stored = await snapshot(api, auth, response_id)
    assert followed.response["output"] == without_tools(stored)
