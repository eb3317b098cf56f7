"""Stored Responses read back: GET as JSON and as a replayed or live stream (`starting_after`), delete,
the input items listing, eviction by `max_stored` (WIRE.md §4.6, §4.8; W-4.12, W-4.14, W-4.20).

Every request goes through the plugin's startup hook, the real middlewares, the SQLite store and the
scripted runtime (tests/scripts/chat.yaml); nothing on the server side is mocked. Shared helpers:
tests/routes/responses_helpers.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.helpers import (
    ITEM_ID,
    RESPONSES,
    assert_error_envelope,
    execution_for,
    fetch,
    read_until,
)

from .responses_helpers import (
    ResponseStream,
    check_responses_framing,
    create,
    get_json,
    get_stream,
    read_tool_start,
    rejected,
    stream_response,
)


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


async def test_get_stream_carries_the_run_and_session_headers(api: TestClient, auth: dict[str, str]) -> None:
    """§2.1, §6.2: a replay stream carries the turn's X-Hermes-Run-Id and its session id."""
    original = await stream_response(api, auth, "hello")
    async with api.get(f"{RESPONSES}/{original.response['id']}?stream=true", headers=auth) as resp:
        assert resp.status == 200
        await resp.read()
        assert resp.headers["X-Hermes-Run-Id"] == original.headers["X-Hermes-Run-Id"]
        assert resp.headers["X-Hermes-Session-Id"] == original.headers["X-Hermes-Session-Id"]
        assert resp.headers["Cache-Control"] == "no-cache"
