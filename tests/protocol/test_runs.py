"""protocol/runs.py: the client tools of POST /v1/runs (WIRE.md §15.4) — either dialect's shape parsed into the same
`ClientTool`s, `tool_choice` into a `ToolChoice` — and what stays out of the §5.2 identity."""

from __future__ import annotations

import pytest

from hermes_api_plugin.core.client_tools import CHOOSE_AUTO, FUNCTION, NONE, ClientTool, ToolChoice
from hermes_api_plugin.core.errors import ApiError
from hermes_api_plugin.protocol.runs import parse_run_request
from tests.helpers import WEATHER_TOOL

PROVIDERS = frozenset({"openrouter"})
FLAT = {"type": "function", **WEATHER_TOOL["function"]}
WEATHER = ClientTool(
    name="get_weather",
    description="The weather in a city",
    parameters=WEATHER_TOOL["function"]["parameters"],
)


def test_both_shapes_declare_the_same_tool_and_other_types_are_not_offered() -> None:
    for tool in (WEATHER_TOOL, FLAT):
        run = parse_run_request({"input": "hi", "tools": [tool, {"type": "web_search"}]}, None, PROVIDERS)
        assert run.client_tools == (WEATHER,) and run.tool_choice == CHOOSE_AUTO
    plain = parse_run_request({"input": "hi"}, None, PROVIDERS)
    assert plain.client_tools == () and plain.tool_choice == CHOOSE_AUTO


def test_tool_choice_in_either_shape() -> None:
    def choice(value: object) -> ToolChoice:
        return parse_run_request({"input": "hi", "tools": [FLAT], "tool_choice": value}, None, PROVIDERS).tool_choice

    assert choice("none") == ToolChoice(NONE)
    named = ToolChoice(FUNCTION, "get_weather")
    assert choice({"type": "function", "name": "get_weather"}) == named
    assert choice({"type": "function", "function": {"name": "get_weather"}}) == named
    with pytest.raises(ApiError) as caught:
        choice({"type": "function", "name": "unknown"})
    assert (caught.value.status, caught.value.param) == (400, "tool_choice")


def test_tools_are_not_identity() -> None:
    """§5.2: a run's identity is its input, instructions, history, chain and model selection; not its tools."""
    bare = parse_run_request({"input": "hi"}, None, PROVIDERS).identity()
    lent = parse_run_request({"input": "hi", "tools": [WEATHER_TOOL], "tool_choice": "required"}, None, PROVIDERS)
    assert lent.identity() == bare
