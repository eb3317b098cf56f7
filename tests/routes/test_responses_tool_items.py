"""`X-Hermes-Tool-Items: off` (WIRE.md §4.5; W-4.21): every delivery of a response — JSON, stream, replay,
live follow — hides the tool items and numbers the rest densely, and item references still resolve.

Every request goes through the plugin's startup hook, the real middlewares, the SQLite store and the
scripted runtime (tests/scripts/chat.yaml); nothing on the server side is mocked. Shared helpers:
tests/routes/responses_helpers.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp.test_utils import TestClient

from tests.helpers import (
    RESPONSES,
    TOOL_TYPES,
    USE_TOOL_ANSWER,
    execution_for,
    read_until,
    wait_for_async,
)

from .responses_helpers import (
    ResponseStream,
    check_responses_framing,
    create,
    get_json,
    get_stream,
    history_of,
    snapshot,
    stream_response,
)

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
