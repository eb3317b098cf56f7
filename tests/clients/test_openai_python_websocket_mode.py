"""The official OpenAI Python SDK's Responses WebSocket mode (`client.responses.connect()`, WIRE.md §16) against the
real gateway process: sync (`ResponsesConnection`) and async (`AsyncResponsesConnection`) — the same events as the
SSE stream, sequential responses, `store: false` and `generate: false` continuations, server tools as `mcp_call`, a
client tool's round trip, error events, the handshake's auth, and the SDK's own reconnect (W-16.1: what the
compliance suite's WebSocket tests ask, through the official client).

How the SDK (openai 3.57.0, `openai[realtime]`: the `websockets` client) talks to the gateway: it derives the socket
URL from `base_url` (`http://host:port/v1` → `ws://host:port/v1/responses`), sends the client's auth headers
(`Authorization: Bearer <key>`) and `connect(extra_headers=…)` in the handshake, `connection.response.create(…)` sends
one `{"type": "response.create", …}` text frame, and `recv()` / iteration parse each text frame into a typed
`ResponsesServerEvent`. An `error` frame is just an event (`ResponseWsError`: `status` and `error.{type, code,
message, param}`); only `dispatch_events()` with no `error` handler raises it, as `OpenAIError`. The SDK reconnects
only when `connect(on_reconnecting=…)` is given and the close code is recoverable (1001, the gateway's close at a
shutdown, is), and only while it is iterated; what is sent meanwhile is queued for the new socket. A reconnected
socket is a new connection, so `store: false` responses of the old one are not continuable there (connection-local).

One gateway per module (`live_gateway`, scripted runtime, tests/scripts/chat.yaml).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.resources.responses.responses import AsyncResponsesConnection, ResponsesConnection
from openai.types.responses.response_output_item import McpCall
from openai.types.responses.responses_server_event import ResponsesServerEvent, ResponseWsError
from openai.types.websocket_reconnection import ReconnectingEvent

from tests.helpers import (
    AUTH_FAILED,
    DEFAULT_ANSWER,
    MODEL,
    RESPONSE_TERMINALS,
    TOOL_RESULT,
    USE_TOOL_ANSWER,
    USE_TOOL_TYPES,
    WEATHER_ARGUMENTS,
    WEATHER_FLAT_TOOL,
    execution_for,
    history_texts,
)
from tests.live import LiveGateway, start_gateway, write_home

from .compat import ROWS

ROW = ROWS["openai-python-websocket"]
UNKNOWN_RESPONSE = "resp_" + "0" * 32
HOSTED_TYPES = ["reasoning", "mcp_call", "message", "reasoning", "message"]  # "use tool" with server tools as mcp_call
TOOL_ARGUMENTS = '{"command":"ls -la"}'


def sdk(gateway: LiveGateway, key: str | None = None) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.url + "/v1", api_key=key or gateway.key, max_retries=0, timeout=60.0)


def async_sdk(gateway: LiveGateway) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway.key, max_retries=0, timeout=60.0)


def ends_a_response(event: ResponsesServerEvent) -> bool:
    return event.type in RESPONSE_TERMINALS or event.type == "error"


def one_response(connection: ResponsesConnection) -> list[ResponsesServerEvent]:
    """The events of the response just created on the socket, up to its terminal event (or an error event)."""
    events = [connection.recv()]
    while not ends_a_response(events[-1]):
        events.append(connection.recv())
    return events


async def async_one_response(connection: AsyncResponsesConnection) -> list[ResponsesServerEvent]:
    events = [await connection.recv()]
    while not ends_a_response(events[-1]):
        events.append(await connection.recv())
    return events


def completed(events: list[ResponsesServerEvent]) -> Any:
    """The Response of a stream that ended with `response.completed`."""
    last = events[-1]
    assert last.type == "response.completed", last
    return last.response


def answer_text(response: Any) -> str:
    """The final answer: message items that are not commentary (WIRE §4.2)."""
    return "".join(
        part.text
        for item in response.output
        if item.type == "message" and getattr(item, "phase", None) != "commentary"
        for part in item.content
    )


def deltas(events: list[ResponsesServerEvent], kind: str) -> str:
    return "".join(getattr(e, "delta", "") for e in events if e.type == kind)


def the_error(events: list[ResponsesServerEvent]) -> ResponseWsError:
    [event] = events
    assert isinstance(event, ResponseWsError), event
    return event


# -- one response, and what the SSE stream says ----------------------------------------------------------------------


def test_a_response_streams_over_the_socket_as_the_sse_stream_does(
    client: openai.OpenAI, live_gateway: LiveGateway
) -> None:
    """§16: the socket carries the SSE stream's events, one typed event per frame — `response.created` first,
    the reasoning summary and answer deltas, the tool items, exactly one terminal `response.completed` whose Response
    has the "use tool" turn's items — and the same event types in the same order as `stream=True` over HTTP."""
    assert ROW.responses.works
    with client.responses.connect() as connection:
        connection.response.create(model=MODEL, input="use tool")
        events = one_response(connection)
    assert [e.type for e in events[:2]] == ["response.created", "response.in_progress"]
    assert [e.sequence_number for e in events] == list(range(len(events)))  # type: ignore[union-attr]
    assert sum(ends_a_response(e) for e in events) == 1
    response = completed(events)
    assert response.status == "completed" and response.id.startswith("resp_")
    assert len({e.response.id for e in events if hasattr(e, "response")}) == 1
    assert [item.type for item in response.output] == USE_TOOL_TYPES
    assert deltas(events, "response.reasoning_summary_text.delta") == "I should look at the files first.Two entries."
    assert deltas(events, "response.output_text.delta") == USE_TOOL_ANSWER
    assert answer_text(response) == USE_TOOL_ANSWER
    assert response.usage is not None and (response.usage.input_tokens, response.usage.output_tokens) == (42, 17)

    with client.responses.create(model=MODEL, input="use tool", stream=True) as sse:
        over_http = [e.type for e in sse]
    assert [e.type for e in events] == over_http
    stored = client.responses.retrieve(response.id)  # store defaults to true, as over HTTP
    assert stored.model_dump(warnings=False) == response.model_dump(warnings=False)


