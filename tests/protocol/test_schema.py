"""protocol/schema.py: one node both checks a body (this project's codes and params) and renders its JSON Schema."""

from __future__ import annotations

import re
import sys
from typing import Any

import jsonschema_rs
import pytest

from hermes_api_plugin.core.content import parse_content
from hermes_api_plugin.core.errors import ApiError
from hermes_api_plugin.protocol.common import CONTENT, NOT_ONLY_SPACE, SESSION_ID, check_session_id
from hermes_api_plugin.protocol.params import IntText, Param, parse_params
from hermes_api_plugin.protocol.schema import AnyJson, Arr, Bool, Either, Obj, Prop, Str, Tagged

ITEM = Obj(name="Item", props=(Prop("role", Str(enum=("user", "assistant")), True), Prop("text", Str())))
BODY = Obj(
    props=(
        Prop("items", Arr(ITEM, max_items=3), True),
        Prop("stream", Bool()),
        Prop("input", Either((Str(), Arr(Str())), expected="a string or an array of strings")),
        Prop("history", Arr(Obj((Prop("role", Str(), True), Prop("content", Str(), True)), whole=True))),
        Prop("kind", Tagged("type", {"a": Obj((Prop("type", Str(enum=("a",)), True),))}, default="a")),
        Prop("extra", AnyJson()),
    )
)


def error_of(value: Any) -> tuple[str | None, str | None]:
    with pytest.raises(ApiError) as caught:
        BODY.check(value, "")
    return caught.value.code, caught.value.param


def test_a_valid_body_is_normalised_booleans_folded_and_nulls_dropped() -> None:
    body = {"items": [{"role": "user"}], "stream": "yes", "input": None, "unknown": 1}
    assert BODY.check(body, "") == {"items": [{"role": "user"}], "stream": True, "unknown": 1}


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({}, "missing_required_parameter", "items"),
        ({"items": None}, "missing_required_parameter", "items"),
        ({"items": {}}, "invalid_parameter", "items"),
        ({"items": [1]}, "invalid_parameter", "items[0]"),
        ({"items": [{"text": "x"}]}, "invalid_parameter", "items[0].role"),
        ({"items": [{"role": "tool"}]}, "invalid_parameter", "items[0].role"),
        ({"items": [{"role": "user"}] * 4}, "invalid_parameter", "items"),
        ({"items": [], "stream": "maybe"}, "invalid_parameter", "stream"),
        ({"items": [], "input": 3}, "invalid_parameter", "input"),
        ({"items": [], "input": ["a", 3]}, "invalid_parameter", "input[1]"),
        ({"items": [], "history": [{"role": "user"}]}, "invalid_parameter", "history[0]"),
        ({"items": [], "kind": {"type": "b"}}, "invalid_parameter", "kind"),
    ],
)
def test_each_violation_names_its_path(body: dict[str, Any], code: str, param: str) -> None:
    assert error_of(body) == (code, param)


def test_the_rendered_schema_says_what_the_check_enforces() -> None:
    defs: dict[str, Any] = {}
    schema = BODY.render(defs)
    assert schema["required"] == ["items"]
    assert schema["properties"]["items"] == {
        "type": "array",
        "items": {"$ref": "#/components/schemas/Item"},
        "maxItems": 3,
    }
    assert defs["Item"]["properties"]["role"] == {"type": "string", "enum": ["user", "assistant"]}
    assert defs["Item"]["properties"]["text"] == {"type": ["string", "null"]}  # optional: null is absent
    assert schema["properties"]["stream"]["anyOf"][0] == {
        "anyOf": [{"type": "boolean"}, {"type": "string", "enum": ["true", "false", "1", "0", "yes", "no"]}]
    }
    assert "additionalProperties" not in schema  # unknown fields are ignored (§1.10)


def test_a_closed_object_refuses_unknown_fields() -> None:
    patch = Obj((Prop("title", Str()),), closed=True)
    with pytest.raises(ApiError) as caught:
        patch.check({"nope": 1}, "")
    assert (caught.value.code, caught.value.param) == ("invalid_parameter", "nope")
    assert patch.render({})["additionalProperties"] is False


