"""Input items: what each form of `input` becomes in the agent's history (messages, function calls and
outputs, item references, images), and the inputs that are refused (WIRE.md §4.1; W-4.15).

Every request goes through the plugin's startup hook, the real middlewares, the SQLite store and the
scripted runtime (tests/scripts/chat.yaml); nothing on the server side is mocked. Shared helpers:
tests/routes/responses_helpers.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.helpers import (
    DEFAULT_ANSWER,
    RESPONSES,
    USE_TOOL_ANSWER,
    execution_for,
)
from tests.live import executions

from .responses_helpers import USE_TOOL_SUMMARY, create, get_json, history_of, rejected


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
        [{"role": "system", "content": "only system"}],
        [{"type": "reasoning", "summary": []}],
        [{"role": "user", "content": [{"type": "input_text", "text": "  "}]}],
    ],
    ids=[
        "empty-string",
        "empty-list",
        "blank-string",
        "assistant-last",
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
