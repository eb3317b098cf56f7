"""POST /v1/responses/compact's request and the `compaction` item (WIRE.md §16), pure: the body's checks, the opaque
`encrypted_content` encoding, and what a compaction item becomes in a later request's input."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from hermes_api_plugin.core.errors import ApiError
from hermes_api_plugin.protocol.compaction import compacted_resource, parse_compact_request
from hermes_api_plugin.protocol.compaction_item import (
    ENCODING_PREFIX,
    SUMMARY_LEAD,
    compaction_item,
    decode_summary,
    encode_summary,
)
from hermes_api_plugin.protocol.responses import parse_responses_request, resolve_input, stored_item

PARAM = "input[0].encrypted_content"


class NoStore:
    """An item lookup with nothing stored."""

    async def find_item(self, scope: str, item_id: str) -> dict[str, Any] | None:
        return None

    async def find_tool_output(self, scope: str, call_id: str) -> str | None:
        return None


def _error(call: Any) -> ApiError:
    with pytest.raises(ApiError) as caught:
        call()
    return caught.value


@pytest.mark.parametrize("summary", ["", "short", "ünïcödé ✓ and\nlines", "x" * 100_000])
def test_a_summary_round_trips_through_encrypted_content(summary: str) -> None:
    encoded = encode_summary(summary)
    assert encoded.startswith(ENCODING_PREFIX) and "=" not in encoded
    assert decode_summary(encoded, PARAM) == summary


def _b64(payload: bytes) -> str:
    return base64.urlsafe_b64encode(payload).decode().rstrip("=")


@pytest.mark.parametrize(
    "value",
    [
        None,
        42,
        "",
        "opaque-blob-from-openai",
        ENCODING_PREFIX + "!!!not base64!!!",
        ENCODING_PREFIX + _b64(b"\xff\xfe not utf-8"),
        ENCODING_PREFIX + _b64(b"not json"),
        ENCODING_PREFIX + _b64(b"[1,2]"),
        ENCODING_PREFIX + _b64(json.dumps({"v": 2, "summary": "from the future"}).encode()),
        ENCODING_PREFIX + _b64(json.dumps({"v": 1, "summary": 7}).encode()),
    ],
)
def test_a_malformed_encrypted_content_is_a_400_naming_the_item(value: Any) -> None:
    error = _error(lambda: decode_summary(value, PARAM))
    assert (error.status, error.type, error.code, error.param) == (
        400,
        "invalid_request_error",
        "invalid_encrypted_content",
        PARAM,
    )


def test_a_new_compaction_item_has_the_spec_fields() -> None:
    item = compaction_item("the summary")
    assert set(item) == {"type", "id", "encrypted_content"}
    assert item["type"] == "compaction" and item["id"].startswith("ci_")
    assert decode_summary(item["encrypted_content"], PARAM) == "the summary"


def test_the_compact_body_needs_model() -> None:
    error = _error(lambda: parse_compact_request({"input": "hi"}, frozenset()))
    assert (error.status, error.code, error.param) == (400, "missing_required_parameter", "model")


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"model": "m"}, "missing_required_parameter"),
        ({"model": "m", "input": None}, "missing_required_parameter"),
        ({"model": "m", "input": []}, "nothing_to_compact"),
    ],
)
def test_the_compact_body_needs_something_to_compact(body: dict[str, Any], code: str) -> None:
    error = _error(lambda: parse_compact_request(body, frozenset()))
    assert (error.status, error.code, error.param) == (400, code, "input")


def test_the_compact_body_takes_a_string_items_a_chain_and_instructions() -> None:
    assert parse_compact_request({"model": "m", "input": "hi"}, frozenset()).input == ["hi"]
    request = parse_compact_request(
        {"model": "m", "previous_response_id": "resp_1", "instructions": "Be brief."}, frozenset()
    )
    assert (request.input, request.previous_response_id, request.instructions) == ([], "resp_1", "Be brief.")
    assert request.selection.model == "m"


def test_the_compact_body_checks_input_items_as_responses_does() -> None:
    error = _error(lambda: parse_compact_request({"model": "m", "input": [{"type": "nonsense"}]}, frozenset()))
    assert (error.status, error.param) == (400, "input[0]")
    error = _error(lambda: parse_compact_request({"model": "m", "input": [{"type": "compaction"}]}, frozenset()))
    assert (error.status, error.param) == (400, "input[0].encrypted_content")


def test_the_compacted_resource_has_the_spec_fields() -> None:
    resource = compacted_resource("cmp_1", 1700000000, [compaction_item("s")], 10, 3)
    assert set(resource) == {"id", "object", "output", "created_at", "usage"}
    assert resource["object"] == "response.compaction"
    assert resource["usage"]["total_tokens"] == 13


async def test_a_compaction_item_in_input_becomes_the_summary_in_the_history() -> None:
    item = compaction_item("They agreed on blue.")
    request = parse_responses_request({"input": [item, {"role": "user", "content": "and now?"}]}, frozenset())
    resolved = await resolve_input(request.input, NoStore(), "scope", "resp_x")
    summary, turn_input = resolved.messages
    assert (summary.role, summary.text) == ("user", SUMMARY_LEAD + "They agreed on blue.")
    assert (turn_input.role, turn_input.text) == ("user", "and now?")
    assert resolved.stored_items[0]["type"] == "compaction" and resolved.stored_items[0]["id"].startswith("ci_")
    assert stored_item(item, "resp_x", 0)["id"].startswith("ci_")


async def test_a_compaction_item_is_never_the_turn_input() -> None:
    request = parse_responses_request({"input": [compaction_item("s")]}, frozenset())
    with pytest.raises(ApiError) as caught:
        await resolve_input(request.input, NoStore(), "scope", "resp_x")
    assert (caught.value.code, caught.value.param) == ("missing_user_message", "input")


async def test_a_malformed_compaction_item_in_input_is_a_400() -> None:
    request = parse_responses_request(
        {"input": [{"type": "compaction", "encrypted_content": "opaque"}, "hi"]}, frozenset()
    )
    with pytest.raises(ApiError) as caught:
        await resolve_input(request.input, NoStore(), "scope", "resp_x")
    assert (caught.value.status, caught.value.code, caught.value.param) == (
        400,
        "invalid_encrypted_content",
        PARAM,
    )


async def test_a_conversation_to_compact_may_end_with_the_assistant() -> None:
    items = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    resolved = await resolve_input(items, NoStore(), "scope", "cmp_x", turn=False)
    assert [(m.role, m.text) for m in resolved.messages] == [("user", "hi"), ("assistant", "hello")]
