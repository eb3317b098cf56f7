"""How a Responses request's server tools render (WIRE.md §1.6, §15.3): the X-Hermes-Tool-Items header's modes,
parsed before submit, and the hosted decision from declared tools, the header and the configured default."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_api_plugin.protocol.common import parse_hermes_headers, tool_items_mode, tool_items_shown
from hermes_api_plugin.protocol.responses import hosted_tools, parse_responses_request

FUNCTION_TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}


@pytest.mark.parametrize(
    ("sent", "mode"),
    [(None, "on"), ("on", "on"), ("off", "off"), (" OFF ", "off"), ("hosted", "hosted"), ("Hosted", "hosted")]
    + [("mcp", "on"), ("", "on")],
)
def test_the_header_value_is_a_mode_in_any_case_and_anything_else_is_on(sent: str | None, mode: str) -> None:
    headers = {} if sent is None else {"X-Hermes-Tool-Items": sent}
    assert tool_items_mode(headers) == mode
    assert parse_hermes_headers(headers).tool_items == mode
    assert tool_items_shown(headers) is (mode != "off")
    assert parse_hermes_headers(headers).tool_items_shown is (mode != "off")


@pytest.mark.parametrize(
    ("tools", "header", "configured", "hosted"),
    [
        ([], "on", "on", False),
        ([{"type": "web_search"}], "on", "on", False),  # no function tool: nothing of the client's to confuse
        ([FUNCTION_TOOL], "on", "on", True),
        ([FUNCTION_TOOL], "off", "on", True),  # off filters the delivery; the response is still hosted
        ([], "hosted", "on", True),
        ([], "on", "hosted", True),
    ],
)
def test_hosted_when_client_function_tools_are_declared_or_asked_for(
    tools: list[Any], header: str, configured: str, hosted: bool
) -> None:
    """W-15.3: with client tools declared, the server's tools are never rendered as function calls."""
    request = parse_responses_request({"input": "hi", "tools": tools}, frozenset())
    assert hosted_tools(request, header, configured) is hosted
