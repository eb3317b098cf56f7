"""What the reasoning and commentary options change in a Response: reasoning items off or on, the effort
that reaches the agent, commentary (interim) messages by request header and by config (WIRE.md §10, §4.7;
W-10.1-10.3, W-4.7).

Every request goes through the plugin's startup hook, the real middlewares, the SQLite store and the
scripted runtime (tests/scripts/chat.yaml); nothing on the server side is mocked. Shared helpers:
tests/routes/responses_helpers.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.helpers import (
    RESPONSES,
    USE_TOOL_ANSWER,
    execution_for,
)
from tests.live import executions

from .responses_helpers import create, get_json, message_texts, rejected, stream_response


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
