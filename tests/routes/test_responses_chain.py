"""Chaining and conversations: `previous_response_id`, `conversation`, session keys and which one wins, the
history and instructions a chained turn sees, `store: false`, truncation, a chain from a running response
(WIRE.md §4.7; W-4.10, W-4.11).

Every request goes through the plugin's startup hook, the real middlewares, the SQLite store and the
scripted runtime (tests/scripts/chat.yaml); nothing on the server side is mocked. Shared helpers:
tests/routes/responses_helpers.py.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.helpers import (
    DEFAULT_ANSWER,
    RESPONSES,
    USE_TOOL_ANSWER,
    assert_error_envelope,
    complete_records,
    execution_for,
    fetch,
    read_until,
)
from tests.live import executions

from .responses_helpers import (
    HEAD,
    ResponseStream,
    check_responses_framing,
    create,
    get_json,
    history_of,
    poll_status,
    read_tool_start,
    rejected,
    stream_response,
)

USE_TOOL_HISTORY = [
    ("user", "use tool"),
    ("assistant", "", ("terminal",)),
    ("tool", "README.md\nsrc/", "tool_call_id"),
    ("assistant", USE_TOOL_ANSWER),
]


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
