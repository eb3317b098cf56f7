"""Declared function tools and tool_choice in both shapes (WIRE.md §15.2, §15.3): what the agent is lent, and the
400s of what cannot be."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_api_plugin.core.client_tools import AUTO, FUNCTION, NONE, REQUIRED, ClientTool, ToolChoice
from hermes_api_plugin.core.errors import ApiError
from hermes_api_plugin.protocol.client_tools import (
    CHAT_TOOL,
    RESPONSES_TOOL,
    parse_client_tools,
    parse_tool_choice,
)

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


def chat_tool(name: str = "get_weather", **function: Any) -> dict[str, Any]:
    return CHAT_TOOL.check({"type": "function", "function": {"name": name, **function}}, "tools[0]")  # type: ignore[no-any-return]


def test_both_shapes_lend_the_same_tool() -> None:
    nested = parse_client_tools([chat_tool(description="Weather", parameters=SCHEMA, strict=True)])
    flat_tool = RESPONSES_TOOL.check(
        {"type": "function", "name": "get_weather", "description": "Weather", "parameters": SCHEMA, "strict": True},
        "tools[0]",
    )
    assert nested == parse_client_tools([flat_tool]) == (ClientTool("get_weather", "Weather", SCHEMA, True),)
    assert nested[0].to_json()["function"]["parameters"] == SCHEMA


def test_tools_of_other_types_are_not_lent() -> None:
    web = RESPONSES_TOOL.check({"type": "web_search_preview"}, "tools[0]")
    assert parse_client_tools([web, chat_tool()]) == (ClientTool("get_weather"),)


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "dotted.name"])
def test_a_function_name_a_provider_refuses_is_400(name: str) -> None:
    with pytest.raises(ApiError) as caught:
        chat_tool(name)
    assert caught.value.status == 400 and caught.value.param == "tools[0].function.name"


def test_a_name_declared_twice_is_400() -> None:
    with pytest.raises(ApiError) as caught:
        parse_client_tools([chat_tool(), chat_tool()])
    assert caught.value.param == "tools[1].function.name"


def test_tool_choice_values() -> None:
    tools = parse_client_tools([chat_tool()])
    assert parse_tool_choice(None, tools) == ToolChoice(AUTO)
    assert parse_tool_choice("none", tools) == ToolChoice(NONE)
    assert parse_tool_choice("required", tools) == ToolChoice(REQUIRED)
    named = ToolChoice(FUNCTION, "get_weather")
    assert parse_tool_choice({"type": "function", "function": {"name": "get_weather"}}, tools) == named
    assert parse_tool_choice({"type": "function", "name": "get_weather"}, tools) == named
    assert parse_tool_choice({"type": "allowed_tools", "mode": "auto"}, tools) == ToolChoice(AUTO)
    assert named.offered(tools) == tools and ToolChoice(NONE).offered(tools) == ()


@pytest.mark.parametrize(
    ("choice", "tools"),
    [
        ("sometimes", True),
        (3, True),
        ("required", False),
        ({"type": "function", "function": {"name": "undeclared"}}, True),
        ({"type": "function"}, True),
    ],
)
def test_a_choice_that_cannot_be_honoured_is_400(choice: Any, tools: bool) -> None:
    declared = parse_client_tools([chat_tool()]) if tools else ()
    with pytest.raises(ApiError) as caught:
        parse_tool_choice(choice, declared)
    assert caught.value.status == 400 and caught.value.param == "tool_choice"
