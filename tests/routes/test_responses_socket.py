"""The Responses API in WebSocket mode (WIRE.md §16, W-16.1): `GET /v1/responses` upgraded, `response.create`
messages, each response's §4.2 events as JSON text frames, one response after another on one connection; store:false
Responses kept by the connection for `previous_response_id`, evicted when a continuation fails and gone with the
connection; `generate: false` warm-ups; the spec's error event; keys, turn-taking and disconnects as over HTTP."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient

from tests.conftest import ApiFactory
from tests.helpers import (
    DEFAULT_ANSWER,
    MODEL,
    RESPONSE_ID,
    RESPONSE_TERMINALS,
    RESPONSES,
    SUSPEND_ASK,
    SUSPEND_DONE,
    SUSPEND_SCRIPT,
    USE_TOOL_ANSWER,
    execution_for,
    fetch,
    history_texts,
    normalise,
    parse_sse,
    wait_for_async,
)
from tests.live import executions

from .responses_helpers import stream_response

TERMINALS = (*RESPONSE_TERMINALS, "error")


def create(text: Any, **fields: Any) -> dict[str, Any]:
    """A response.create message (store:false unless set)."""
    return {"type": "response.create", "model": MODEL, "store": False, "input": text, **fields}


async def receive_turn(ws: aiohttp.ClientWebSocketResponse, timeout: float = 20.0) -> list[dict[str, Any]]:
    """The events of one response (or its error event), each frame one JSON event."""
    events: list[dict[str, Any]] = []
    while True:
        frame = await ws.receive(timeout=timeout)
        assert frame.type is aiohttp.WSMsgType.TEXT, (frame, events)
        event = json.loads(frame.data)
        events.append(event)
        if event["type"] in TERMINALS:
            return events


async def turn(ws: aiohttp.ClientWebSocketResponse, message: Any) -> list[dict[str, Any]]:
    await (ws.send_str(message) if isinstance(message, str) else ws.send_json(message))
    return await receive_turn(ws)


def final(events: list[dict[str, Any]]) -> dict[str, Any]:
    assert events[-1]["type"] != "error", events[-1]
    response: dict[str, Any] = events[-1]["response"]
    return response


def text_of(response: dict[str, Any]) -> str:
    return "".join(part["text"] for item in response["output"] if item["type"] == "message" for part in item["content"])


def check_error(event: dict[str, Any], status: int, code: str) -> None:
    """Open Responses' WebSocket error event."""
    assert event["type"] == "error" and event["status"] == status, event
    assert set(event["error"]) == {"type", "code", "message", "param"} and event["error"]["code"] == code, event


async def connect(api: TestClient, auth: dict[str, str], **headers: str) -> aiohttp.ClientWebSocketResponse:
    return await api.ws_connect(RESPONSES, headers={**auth, **headers})


async def test_w_16_1_sequential_responses_on_one_socket(api: TestClient, auth: dict[str, str]) -> None:
    """W-16.1: two responses, one after the other, each the §4.2 sequence as text frames, numbered from 0."""
    async with await connect(api, auth) as ws:
        for text in ("first", "second"):
            events = await turn(ws, create(text))
            assert [e["type"] for e in events[:2]] == ["response.created", "response.in_progress"]
            assert [e["sequence_number"] for e in events] == list(range(len(events)))
            response = final(events)
            assert events[-1]["type"] == "response.completed" and response["status"] == "completed"
            assert RESPONSE_ID.match(response["id"]) and text_of(response) == DEFAULT_ANSWER
            assert response["store"] is False


async def test_w_16_1_a_message_sent_while_one_runs_waits_for_it(api: TestClient, auth: dict[str, str]) -> None:
    """Responses run one after another on a connection: the second message's events follow the first's end."""
    async with await connect(api, auth) as ws:
        await ws.send_json(create("use tool"))
        await ws.send_json(create("hello"))
        first, second = await receive_turn(ws), await receive_turn(ws)
        assert text_of(final(first)).endswith(USE_TOOL_ANSWER) and text_of(final(second)) == DEFAULT_ANSWER


async def test_w_16_1_store_false_continues_on_the_same_socket(api: TestClient, auth: dict[str, str]) -> None:
    """A store:false Response is kept by its connection: previous_response_id with only the new input continues
    it, the agent sees the first exchange as history; nothing was stored."""
    async with await connect(api, auth) as ws:
        first = final(await turn(ws, create("Remember the code word: cobalt.")))
        second = final(await turn(ws, create("What is the code word?", previous_response_id=first["id"])))
        third = final(await turn(ws, create("And again?", previous_response_id=second["id"])))
    assert second["previous_response_id"] == first["id"] and third["status"] == "completed"
    history = history_texts(execution_for(api, "And again?"))
    assert history == [
        ("user", "Remember the code word: cobalt."),
        ("assistant", DEFAULT_ANSWER),
        ("user", "What is the code word?"),
        ("assistant", DEFAULT_ANSWER),
    ]
    assert (await fetch(api, "GET", f"{RESPONSES}/{first['id']}", headers=auth)).status == 404