@pytest.mark.parametrize("raw", ["-1", "x", "1.5", "", "٣", "9" * 40, "501"])
def test_integer_parameters_are_ascii_digits_within_bounds(raw: str) -> None:
    with pytest.raises(ApiError) as caught:
        parse_params({"limit": raw}, (Param("limit", IntText(1, 500), default=500),))
    assert (caught.value.code, caught.value.param) == ("invalid_parameter", "limit")


def test_parameters_take_their_defaults_when_absent() -> None:
    params = (Param("limit", IntText(1, 500), default=500), Param("flag", Bool(), default=False))
    assert parse_params({}, params) == {"limit": 500, "flag": False}
    assert parse_params({"limit": "7", "flag": "1"}, params) == {"limit": 7, "flag": True}


def test_a_pattern_ending_in_dollar_means_the_end_of_the_text_as_in_json_schema() -> None:
    """ECMA `$` (what /openapi.json promises) ends the text; Python's would also match before a final newline."""
    node = Str(pattern=r"^[a-z]+$")
    assert node.check("abc", "p") == "abc"
    with pytest.raises(ApiError) as caught:
        node.check("abc\n", "p")
    assert (caught.value.code, caught.value.param) == ("invalid_parameter", "p")


@pytest.mark.parametrize("sid", ["ok", "a b", "tab\there", "é"])
def test_session_ids_in_a_body_a_path_and_the_header_share_one_rule(sid: str) -> None:
    check_session_id(sid, "X-Hermes-Session-Id")
    assert SESSION_ID.check(sid, "id") == sid


@pytest.mark.parametrize("sid", ["", ".", "..", "a/b", "a\\b", " a", "a ", "a\n", "a\x01", "\u3000a", "x" * 257])
def test_a_bad_session_id_is_400_invalid_session_id_naming_where_it_came_from(sid: str) -> None:
    for param in ("X-Hermes-Session-Id", "session_id"):
        with pytest.raises(ApiError) as caught:
            check_session_id(sid, param)
        assert (caught.value.code, caught.value.param) == ("invalid_session_id", param)
        assert caught.value.message.startswith(f"{param} must be 1-256 characters")


def test_an_image_detail_of_whitespace_is_refused_by_its_schema_exactly_as_the_content_parser_reads_whitespace() -> (
    None
):
    """The pattern states "not only whitespace" in characters both regex dialects agree on (schemathesis found
    `detail: "\\x1f"` valid by JSON Schema's `\\S` and refused by `strip()`): it matches a character iff Python's
    `str.isspace()` is false for it, and a part the schema takes is one the content parser takes."""
    keeps = re.compile(NOT_ONLY_SPACE)
    assert [c for c in range(sys.maxunicode + 1) if (keeps.search(chr(c)) is None) != chr(c).isspace()] == []
    part = {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "\x1f"}
    with pytest.raises(ApiError):
        parse_content([part], "input")
    part["detail"] = "\x1fhigh"
    assert parse_content([part], "input")


@pytest.mark.parametrize(
    "part",
    [
        {"type": "image_url", "image_url": "https://example.com/a.png", "detail": []},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": 3}},
        {"type": "input_image", "image_url": "https://example.com/a.png", "detail": {}},
    ],
)
def test_every_image_detail_the_content_parser_reads_is_declared_in_the_rendered_schema(part: dict[str, Any]) -> None:
    """Schemathesis sent `{"type": "image_url", "image_url": "<url>", "detail": []}`: the part-level `detail` beside a
    string `image_url` was undeclared, so the schema took what the parser refuses. Each place the parser reads a
    `detail` is typed in the schema, so the real JSON Schema validator refuses what the parser refuses."""
    defs: dict[str, dict[str, Any]] = {}
    schema = CONTENT.render(defs)
    validator = jsonschema_rs.Draft202012Validator({**schema, "components": {"schemas": defs}})
    with pytest.raises(ApiError):
        parse_content([part], "input")
    assert not validator.is_valid([part])
    nested = isinstance(part["image_url"], dict)
    fine = {**part, "image_url": {**part["image_url"], "detail": "high"}} if nested else {**part, "detail": "high"}
    assert parse_content([fine], "input")
    assert validator.is_valid([fine])