def test_two_responses_run_one_after_another_on_one_socket(client: openai.OpenAI, live_gateway: LiveGateway) -> None:
    """§16: sequential responses on one connection — each its own id, its own sequence numbers from 0 and its own
    terminal event; the second continues the first (stored) with `previous_response_id`, its agent history holding
    the first exchange."""
    second_input = f"second on the socket {uuid.uuid4().hex[:8]}"
    with client.responses.connect() as connection:
        connection.response.create(model=MODEL, input="hello")
        first_events = one_response(connection)
        first = completed(first_events)
        connection.response.create(model=MODEL, input=second_input, previous_response_id=first.id)
        second_events = one_response(connection)
        second = completed(second_events)
    assert first.id != second.id and second.previous_response_id == first.id
    for events in (first_events, second_events):
        assert [e.sequence_number for e in events] == list(range(len(events)))  # type: ignore[union-attr]
        assert deltas(events, "response.output_text.delta") == DEFAULT_ANSWER
    assert answer_text(second) == DEFAULT_ANSWER
    assert history_texts(execution_for(live_gateway, second_input)) == [
        ("user", "hello"),
        ("assistant", DEFAULT_ANSWER),
    ]


# -- store: false on one connection ----------------------------------------------------------------------------------


def test_a_store_false_response_continues_on_its_socket_and_nowhere_else(
    client: openai.OpenAI, live_gateway: LiveGateway
) -> None:
    """§16: a `store: false` response is not retrievable, yet the next `response.create` on the same socket continues
    it with `previous_response_id` (the connection-local cache): the agent sees the first exchange. Another socket
    gets the `previous_response_not_found` error event for the same id, and HTTP its 404 (§4.1)."""
    tag = uuid.uuid4().hex[:8]
    first_input, second_input = f"unstored first {tag}", f"unstored second {tag}"
    with client.responses.connect() as connection:
        connection.response.create(model=MODEL, input=first_input, store=False)
        first = completed(one_response(connection))
        connection.response.create(model=MODEL, input=second_input, store=False, previous_response_id=first.id)
        second = completed(one_response(connection))
    assert (first.store, second.store) == (False, False)
    assert second.previous_response_id == first.id and answer_text(second) == DEFAULT_ANSWER
    assert history_texts(execution_for(live_gateway, second_input)) == [
        ("user", first_input),
        ("assistant", DEFAULT_ANSWER),
    ]

    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(first.id)
    with client.responses.connect() as other:
        other.response.create(model=MODEL, input=f"elsewhere {tag}", store=False, previous_response_id=first.id)
        error = the_error(one_response(other))
    assert (error.status, error.error.code) == (400, "previous_response_not_found")
    with pytest.raises(openai.NotFoundError) as caught:
        client.responses.create(model=MODEL, input=f"over http {tag}", previous_response_id=first.id)
    assert caught.value.code == "response_not_found"