async def test_w_16_1_store_true_continues_from_the_store(api: TestClient, auth: dict[str, str]) -> None:
    """A stored Response continues as over HTTP, on any connection."""
    async with await connect(api, auth) as ws:
        first = final(await turn(ws, create("stored first", store=True)))
    async with await connect(api, auth) as ws:
        second = final(await turn(ws, create("stored second", store=True, previous_response_id=first["id"])))
    assert second["status"] == "completed"
    assert history_texts(execution_for(api, "stored second"))[0] == ("user", "stored first")


async def test_w_16_1_a_stored_response_carries_the_kept_chain_it_continues(
    api: TestClient, auth: dict[str, str]
) -> None:
    """store:true continuing a store:false Response: the stored chain holds what only the connection kept, so it
    continues whole over HTTP once the socket is gone."""
    async with await connect(api, auth) as ws:
        kept = final(await turn(ws, create("kept first")))
        stored = final(await turn(ws, create("stored second", store=True, previous_response_id=kept["id"])))
    later = await stream_response(api, auth, "http third", previous_response_id=stored["id"])
    assert later.response["status"] == "completed"
    assert history_texts(execution_for(api, "http third")) == [
        ("user", "kept first"),
        ("assistant", DEFAULT_ANSWER),
        ("user", "stored second"),
        ("assistant", DEFAULT_ANSWER),
    ]


async def test_w_16_1_a_new_connection_keeps_nothing(api: TestClient, auth: dict[str, str]) -> None:
    """Reconnected, a store:false id is unknown: 400 previous_response_not_found, as for an id never seen."""
    async with await connect(api, auth) as ws:
        first = final(await turn(ws, create("hello")))
    async with await connect(api, auth) as ws:
        [error] = await turn(ws, create("again", previous_response_id=first["id"]))
        check_error(error, 400, "previous_response_not_found")
        assert error["error"]["param"] == "previous_response_id"
        [error] = await turn(ws, create("x", previous_response_id="resp_openresponses_missing_1"))
        check_error(error, 400, "previous_response_not_found")
        assert final(await turn(ws, create("still usable")))["status"] == "completed"


@pytest.mark.parametrize(
    ("failing", "ends"),
    [
        ("fail early", "response.failed"),  # the continuation's turn fails
        ([{"type": "item_reference", "id": "msg_unknown"}, "x"], "error"),  # refused before anything runs
    ],
)
async def test_w_16_1_a_failed_continuation_evicts_what_it_continued(
    api: TestClient, auth: dict[str, str], failing: Any, ends: str
) -> None:
    """A continuation that fails — an error event or a failed Response — evicts the Response it named: a retry of it
    is previous_response_not_found; other kept Responses stay."""
    async with await connect(api, auth) as ws:
        other = final(await turn(ws, create("another chain")))
        first = final(await turn(ws, create("Remember: ember.")))
        failed = await turn(ws, create(failing, previous_response_id=first["id"]))
        assert failed[-1]["type"] == ends, failed[-1]
        [error] = await turn(ws, create("stale", previous_response_id=first["id"]))
        check_error(error, 400, "previous_response_not_found")
        assert final(await turn(ws, create("fresh", previous_response_id=other["id"])))["status"] == "completed"


async def test_w_16_1_generate_false_warms_up_without_a_turn(api: TestClient, auth: dict[str, str]) -> None:
    """generate:false: a completed Response with no output and no agent turn, whose id the next response.create
    continues (its input is then history)."""
    async with await connect(api, auth) as ws:
        warm_events = await turn(ws, create("Prepare to answer with exactly: warmed", generate=False))
        assert [e["type"] for e in warm_events] == ["response.created", "response.in_progress", "response.completed"]
        warm = final(warm_events)
        assert warm["status"] == "completed" and warm["output"] == [] and RESPONSE_ID.match(warm["id"])
        answered = final(await turn(ws, create("Reply with exactly: warmed", previous_response_id=warm["id"])))
    assert answered["status"] == "completed" and answered["previous_response_id"] == warm["id"]
    execution = execution_for(api, "Reply with exactly: warmed")
    assert history_texts(execution) == [("user", "Prepare to answer with exactly: warmed")]
    assert len(executions(api.home)) == 1  # type: ignore[attr-defined]  # the warm-up ran no turn


