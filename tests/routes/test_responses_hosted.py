"""The server's own tools as `mcp_call` items (WIRE.md §15.3, W-15.3): chosen per response by declared client
function tools, `X-Hermes-Tool-Items: hosted` or `api_server.responses.tool_items: hosted`; the same rendering in
the create stream and JSON, the stored object, GET JSON, GET ?stream=true and a keyed replay. And what an agent
loop sends back: a `function_call_output` for a server-executed call is ignored (never 400), an `mcp_call` item is
history.

Every request goes through the plugin's startup hook, the real middlewares, the SQLite store and the scripted
runtime (tests/scripts/chat.yaml); nothing on the server side is mocked.
"""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from hermes_api_plugin.protocol.responses import NOTHING_NEW
from tests.conftest import ApiFactory
from tests.helpers import RESPONSES, USE_TOOL_ANSWER, execution_for, executions, wait_for_async

from .responses_helpers import (
    ResponseStream,
    create,
    get_json,
    get_stream,
    history_of,
    snapshot,
    stream_response,
)

CLIENT_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
HOSTED = {"X-Hermes-Tool-Items": "hosted"}
HOSTED_TYPES = ["reasoning", "mcp_call", "message", "reasoning", "message"]
PAIR_TYPES = ["reasoning", "function_call", "function_call_output", "message", "reasoning", "message"]


def output_types(response: dict[str, Any]) -> list[str]:
    return [i["type"] for i in response["output"]]


def assert_no_function_call(stream: ResponseStream) -> None:
    """W-15.3: no server tool rendered as a function_call, in any event of the stream."""
    assert not [e for e in stream.events if e.get("item", {}).get("type") in ("function_call", "function_call_output")]
    assert not [n for n in stream.names if n.startswith("response.function_call")]


async def test_with_client_tools_declared_no_server_tool_is_rendered_as_a_function_call(
    api: TestClient, auth: dict[str, str]
) -> None:
    """W-15.3: with client tools declared, no server tool is rendered as a function_call — the create stream shows
    the agent's `terminal` as one mcp_call item with its MCP events; the stored object, GET JSON, the GET replay
    (same events, same sequence numbers) and a resume render it the same way."""
    stream = await stream_response(api, auth, "use tool", tools=[CLIENT_TOOL])
    assert_no_function_call(stream)
    assert output_types(stream.response) == HOSTED_TYPES
    call = stream.response["output"][1]
    assert call == {
        "id": call["id"],
        "type": "mcp_call",
        "status": "completed",
        "server_label": "hermes",
        "name": "terminal",
        "arguments": '{"command":"ls -la"}',
        "output": "README.md\nsrc/",
        "error": None,
    }
    assert [n for n in stream.names if "mcp_call" in n] == [
        "response.mcp_call.in_progress",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_call.completed",
    ]
    assert stream.response["tools"] == [{**CLIENT_TOOL, "strict": True}]  # §16: strict as OpenAI defaults it
    response_id = stream.response["id"]
    assert await snapshot(api, auth, response_id) == stream.response
    replay = await get_stream(api, auth, response_id)
    assert replay.raw == stream.raw
    after = 5
    resumed = await get_stream(api, auth, response_id, f"&starting_after={after}")
    assert resumed.events == [e for e in stream.events if e["sequence_number"] > after]


async def test_hosted_json_reply_and_keyed_replay_render_as_the_request_asked(
    api: TestClient, auth: dict[str, str]
) -> None:
    """W-15.3, §5: a keyed request with `X-Hermes-Tool-Items: hosted` is replayed byte for byte — as mcp_call items —
    also by a retry without the header (the mode is the response's own, stored in its reply); the JSON reply of a
    request with client tools has the mcp_call item and equals the stored object."""
    key = {"Idempotency-Key": "hosted-replay-1"}
    body = {"model": "hermes-agent", "input": "use tool", "stream": True}
    async with api.post(RESPONSES, json=body, headers={**auth, **key, **HOSTED}) as resp:
        assert resp.status == 200
        first = await resp.read()
    async with api.post(RESPONSES, json=body, headers={**auth, **key}) as resp:
        assert resp.status == 200 and resp.headers["Idempotency-Replayed"] == "true"
        again = await resp.read()
    assert again == first and b'"type":"mcp_call"' in first and b"function_call" not in first

    _, reply = await create(api, auth, "use tool", tools=[CLIENT_TOOL])
    assert output_types(reply) == HOSTED_TYPES
    assert await snapshot(api, auth, reply["id"]) == reply