def test_a_warm_up_runs_no_turn_and_the_next_response_continues_it(
    client: openai.OpenAI, live_gateway: LiveGateway
) -> None:
    """§16 (Open Responses `generate: false`, a `response.create` argument of the SDK): the warm-up is a Response
    created and completed with no output, and no agent turn runs; the next `response.create` on the socket continues
    it by `previous_response_id` (kept by the connection: `store: false`), its agent history holding the warm-up's
    input."""
    tag = uuid.uuid4().hex[:8]
    context, question = f"context for later {tag}", f"the question {tag}"
    before = len(live_gateway.executions())
    with client.responses.connect() as connection:
        connection.response.create(model=MODEL, input=context, store=False, generate=False)
        warm_events = one_response(connection)
        warm = completed(warm_events)
        assert len(live_gateway.executions()) == before
        connection.response.create(model=MODEL, input=question, store=False, previous_response_id=warm.id)
        answered = completed(one_response(connection))
    assert warm_events[0].type == "response.created" and warm.output == []
    assert answer_text(answered) == DEFAULT_ANSWER and answered.previous_response_id == warm.id
    assert history_texts(execution_for(live_gateway, question)) == [("user", context)]


# -- tools -----------------------------------------------------------------------------------------------------------


def test_the_server_tool_is_an_mcp_call_item_with_a_client_tool_declared(client: openai.OpenAI) -> None:
    """§15.3 over the socket: with a client function tool declared, the server's terminal tool is one `mcp_call`
    item (`server_label` "hermes", arguments and output) that the SDK parses as `McpCall`, with its typed
    `response.mcp_call.*` events — never a `function_call` a tool loop would run."""
    assert ROW.client_tools.works
    with client.responses.connect() as connection:
        connection.response.create(model=MODEL, input="use tool", tools=[WEATHER_FLAT_TOOL])  # type: ignore[list-item]
        events = one_response(connection)
    response = completed(events)
    assert [item.type for item in response.output] == HOSTED_TYPES
    call = response.output[1]
    assert isinstance(call, McpCall)
    assert (call.server_label, call.name, call.arguments, call.output) == (
        "hermes",
        "terminal",
        TOOL_ARGUMENTS,
        TOOL_RESULT,
    )
    assert [e.type for e in events if e.type.startswith("response.mcp_call")] == [
        "response.mcp_call.in_progress",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_call.completed",
    ]
    assert answer_text(response) == USE_TOOL_ANSWER


