"""The official OpenAI Python SDK's WebSocket mode (`client.responses.connect()`) against the real gateway process
(WIRE.md §16): response.create events, the §4.2 events parsed into the SDK's types, store:false continuation on the
same connection, the error event for an unknown previous_response_id."""

from __future__ import annotations

import asyncio
from typing import Any

import openai

from tests.helpers import DEFAULT_ANSWER, MODEL
from tests.live import LiveGateway

TERMINALS = ("response.completed", "response.failed", "response.incomplete", "error")


async def _until_terminal(connection: Any) -> list[Any]:
    events = []
    async for event in connection:
        events.append(event)
        if event.type in TERMINALS:
            return events
    raise AssertionError(f"the connection ended first: {events}")


async def _conversation(gateway: LiveGateway) -> tuple[list[Any], list[Any], list[Any]]:
    sdk = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway.key, max_retries=0, timeout=30.0)
    async with sdk.responses.connect() as connection:
        await connection.response.create(model=MODEL, input="hello", store=False)
        first = await _until_terminal(connection)
        await connection.response.create(
            model=MODEL, input="again", store=False, previous_response_id=first[-1].response.id
        )
        second = await _until_terminal(connection)
        await connection.response.create(model=MODEL, input="x", store=False, previous_response_id="resp_missing")
        missing = await _until_terminal(connection)
    await sdk.close()
    return first, second, missing


def test_w_16_1_the_python_sdk_talks_websocket_mode(live_gateway: LiveGateway) -> None:
    first, second, missing = asyncio.run(asyncio.wait_for(_conversation(live_gateway), 60))
    assert [e.type for e in first[:2]] == ["response.created", "response.in_progress"]
    response = first[-1].response
    assert first[-1].type == "response.completed" and response.output_text == DEFAULT_ANSWER
    assert second[-1].type == "response.completed" and second[-1].response.previous_response_id == response.id
    [error] = missing
    assert error.type == "error"
    dumped = error.model_dump()
    assert dumped["status"] == 400 and dumped["error"]["code"] == "previous_response_not_found", dumped
