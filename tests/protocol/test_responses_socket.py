"""A `response.create` message of the WebSocket mode (WIRE.md §16): the HTTP transport fields are refused, except with
the value a socket implies — the OpenAI Agents SDK's `OpenAIResponsesWSModel` sends `"stream": true` in every one."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_api_plugin.core.errors import ApiError
from hermes_api_plugin.protocol.responses_socket import parse_socket_create


@pytest.mark.parametrize("implied", [{"stream": True}, {"background": False}, {"stream": True, "background": False}])
def test_the_values_a_socket_implies_are_accepted(implied: dict[str, Any]) -> None:
    create = parse_socket_create({"type": "response.create", "input": "hi", **implied}, frozenset())
    assert create.body.stream is True and create.body.background is False


@pytest.mark.parametrize(
    "field", [{"stream": False}, {"background": True}, {"stream_options": {"include_usage": True}}, {"stream": "true"}]
)
def test_other_transport_values_are_refused_naming_the_field(field: dict[str, Any]) -> None:
    with pytest.raises(ApiError) as caught:
        parse_socket_create({"type": "response.create", "input": "hi", **field}, frozenset())
    assert (caught.value.status, caught.value.code, caught.value.param) == (
        400,
        "unsupported_parameter",
        next(iter(field)),
    )