def test_the_handshake_header_asks_for_hosted_tool_items(live_gateway: LiveGateway) -> None:
    """§15.3, §16: `connect(extra_headers={"X-Hermes-Tool-Items": "hosted"})` — the only place the SDK puts headers on
    this transport — renders the server tool as an `mcp_call` for every response on that socket."""
    with (
        sdk(live_gateway) as client,
        client.responses.connect(extra_headers={"X-Hermes-Tool-Items": "hosted"}) as connection,
    ):
        connection.response.create(model=MODEL, input="use tool")
        response = completed(one_response(connection))
    assert [item.type for item in response.output] == HOSTED_TYPES


def test_a_client_function_call_round_trips_on_one_socket(client: openai.OpenAI, live_gateway: LiveGateway) -> None:
    """§15.3 over the socket: the response ends with the client tool's `function_call` (its argument deltas
    streamed); the next `response.create` on the same socket answers it with `function_call_output` and
    `previous_response_id`, which resumes the same run — the agent answers with the tool's result."""
    prompt = f"weather over the socket {uuid.uuid4().hex[:8]}"
    tools: Any = [WEATHER_FLAT_TOOL]
    with client.responses.connect() as connection:
        connection.response.create(model=MODEL, input=prompt, tools=tools)
        events = one_response(connection)
        asked = completed(events)
        call = asked.output[-1]
        assert call.type == "function_call" and call.name == "get_weather"
        assert json.loads(deltas(events, "response.function_call_arguments.delta")) == json.loads(WEATHER_ARGUMENTS)
        output: Any = [{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}]
        connection.response.create(model=MODEL, input=output, previous_response_id=asked.id, tools=tools)
        answered = completed(one_response(connection))
    assert answer_text(answered) == "get_weather returned: sunny"
    execution = execution_for(live_gateway, prompt)  # one execution: the answer resumed the turn
    assert answered.id != asked.id and execution["turn_id"]


# -- errors ----------------------------------------------------------------------------------------------------------


def test_an_unknown_previous_response_id_is_an_error_event_and_the_socket_goes_on(
    client: openai.OpenAI, live_gateway: LiveGateway
) -> None:
    """§16: an unknown `previous_response_id` → one `error` event (status 400, `previous_response_not_found`,
    param `previous_response_id`), parsed as `ResponseWsError`; nothing runs, and the next response on the same socket
    streams as usual."""
    before = len(live_gateway.executions())
    with client.responses.connect() as connection:
        connection.response.create(model=MODEL, input="hello", previous_response_id=UNKNOWN_RESPONSE)
        error = the_error(one_response(connection))
        assert len(live_gateway.executions()) == before
        connection.response.create(model=MODEL, input="hello")
        after = completed(one_response(connection))
    assert error.status == 400
    assert (error.error.type, error.error.code, error.error.param) == (
        "invalid_request_error",
        "previous_response_not_found",
        "previous_response_id",
    )
    assert answer_text(after) == DEFAULT_ANSWER


def test_dispatch_events_raises_the_error_event_without_an_error_handler(client: openai.OpenAI) -> None:
    """The SDK's push-style loop: `dispatch_events()` runs the `response.*` handlers and, with no `error` handler,
    raises the error event as `OpenAIError`."""
    seen: list[str] = []
    with client.responses.connect() as connection:

        @connection.on("response.completed")
        def then_continue_an_unknown_one(event: Any) -> None:
            seen.append(event.response.id)
            connection.response.create(model=MODEL, input="hello", previous_response_id=UNKNOWN_RESPONSE)

        connection.response.create(model=MODEL, input="hello")
        with pytest.raises(openai.OpenAIError, match="previous_response_not_found"):
            connection.dispatch_events()
    assert len(seen) == 1


def test_a_wrong_key_is_refused_at_the_handshake(live_gateway: LiveGateway) -> None:
    """§16: the same authentication as HTTP — a wrong key fails the upgrade with 401 and the error envelope, which
    the SDK surfaces as the `websockets` client's `InvalidStatus` from `connect()`."""
    from websockets.exceptions import InvalidStatus

    with sdk(live_gateway, key="wrong-key-0123456789") as client, pytest.raises(InvalidStatus) as caught:
        client.responses.connect().enter()
    assert caught.value.response.status_code == 401
    assert json.loads(caught.value.response.body or b"{}") == AUTH_FAILED