async def test_the_header_asks_for_hosted_and_without_it_or_client_tools_the_pair_stays(
    api: TestClient, auth: dict[str, str]
) -> None:
    """§15.3: `X-Hermes-Tool-Items: hosted` (any case) gives mcp_call items without declared tools; a request with
    neither (a non-function tool declared counts as none) keeps the §4.2 pair; GET shows each response in its
    own mode whatever header the GET sends."""
    stream = await stream_response(api, auth, "use tool", headers={"X-Hermes-Tool-Items": "Hosted"})
    assert_no_function_call(stream)
    assert output_types(stream.response) == HOSTED_TYPES

    plain = await stream_response(api, auth, "use tool", tools=[{"type": "web_search"}])
    assert output_types(plain.response) == PAIR_TYPES
    status, got = await get_json(api, auth, f"{RESPONSES}/{plain.response['id']}", HOSTED)
    assert status == 200 and got == plain.response
    assert (await get_stream(api, auth, plain.response["id"], headers=HOSTED)).raw == plain.raw
    assert (await get_stream(api, auth, stream.response["id"])).raw == stream.raw


async def test_tool_items_off_hides_the_mcp_call_items_of_a_hosted_response(
    api: TestClient, auth: dict[str, str]
) -> None:
    """§1.6 with §15.3: `off` filters a delivery of a hosted response too (its mode stays hosted in the store)."""
    stream = await stream_response(api, auth, "use tool", tools=[CLIENT_TOOL])
    off = {"X-Hermes-Tool-Items": "off"}
    status, got = await get_json(api, auth, f"{RESPONSES}/{stream.response['id']}", off)
    assert status == 200 and output_types(got) == ["reasoning", "message", "reasoning", "message"]
    filtered = await get_stream(api, auth, stream.response["id"], headers=off)
    assert not [n for n in filtered.names if "mcp_call" in n]
    assert output_types(filtered.response) == output_types(got)


async def test_the_configured_mode_makes_every_response_hosted(make_api: ApiFactory, auth: dict[str, str]) -> None:
    """§15.3: `api_server.responses.tool_items: hosted` renders the server's tools as mcp_call items by default."""
    api = await make_api(config={"api_server": {"responses": {"tool_items": "hosted"}}})
    stream = await stream_response(api, auth, "use tool")
    assert_no_function_call(stream)
    assert output_types(stream.response) == HOSTED_TYPES


async def test_a_function_call_output_for_a_server_call_after_previous_response_id_is_ignored(
    api: TestClient, auth: dict[str, str]
) -> None:
    """§15.3: an agent loop sends back a result for the server's own `terminal` call with previous_response_id
    (pydantic-ai, `llm -T`): 200, never missing_user_message; the agent is not given a second result of that call
    (a tool result without its call, which providers refuse) and, with nothing new, is told so; a later user
    message in the same request is the turn input as usual."""
    _, first = await create(api, auth, "use tool")
    (call,) = [i for i in first["output"] if i["type"] == "function_call"]
    echoed = {"type": "function_call_output", "call_id": call["call_id"], "output": "Unknown tool: terminal"}
    _, reply = await create(api, auth, [echoed], previous_response_id=first["id"])
    assert reply["status"] == "completed"
    seen = execution_for(api, NOTHING_NEW)
    assert ("tool", "README.md\nsrc/", "tool_call_id") in history_of(seen), "the chain keeps the real result"
    assert ("tool", "Unknown tool: terminal", "tool_call_id") not in history_of(seen)

    _, later = await create(api, auth, [echoed, "hosted ignore next"], previous_response_id=first["id"])
    assert later["status"] == "completed"
    assert ("tool", "Unknown tool: terminal", "tool_call_id") not in history_of(
        execution_for(api, "hosted ignore next")
    )


