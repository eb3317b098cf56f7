"""The §16 settings of a Responses request: parsed with the spec's defaults, echoed as sent; function tools echoed with
every field the spec's FunctionTool requires (protocol/response_settings.py)."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_api_plugin.core.errors import ApiError
from hermes_api_plugin.protocol.response_settings import ResponseSettings, echoed_tools
from hermes_api_plugin.protocol.responses import parse_responses_request

PROVIDERS = frozenset({"openrouter"})


def settings(**body: Any) -> ResponseSettings:
    return parse_responses_request({"input": "hi", **body}, PROVIDERS).settings


def test_absent_settings_take_the_specs_defaults() -> None:
    assert settings() == ResponseSettings(reasoning={"effort": None, "summary": None})
    assert settings().text == {"format": {"type": "text"}} and settings().service_tier == "default"


def test_sent_settings_are_kept_as_sent() -> None:
    got = settings(temperature=0, top_p=1, top_logprobs=20.0, max_output_tokens=16, text={"verbosity": "low"})
    assert (got.temperature, got.top_p, got.top_logprobs, got.max_output_tokens) == (0, 1, 20, 16)
    assert got.text == {"verbosity": "low", "format": {"type": "text"}}


def test_reasoning_echoes_the_effort_the_turn_runs_with() -> None:
    """model_options' effort wins over `reasoning.effort` (§10.2); reasoning turned off is effort none; a summary
    outside the spec's values is not echoed."""
    assert settings(reasoning={"effort": "low", "summary": "detailed"}).reasoning == {
        "effort": "low",
        "summary": "detailed",
    }
    both = settings(reasoning={"effort": "low"}, model_options={"reasoning": {"effort": "high"}})
    assert both.reasoning == {"effort": "high", "summary": None}
    off = settings(model_options={"reasoning": {"enabled": False}}, reasoning={"summary": "verbose"})
    assert off.reasoning == {"effort": "none", "summary": None}


@pytest.mark.parametrize(
    ("field", "value"),
    [("temperature", float("nan")), ("top_logprobs", 2.5), ("max_tool_calls", 0), ("text", {"format": "text"})],
)
def test_a_bad_setting_is_400_naming_it(field: str, value: Any) -> None:
    with pytest.raises(ApiError) as caught:
        settings(**{field: value})
    assert caught.value.status == 400 and (caught.value.param or "").startswith(field)


def test_function_tools_are_echoed_with_every_field_and_others_as_sent() -> None:
    tools = [
        {"type": "function", "name": "f"},
        {"type": "function", "name": "g", "description": "d", "parameters": {"type": "object"}, "strict": False},
        {"type": "web_search"},
    ]
    assert echoed_tools(tools) == [
        {"type": "function", "name": "f", "description": None, "parameters": None, "strict": True},
        tools[1],
        {"type": "web_search"},
    ]
