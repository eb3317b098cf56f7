"""What the Responses route tests share (tests/routes/test_responses_*.py): the event shapes of a stream, the
framing every stream keeps (check_responses_framing), and the requests they make — create as JSON or as a stream,
read back, poll, a refused request — each checking what every reply of its kind must hold.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient
from multidict import CIMultiDictProxy

from tests.helpers import (
    ITEM_ID,
    RESPONSE_KEYS,
    RESPONSE_TERMINALS,
    RESPONSES,
    RUN_ID,
    USAGE_KEYS,
    USE_TOOL_REASONING,
    Reply,
    assert_error_envelope,
    complete_records,
    fetch,
    wait_for_async,
)

USE_TOOL_SUMMARY = tuple(USE_TOOL_REASONING.split("\n\n"))  # one summary part per paragraph
HEAD = ["response.created", "response.in_progress"]  # every Responses stream opens with these two (WIRE.md §4.2)


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


def message_texts(response: dict[str, Any]) -> list[tuple[str | None, str]]:
    return [(i.get("phase"), i["content"][0]["text"]) for i in response["output"] if i["type"] == "message"]


async def read_tool_start(api: TestClient, auth: dict[str, str], response_id: str) -> None:
    """Wait until a background response's tool has started (its journal shows the function_call)."""
    started = await wait_for_async(
        lambda: snapshot(api, auth, response_id),  # the burst is done once the tool started
        until=lambda body: any(i["type"] == "reasoning" for i in body["output"]),
        what="the tool start",
    )
    assert started["status"] == "in_progress"