# -- reconnecting --------------------------------------------------------------------------------------------------


def test_the_sdk_reconnects_after_a_gateway_restart_and_the_new_socket_keeps_nothing(tmp_path: Path) -> None:
    """The SDK's own reconnect (`connect(on_reconnecting=…)`): a gateway shutting down closes the socket 1001 (going
    away, recoverable to the SDK), the SDK opens a new socket to the restarted gateway and sends what was queued
    meanwhile there. The new connection keeps nothing: continuing the old socket's `store: false` response is
    `previous_response_not_found`, while a stored response continues."""
    home = write_home(tmp_path / "home")
    gateways = [start_gateway(home)]
    attempts: list[ReconnectingEvent] = []
    try:
        with sdk(gateways[0]) as client:

            def reconnecting(event: ReconnectingEvent) -> None:
                attempts.append(event)
                if len(attempts) == 1:  # sent once the new socket is open (the SDK queues it meanwhile)
                    connection.response.create(model=MODEL, input="again", store=False, previous_response_id=unkept.id)

            connection = client.responses.connect(on_reconnecting=reconnecting, initial_delay=0.2).enter()
            try:
                connection.response.create(model=MODEL, input="hello", store=False)
                unkept = completed(one_response(connection))
                connection.response.create(model=MODEL, input="hello")
                stored = completed(one_response(connection))
                gateways[0].stop()
                gateways.append(start_gateway(home, {"API_SERVER_PORT": str(gateways[0].port)}))
                error = the_error([next(iter(connection))])  # the iterator reconnects, then reads the new socket
                connection.response.create(model=MODEL, input="hello", previous_response_id=stored.id)
                continued = completed(one_response(connection))
            finally:
                connection.close()
    finally:
        for gateway in gateways:
            gateway.stop()
    assert attempts[0].close_code == 1001
    assert (error.status, error.error.code) == (400, "previous_response_not_found")
    assert continued.previous_response_id == stored.id and answer_text(continued) == DEFAULT_ANSWER


# -- the async connection --------------------------------------------------------------------------------------------


def test_the_async_connection_streams_continues_unstored_and_reports_errors(live_gateway: LiveGateway) -> None:
    """`AsyncOpenAI.responses.connect()`: the same protocol through `async for` and `await recv()` — a response with
    its reasoning and answer deltas, a `store: false` continuation on the socket, and the error event of an unknown
    id, all on one connection."""
    second_input = f"async second {uuid.uuid4().hex[:8]}"

    async def main() -> tuple[list[ResponsesServerEvent], Any, ResponsesServerEvent]:
        client = async_sdk(live_gateway)
        try:
            async with client.responses.connect() as connection:
                await connection.response.create(model=MODEL, input="hello", store=False)
                events: list[ResponsesServerEvent] = []
                async for event in connection:
                    events.append(event)
                    if ends_a_response(event):
                        break
                await connection.response.create(
                    model=MODEL, input=second_input, store=False, previous_response_id=completed(events).id
                )
                second = completed(await async_one_response(connection))
                await connection.response.create(model=MODEL, input="hello", previous_response_id=UNKNOWN_RESPONSE)
                [error] = await async_one_response(connection)
                return events, second, error
        finally:
            await client.close()

    events, second, error = asyncio.run(main())
    assert deltas(events, "response.reasoning_summary_text.delta") == "Thinking it through."
    assert deltas(events, "response.output_text.delta") == DEFAULT_ANSWER
    assert answer_text(second) == DEFAULT_ANSWER and second.previous_response_id == completed(events).id
    assert history_texts(execution_for(live_gateway, second_input)) == [
        ("user", "hello"),
        ("assistant", DEFAULT_ANSWER),
    ]
    assert isinstance(error, ResponseWsError) and error.error.code == "previous_response_not_found"
