"""WebSocket mode's client message (WIRE.md §16): a create body with `type`, `generate` and the per-message
`idempotency_key`, never the HTTP transport fields (but for the values a socket implies, `stream: true` and
`background: false`: the Agents SDK sends `stream: true`); its §5.2 identity is the same body's over HTTP; errors become
Open Responses' WebSocket error event."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_api_plugin.core.errors import ApiError, not_found
from hermes_api_plugin.protocol.responses import parse_responses_request
from hermes_api_plugin.protocol.responses_socket import (
    error_event,
    parse_socket_create,
    previous_named,
)
from hermes_api_plugin.submission.conversations import response_not_found

BODY: dict[str, Any] = {"model": "hermes-agent", "input": "hello", "instructions": "Be brief.", "store": False}


def test_a_message_is_the_create_body_streamed_with_its_own_fields_taken_out() -> None:
    message = parse_socket_create(
        {"type": "response.create", "generate": False, "idempotency_key": " k-1 ", **BODY}, frozenset()
    )
    assert message.generate is False and message.key == "k-1"
    assert message.body.stream is True and message.body.store is False and message.body.instructions == "Be brief."
    assert parse_socket_create({"type": "response.create", **BODY}, frozenset()).generate is True


def test_the_identity_is_the_same_body_posted_over_http() -> None:
    """§5.2: a keyed retry over HTTP (stream or not) or on another socket finds the same admission."""
    socket = parse_socket_create({"type": "response.create", "idempotency_key": "k", **BODY}, frozenset())
    for posted in (BODY, {**BODY, "stream": True}):
        assert socket.body.identity() == parse_responses_request(posted, frozenset()).identity()
    other = parse_socket_create({"type": "response.create", **BODY, "input": "other"}, frozenset())
    assert other.body.identity() != socket.body.identity()


@pytest.mark.parametrize(
    ("message", "code", "param"),
    [
        ({"input": "x"}, "unknown_event_type", "type"),
        ({"type": "response.cancel", "input": "x"}, "unknown_event_type", "type"),
        ({"type": "response.create", "input": "x", "stream": "true"}, "unsupported_parameter", "stream"),
        ({"type": "response.create", "input": "x", "stream": False}, "unsupported_parameter", "stream"),
        ({"type": "response.create", "input": "x", "stream_options": {}}, "unsupported_parameter", "stream_options"),
        ({"type": "response.create", "input": "x", "background": True}, "unsupported_parameter", "background"),
        ({"type": "response.create", "input": "x", "generate": 0}, "invalid_parameter", "generate"),
        ({"type": "response.create", "input": "x", "idempotency_key": 7}, "invalid_idempotency_key", "idempotency_key"),
        (
            {"type": "response.create", "input": "x", "idempotency_key": ""},
            "invalid_idempotency_key",
            "idempotency_key",
        ),
        ({"type": "response.create"}, "missing_required_parameter", "input"),
    ],
)
def test_a_bad_message_is_a_400_naming_its_field(message: dict[str, Any], code: str, param: str) -> None:
    with pytest.raises(ApiError) as refused:
        parse_socket_create(message, frozenset())
    assert (refused.value.status, refused.value.code, refused.value.param) == (400, code, param)


def test_previous_named_reads_an_unchecked_message() -> None:
    assert previous_named({"previous_response_id": "resp_1"}) == "resp_1"
    assert previous_named({"previous_response_id": 3}) is None and previous_named(None) is None


def test_error_events_carry_the_status_and_name_a_missing_previous_response_as_websocket_mode_does() -> None:
    event = error_event(response_not_found("previous_response_id"))
    assert event == {
        "type": "error",
        "status": 400,
        "error": {
            "message": "No response with that id is stored or kept by this connection",
            "type": "invalid_request_error",
            "param": "previous_response_id",
            "code": "previous_response_not_found",
        },
    }
    other = error_event(not_found("No such thing"))
    assert other["status"] == 404 and other["error"]["code"] == "not_found"


@pytest.mark.parametrize("implied", [{"stream": True}, {"background": False}, {"stream": True, "background": False}])
def test_the_transport_values_a_socket_implies_are_accepted(implied: dict[str, Any]) -> None:
    """The OpenAI Agents SDK's `OpenAIResponsesWSModel` puts `"stream": true` in every message it sends."""
    message = parse_socket_create({"type": "response.create", "input": "hi", **implied}, frozenset())
    assert message.body.stream is True and message.body.background is False