async def test_a_resent_history_ending_in_a_result_for_a_server_call_is_not_refused(
    api: TestClient, auth: dict[str, str]
) -> None:
    """§15.3: the whole history sent back (no previous_response_id) with the server's call, its stored output and
    the client's own second result for it: 200; the pair is history with the stored output, the second result is
    dropped."""
    _, first = await create(api, auth, "use tool")
    call = next(i for i in first["output"] if i["type"] == "function_call")
    out = next(i for i in first["output"] if i["type"] == "function_call_output")
    answer = first["output"][-1]
    items = [
        {"role": "user", "content": "use tool"},
        {"type": "function_call", "call_id": call["call_id"], "name": call["name"], "arguments": call["arguments"]},
        {"type": "function_call_output", "call_id": out["call_id"], "output": "tampered"},
        {"type": "message", "role": "assistant", "content": answer["content"]},
        {"type": "function_call_output", "call_id": call["call_id"], "output": "Unknown tool: terminal"},
    ]
    async with api.post(RESPONSES, json={"model": "hermes-agent", "input": items}, headers=auth) as resp:
        assert resp.status == 200, await resp.text()
        body = await resp.json()
    assert body["status"] == "completed", body
    history = history_of(execution_for(api, NOTHING_NEW))
    assert history == [
        ("user", "use tool"),
        ("assistant", "", ("terminal",)),
        ("tool", "README.md\nsrc/", "tool_call_id"),
        ("assistant", USE_TOOL_ANSWER),
    ]


async def test_a_resent_history_ending_in_the_servers_own_call_and_result_is_answered_not_refused(
    api: TestClient, auth: dict[str, str]
) -> None:
    """§15.3, as the Vercel AI SDK's agent loop sends it: the user message, the server's call and the SDK's own tool
    error for it last (no answer in between, no previous_response_id). The pair is history with the stored output,
    nothing new arrived, so the agent is told so instead of 400 missing_user_message. A client's own call and
    result last (a call id the server never ran, no turn waits for it) is the agent's input: it continues with the
    result, the call and its result out of the history (as chat does)."""
    _, first = await create(api, auth, "use tool")
    call = next(i for i in first["output"] if i["type"] == "function_call")
    resent = [
        {"role": "user", "content": "use tool"},
        {"type": "function_call", "call_id": call["call_id"], "name": call["name"], "arguments": call["arguments"]},
        {"type": "function_call_output", "call_id": call["call_id"], "output": "NoSuchToolError: terminal"},
    ]
    _, reply = await create(api, auth, resent)
    assert reply["status"] == "completed"
    assert history_of(execution_for(api, NOTHING_NEW))[-1] == ("tool", "README.md\nsrc/", "tool_call_id")

    own = {"type": "function_call", "call_id": "call_client_1", "name": "lookup", "arguments": "{}"}
    result = {"type": "function_call_output", "call_id": "call_client_1", "output": "42"}
    body = {"model": "hermes-agent", "input": [{"role": "user", "content": "x"}, own, result]}
    async with api.post(RESPONSES, json=body, headers=auth) as resp:
        assert resp.status == 200, await resp.text()
        await resp.read()  # the whole reply: a client leaving after the early head would cancel the turn (§5.5)
    results = "[Result of the client's tool call call_client_1]\n42"
    await wait_for_async(lambda: [e for e in executions(api.home) if e["input"]["content"][0]["text"] == results])
    given = execution_for(api, results)
    assert history_of(given) == [("user", "x")]


async def test_mcp_call_items_sent_back_are_history(api: TestClient, auth: dict[str, str]) -> None:
    """§15.3: an agent loop that resends the whole conversation (the Agents SDK's to_input_list) sends the mcp_call
    items it was given: accepted as history (the call and its output), never executed, never 400."""
    _, first = await create(api, auth, "use tool", tools=[CLIENT_TOOL])
    items = [{"role": "user", "content": "use tool"}, *first["output"], "hosted history next"]
    _, reply = await create(api, auth, items, tools=[CLIENT_TOOL])
    assert reply["status"] == "completed"
    history = history_of(execution_for(api, "hosted history next"))
    assert ("assistant", "", ("terminal",)) in history
    assert ("tool", "README.md\nsrc/", "tool_call_id") in history