async def test_w_16_1_generate_false_with_store_is_stored(api: TestClient, auth: dict[str, str]) -> None:
    async with await connect(api, auth) as ws:
        warm = final(await turn(ws, create("warm and stored", generate=False, store=True)))
    stored = await fetch(api, "GET", f"{RESPONSES}/{warm['id']}", headers=auth)
    assert stored.status == 200 and stored.json()["status"] == "completed" and stored.json()["output"] == []


async def test_w_16_1_bad_frames_are_error_events_and_the_socket_stays_usable(
    api: TestClient, auth: dict[str, str]
) -> None:
    """Not JSON, a binary frame, another event type, an HTTP transport field (but for the values a socket implies,
    `stream: true` and `background: false`: the Agents SDK sends `stream: true`), an invalid body: each an error
    event (nothing admitted); the next response.create runs."""
    async with await connect(api, auth) as ws:
        check_error((await turn(ws, "not json"))[0], 400, "invalid_json")
        await ws.send_bytes(b"{}")
        check_error((await receive_turn(ws))[0], 400, "invalid_json")
        check_error((await turn(ws, {"type": "response.cancel"}))[0], 400, "unknown_event_type")
        check_error((await turn(ws, {"input": "no type"}))[0], 400, "unknown_event_type")
        for field, value in (("stream", False), ("background", True), ("stream_options", {})):
            [error] = await turn(ws, create("x", **{field: value}))
            check_error(error, 400, "unsupported_parameter")
            assert error["error"]["param"] == field
        check_error((await turn(ws, {"type": "response.create"}))[0], 400, "missing_required_parameter")
        check_error((await turn(ws, create("x", generate="no")))[0], 400, "invalid_parameter")
        check_error((await turn(ws, create("x", idempotency_key="bad key")))[0], 400, "invalid_idempotency_key")
        assert final(await turn(ws, create("hello")))["status"] == "completed"
    health = (await fetch(api, "GET", "/health/detailed", headers=auth)).json()["api_server"]
    assert health["slots"]["admitted"] == 0


async def test_w_16_1_upgrade_needs_the_key_and_an_allowed_origin(make_api: ApiFactory, auth: dict[str, str]) -> None:
    """Same authentication and Origin rules as HTTP, before the handshake: 401 / 403, never a 101."""
    api = await make_api(env={"API_SERVER_CORS_ORIGINS": "https://ok.example"})
    for headers, status in (
        ({}, 401),
        ({"Authorization": "Bearer wrong-key-0123456789"}, 401),
        ({**auth, "Origin": "https://evil.example"}, 403),
    ):
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await api.ws_connect(RESPONSES, headers=headers)
        assert refused.value.status == status
    async with await connect(api, auth, Origin="https://ok.example") as ws:
        assert final(await turn(ws, create("hello")))["status"] == "completed"


async def test_w_16_1_get_without_upgrade_is_426(api: TestClient, auth: dict[str, str]) -> None:
    reply = await fetch(api, "GET", RESPONSES, headers=auth)
    assert reply.status == 426 and reply.json()["error"]["code"] == "upgrade_required"
    assert reply.headers["Upgrade"] == "websocket"


async def test_w_16_1_capabilities_and_openapi_describe_the_upgrade(api: TestClient, auth: dict[str, str]) -> None:
    features = (await fetch(api, "GET", "/v1/capabilities", headers=auth)).json()["features"]
    assert features["responses_websocket"] is True
    document = (await fetch(api, "GET", "/openapi.json", headers=auth)).json()
    upgrade = document["paths"][RESPONSES]["get"]
    assert upgrade["operationId"] == "responses_socket" and "101" in upgrade["responses"]
    assert upgrade["x-websocket"]["client_message"] == {"$ref": "#/components/schemas/ResponseCreateEvent"}
    message = document["components"]["schemas"]["ResponseCreateEvent"]["properties"]
    assert {"type", "generate", "idempotency_key", "input"} <= set(message) and "stream" not in message


async def test_w_5_5_a_closed_socket_cancels_an_unkeyed_turn(api: TestClient, auth: dict[str, str]) -> None:
    """§5.5: the socket closed mid-response is a gone client: the unkeyed turn is cancelled (its stored Response
    says so)."""
    ws = await connect(api, auth)
    await ws.send_json(create("hang", store=True))
    created = json.loads((await ws.receive(timeout=10)).data)
    await ws.close()
    response_id = created["response"]["id"]

    async def status() -> str:
        return str((await fetch(api, "GET", f"{RESPONSES}/{response_id}", headers=auth)).json()["status"])

    await wait_for_async(status, until=lambda s: s == "cancelled", what="the unkeyed turn cancelled")


