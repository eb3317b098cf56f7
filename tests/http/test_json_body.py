"""json_body.py: request bodies as JSON objects — strict UTF-8, RFC 8259 numbers, nesting bounded at MAX_DEPTH, lone
surrogates replaced (WIRE.md §1.7, §1.10, §5.2). Pure tests first, then every POST route of the real app."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_api_plugin.core.errors import ApiError
from hermes_api_plugin.http import json_body
from hermes_api_plugin.http.json_body import (
    LONE_SURROGATE,
    MAX_CONTAINERS,
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_MEMBERS,
    MAX_VALUES,
    check_structure,
    nesting_depth,
    parse_json_object,
    replace_lone_surrogates,
    without_strings,
)
from hermes_api_plugin.protocol.common import identity_hash

from ..helpers import assert_error_envelope, fetch
from ..live import executions

POST_ROUTES = ["/v1/chat/completions", "/v1/responses", "/v1/runs", "/api/sessions", "/api/sessions/fuzz/chat"]
TOO_DEEP = f"Request body nests deeper than {MAX_DEPTH} levels"


def nested_list(depth: int) -> str:
    """`depth` arrays inside each other (depth counts containers)."""
    return "[" * depth + "]" * depth


def nested_object(depth: int) -> str:
    return '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)


def refusal(raw: bytes) -> ApiError:
    with pytest.raises(ApiError) as caught:
        parse_json_object(raw)
    assert (caught.value.status, caught.value.code) == (400, "invalid_json")
    return caught.value


# -- nesting ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("inner", [nested_list, nested_object], ids=["arrays", "objects"])
def test_nesting_up_to_the_limit_parses(inner: Any) -> None:
    body = parse_json_object(f'{{"metadata":{inner(MAX_DEPTH - 1)}}}'.encode())
    assert "metadata" in body


@pytest.mark.parametrize("inner", [nested_list, nested_object], ids=["arrays", "objects"])
def test_one_level_over_the_limit_is_invalid_json(inner: Any) -> None:
    assert refusal(f'{{"metadata":{inner(MAX_DEPTH)}}}'.encode()).message == TOO_DEEP


@pytest.mark.parametrize("inner", [nested_list, nested_object], ids=["arrays", "objects"])
def test_nesting_past_the_parsers_recursion_gets_the_same_refusal(inner: Any) -> None:
    """About 100 KB of nesting makes the C parser raise RecursionError: the same 400 as one level too deep."""
    raw = f'{{"metadata":{inner(50_000)}}}'.encode()
    assert len(raw) > 100_000
    assert refusal(raw).message == TOO_DEEP


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    body = parse_json_object(json.dumps({"input": "[" * 10_000 + "{" * 10_000}).encode())
    assert body["input"].startswith("[[[")


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


json_trees = st.recursive(
    st.one_of(st.none(), st.integers(), st.text(alphabet='[]{}\\"ab')),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text('[]{}\\"'), children, max_size=3)
    ),
    max_leaves=30,
)


@settings(max_examples=300, derandomize=True, database=None)
@given(json_trees)
def test_nesting_depth_on_the_bytes_equals_the_depth_of_the_value(value: Any) -> None:
    """The byte-level count agrees with a walk of the parsed value, brackets and quotes inside strings included."""
    assert nesting_depth(json.dumps(value).encode()) == depth_of(value)


@settings(max_examples=300, derandomize=True, database=None)
@given(json_trees, st.integers(min_value=1, max_value=4))
def test_strings_are_dropped_in_passes_exactly_as_in_one(value: Any, per_pass: int) -> None:
    """Dropping strings a few at a time (the lock can change hands between passes) leaves the same structure as one
    pass over the whole text: every pass resumes outside a string, brackets and quotes inside strings included."""
    raw = json.dumps(value).encode()
    original = json_body._STRINGS_PER_PASS
    json_body._STRINGS_PER_PASS = per_pass
    try:
        assert without_strings(raw) == json_body._STRING.sub(b"", raw)
        assert nesting_depth(raw, bare=without_strings(raw)) == depth_of(value)
    finally:
        json_body._STRINGS_PER_PASS = original


@pytest.mark.parametrize(
    ("junk", "message"),
    [
        ("[" + ",".join(["[]"] * MAX_CONTAINERS) + "]", f"more than {MAX_CONTAINERS} JSON objects and arrays"),
        ("{" + ",".join(f'"{i}":0' for i in range(MAX_MEMBERS + 1)) + "}", f"more than {MAX_MEMBERS} object members"),
        ("[" + ",".join(["0"] * MAX_VALUES) + "]", f"more than {MAX_VALUES} JSON values"),
        ("[" + ",".join(['""'] * MAX_VALUES) + "]", f"more than {MAX_VALUES} JSON values"),
    ],
    ids=["containers", "members", "values", "strings"],
)
def test_issue20_defect3_a_body_past_a_structure_limit_is_413_before_it_is_parsed(junk: str, message: str) -> None:
    """One past MAX_CONTAINERS, MAX_MEMBERS or MAX_VALUES (the body itself and its one member count too) is 413
    body_too_large; one short of them parses. Brackets, colons and commas inside strings do not count."""
    with pytest.raises(ApiError) as caught:
        parse_json_object(f'{{"junk":{junk}}}'.encode())
    assert (caught.value.status, caught.value.code) == (413, "body_too_large")
    assert message in caught.value.message
    inside = junk.replace("[", "").replace("]", "").replace("{", "").replace("}", "")
    assert check_structure(json.dumps({"text": junk * 2, "rest": inside[:100]}).encode()) is not None


def test_a_body_just_inside_the_structure_limits_parses() -> None:
    containers = "[" + ",".join(["[]"] * (MAX_CONTAINERS - 2)) + "]"
    members = "{" + ",".join(f'"{i}":0' for i in range(MAX_MEMBERS - 1)) + "}"
    assert len(parse_json_object(f'{{"a":{containers}}}'.encode())["a"]) == MAX_CONTAINERS - 2
    assert len(parse_json_object(f'{{"a":{members}}}'.encode())["a"]) == MAX_MEMBERS - 1


# -- numbers ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1.5e400"])
def test_non_finite_numbers_are_invalid_json(literal: str) -> None:
    assert "Request body must be valid UTF-8 JSON" in refusal(f'{{"temperature":{literal}}}'.encode()).message


def test_integers_past_the_digit_limit_are_invalid_json_with_a_clear_message() -> None:
    assert parse_json_object(f'{{"n":-{"9" * MAX_INT_DIGITS}}}'.encode())["n"] < 0
    message = refusal(f'{{"n":{"9" * (MAX_INT_DIGITS + 1)}}}'.encode()).message
    assert f"more than {MAX_INT_DIGITS} digits" in message


# -- lone surrogates --------------------------------------------------------------------------------------------------


def test_lone_surrogates_become_replacement_characters_in_keys_and_strings() -> None:
    raw = rb'{"input":"hi \ud800","metadata":{"k\udc00":["\udfff",{"x":"a\ud800b"}]},"emoji":"\ud83d\ude00"}'
    assert parse_json_object(raw) == {
        "input": "hi \ufffd",
        "metadata": {"k\ufffd": ["\ufffd", {"x": "a\ufffdb"}]},
        "emoji": "\U0001f600",  # a proper pair stays the character it encodes
    }


# Pieces that make escapes look alike: literal backslashes before `ud800`, lone and paired surrogates side by side.
PIECES = ["\\", "u", "d800", "\\ud800", "\\udc00", "\ud800", "\udbff", "\udc00", "\ud83d\ude00", "a", '"', "é"]


@settings(max_examples=300, derandomize=True, database=None)
@given(st.lists(st.sampled_from(PIECES), max_size=12).map("".join))
def test_replacing_escapes_equals_replacing_the_decoded_surrogates(text: str) -> None:
    """Text-level replacement (before parsing) matches what decoding then replacing gives, whatever backslashes, `u`s
    and surrogate pairs surround the lone ones."""
    encoded = json.dumps(text)  # ensure_ascii: every surrogate as an escape; adjacent high+low decode as a pair
    assert json.loads(replace_lone_surrogates(encoded)) == LONE_SURROGATE.sub("\ufffd", json.loads(encoded))


def test_keys_that_collide_after_replacement_keep_the_last_value_in_place() -> None:
    assert list(parse_json_object(rb'{"a":0,"\ud800":1,"b":2,"\ud801":3}').items()) == [
        ("a", 0),
        ("\ufffd", 3),
        ("b", 2),
    ]


def test_a_body_with_lone_surrogates_always_has_the_same_identity() -> None:
    """§5.2: the identity is computed after replacement, so a retry of the same bytes hashes the same."""
    raw = rb'{"input":"x\ud800","model_options":{"\udc00":1}}'
    first, second = parse_json_object(raw), parse_json_object(raw)
    assert (
        identity_hash(first)
        == identity_hash(second)
        == identity_hash({"input": "x\ufffd", "model_options": {"\ufffd": 1}})
    )


# -- every POST route of the real app ---------------------------------------------------------------------------------


@pytest.mark.parametrize("inner", [nested_list, nested_object], ids=["arrays", "objects"])
@pytest.mark.parametrize("path", POST_ROUTES)
async def test_100_kb_of_nesting_is_400_invalid_json_on_every_post_route(
    api: TestClient, auth: dict[str, str], path: str, inner: Any
) -> None:
    """W-1.7: never 500 (it was a RecursionError)."""
    reply = await fetch(api, "POST", path, data=inner(50_000).encode(), headers=auth)
    assert_error_envelope(reply, 400, "invalid_json", message=TOO_DEEP)
    assert executions(api.home) == []  # type: ignore[attr-defined]


DEEP_900 = json.loads(nested_list(900))
DEEP_BODIES = {
    "chat_content": ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "metadata": DEEP_900}),
    "responses_metadata": ("/v1/responses", {"input": "hi", "metadata": {"a": DEEP_900}}),
    "responses_content": ("/v1/responses", {"input": [{"role": "user", "content": DEEP_900}]}),
    "runs_model_options": ("/v1/runs", {"input": "hi", "model_options": {"x": DEEP_900}}),
    "session_title": ("/api/sessions", {"title": DEEP_900}),
    "session_chat": ("/api/sessions/fuzz/chat", {"message": "hi", "model_options": {"x": DEEP_900}}),
}


@pytest.mark.parametrize(("path", "body"), list(DEEP_BODIES.values()), ids=list(DEEP_BODIES))
async def test_a_body_that_parses_but_nests_900_deep_is_refused_at_the_boundary(
    api: TestClient, auth: dict[str, str], path: str, body: dict[str, Any]
) -> None:
    """Whatever field holds it, depth 900 never reaches a recursive consumer (identity hash, store, agent)."""
    reply = await fetch(api, "POST", path, json=body, headers=auth)
    assert_error_envelope(reply, 400, "invalid_json", message=TOO_DEEP)
    assert executions(api.home) == []  # type: ignore[attr-defined]


async def test_a_body_at_the_limit_is_admitted_hashed_stored_and_read_back(
    api: TestClient, auth: dict[str, str]
) -> None:
    """The deepest body the boundary lets through survives every consumer: identity hash, store, read-back."""
    # metadata holds only short strings (issue 20, defect 5): a tool definition is stored and hashed as sent.
    deepest = json.loads(nested_list(MAX_DEPTH - 3))  # body (1) > tools (2) > the tool (3) > the list
    body = {"input": "hello", "tools": [{"type": "function", "name": "f", "parameters": deepest}], "store": True}
    headers = {**auth, "Idempotency-Key": "deepest-body"}
    created = await fetch(api, "POST", "/v1/responses", json=body, headers=headers)
    assert created.status == 200, created.raw[:300]
    response_id = created.json()["id"]
    stored = await fetch(api, "GET", f"/v1/responses/{response_id}", headers=auth)
    assert stored.status == 200 and stored.json()["id"] == response_id
    replay = await fetch(api, "POST", "/v1/responses", json=body, headers=headers)
    assert replay.replayed and replay.json()["id"] == response_id


SURROGATE_INPUT = rb'{"input":"hello \ud800","instructions":"be \udfff brief","metadata":{"k\udc00":"v\ud800"}}'


async def test_lone_surrogates_in_a_responses_body_are_stored_as_replacement_characters(
    api: TestClient, auth: dict[str, str]
) -> None:
    """§1.10: replaced (as a browser's TextEncoder would), never 500; a keyed retry of the same bytes replays."""
    headers = {**auth, "Idempotency-Key": "surrogates", "Content-Type": "application/json"}
    created = await fetch(api, "POST", "/v1/responses", data=SURROGATE_INPUT, headers=headers)
    assert created.status == 200, created.raw[:300]
    response_id = created.json()["id"]
    items = await fetch(api, "GET", f"/v1/responses/{response_id}/input_items", headers=auth)
    assert items.status == 200
    (message,) = items.json()["data"]
    assert [part["text"] for part in message["content"]] == ["hello \ufffd"]
    replay = await fetch(api, "POST", "/v1/responses", data=SURROGATE_INPUT, headers=headers)
    assert replay.replayed and replay.json()["id"] == response_id


async def test_lone_surrogates_in_session_ids_titles_and_chat_are_replaced(
    api: TestClient, auth: dict[str, str]
) -> None:
    created = await fetch(api, "POST", "/api/sessions", data=rb'{"id":"s\ud800","title":"t\udc00"}', headers=auth)
    assert created.status == 201, created.raw[:300]
    assert created.json()["session"]["id"] == "s\ufffd"
    assert created.json()["session"]["title"] == "t\ufffd"
    chat = await fetch(api, "POST", "/api/sessions/s%EF%BF%BD/chat", data=rb'{"message":"hi \ud800"}', headers=auth)
    assert chat.status == 200 and chat.json()["status"] == "completed", chat.raw[:300]
    completion = await fetch(
        api, "POST", "/v1/chat/completions", data=rb'{"messages":[{"role":"user","content":"hi \udbff"}]}', headers=auth
    )
    assert completion.status == 200 and completion.json()["choices"][0]["finish_reason"] == "stop"


async def test_a_run_on_a_session_id_with_a_lone_surrogate_completes(api: TestClient, auth: dict[str, str]) -> None:
    """It used to be admitted (202) and then fail outside the agent when SQLite could not encode the id."""
    started = await fetch(api, "POST", "/v1/runs", data=rb'{"input":"hi","session_id":"r\ud800"}', headers=auth)
    assert started.status == 202
    run_id = started.json()["run_id"]
    events = await fetch(api, "GET", f"/v1/runs/{run_id}/events", headers=auth)
    assert events.events[-1]["event"] == "run.completed", events.raw[-300:]