async def test_w_5_5_a_keyed_turn_survives_and_a_retry_attaches(api: TestClient, auth: dict[str, str]) -> None:
    """§5.5, §5.3: with idempotency_key the turn outlives its socket; the same message on a new socket attaches (or
    replays) with the same response id and ends completed; the same body over HTTP with the key replays it too."""
    message = create("paced", idempotency_key="ws-key-1")
    ws = await connect(api, auth)
    await ws.send_json(message)
    created = json.loads((await ws.receive(timeout=10)).data)
    await ws.close()
    async with await connect(api, auth) as again:
        events = await turn(again, message)
    response = final(events)
    assert response["id"] == created["response"]["id"] and response["status"] == "completed"
    assert events[0]["type"] == "response.created"
    body = {k: v for k, v in message.items() if k not in ("type", "idempotency_key")}
    replay = await stream_response(api, auth, body["input"], headers={"Idempotency-Key": "ws-key-1"}, store=False)
    assert replay.headers["Idempotency-Replayed"] == "true" and replay.response["id"] == response["id"]


async def test_w_15_3_an_approval_is_answered_in_the_next_response_create(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """§15.3 over a socket: the Response ends completed at its mcp_approval_request; the next response.create with
    the mcp_approval_response resumes the same turn as a new Response, which the connection keeps in turn."""
    api = await make_api(script=SUSPEND_SCRIPT)
    async with await connect(api, auth) as ws:
        asked = final(await turn(ws, create(SUSPEND_ASK)))
        [request] = [item for item in asked["output"] if item["type"] == "mcp_approval_request"]
        answer = {"type": "mcp_approval_response", "approval_request_id": request["id"], "approve": True}
        done = final(await turn(ws, create([answer], previous_response_id=asked["id"])))
        assert done["status"] == "completed" and SUSPEND_DONE in text_of(done) and done["id"] != asked["id"]
        after = final(await turn(ws, create("hello", previous_response_id=done["id"])))
    assert after["status"] == "completed"
    history = history_texts(execution_for(api, "hello"))
    assert history[0] == ("user", SUSPEND_ASK) and SUSPEND_DONE in history[-1][1], history


async def test_w_16_1_websocket_and_sse_carry_the_same_events(api: TestClient, auth: dict[str, str]) -> None:
    """One renderer, two framings: the same scripted turn over SSE and over the socket, events compared with their
    ids and times normalised."""
    sse = await stream_response(api, auth, "use tool", store=False)
    records, _ = parse_sse(sse.raw)
    async with await connect(api, auth) as ws:
        events = await turn(ws, create("use tool"))
    assert [r.event for r in records] == [e["type"] for e in events]
    over_sse = normalise("\n".join(r.data for r in records).encode())
    over_socket = normalise(
        "\n".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in events).encode()
    )
    assert over_socket == over_sse


async def test_w_16_1_compaction_output_is_new_input(api: TestClient, auth: dict[str, str]) -> None:
    """The compacted resource's output, sent as the input of a response.create, continues the conversation."""
    async with await connect(api, auth) as ws:
        first = final(await turn(ws, create("Remember the code word: cobalt.", store=True)))
    compacted = await fetch(
        api,
        "POST",
        f"{RESPONSES}/compact",
        headers=auth,
        json={"model": "hermes-agent", "previous_response_id": first["id"]},
    )
    assert compacted.status == 200
    async with await connect(api, auth) as ws:
        response = final(await turn(ws, create([*compacted.json()["output"], "What is the code word?"])))
    assert response["status"] == "completed"


async def test_w_16_1_the_socket_closes_1001_at_shutdown(api: TestClient, auth: dict[str, str]) -> None:
    """At shutdown the drain settles the running turn (its socket gets the terminal event), then every socket is
    closed with 1001 going away."""
    from hermes_api_plugin.http.app import shutdown_apps

    ws = await connect(api, auth)
    await ws.send_json(create("hang"))
    await ws.receive(timeout=10)
    closing = asyncio.ensure_future(shutdown_apps([api.server.app]))
    rest = []
    while True:
        frame = await ws.receive(timeout=20)
        if frame.type is not aiohttp.WSMsgType.TEXT:
            break
        rest.append(json.loads(frame.data))
    await closing
    assert rest and rest[-1]["type"] == "response.cancelled", rest
    assert ws.close_code == 1001
