"""Issue 20, defect 5: every short string of a request has a length limit (protocol/limits.py), enforced by its schema
node — so past it the answer is 400 `invalid_parameter` naming the field, before anything is admitted or stored —
and stated in /openapi.json as `maxLength`. (A 1 MB `model` was echoed in every chunk and stored.)"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from hermes_api_plugin.protocol.limits import (
    ID_MAX,
    METADATA_KEY_MAX,
    METADATA_PAIRS_MAX,
    METADATA_VALUE_MAX,
    NAME_MAX,
    NO_NUL,
    TITLE_MAX,
)

from ..helpers import assert_error_envelope, fetch
from ..live import executions

HI = [{"role": "user", "content": "hi"}]


@dataclass(frozen=True)
class Case:
    """A request carrying a string of `n` characters in one field (`param`), the limit of that field, and what a
    request at the limit gets (the field is fine: the request is served, or refused for another reason)."""

    method: str
    path: Callable[[str], str]
    body: Callable[[str], Any]
    param: str
    limit: int
    at_limit: int


def _body(build: Callable[[str], Any]) -> Callable[[str], Any]:
    return build


def _path(fixed: str) -> Callable[[str], str]:
    return lambda _: fixed


CASES: dict[str, Case] = {
    "chat model": Case(
        "POST", _path("/v1/chat/completions"), lambda s: {"model": s, "messages": HI}, "model", NAME_MAX, 200
    ),
    "chat metadata value": Case(
        "POST",
        _path("/v1/chat/completions"),
        lambda s: {"messages": HI, "metadata": {"k": s}},
        "metadata.k",
        METADATA_VALUE_MAX,
        200,
    ),
    "chat metadata key": Case(
        "POST",
        _path("/v1/chat/completions"),
        lambda s: {"messages": HI, "metadata": {s: "v"}},
        "metadata",
        METADATA_KEY_MAX,
        200,
    ),
    "responses model": Case(
        "POST", _path("/v1/responses"), lambda s: {"model": s, "input": "hi"}, "model", NAME_MAX, 200
    ),
    "responses conversation": Case(
        "POST", _path("/v1/responses"), lambda s: {"conversation": s, "input": "hi"}, "conversation", ID_MAX, 200
    ),
    "responses conversation id": Case(
        "POST",
        _path("/v1/responses"),
        lambda s: {"conversation": {"id": s}, "input": "hi"},
        "conversation.id",
        ID_MAX,
        200,
    ),
    "responses previous_response_id": Case(
        "POST",
        _path("/v1/responses"),
        lambda s: {"previous_response_id": s, "input": "hi"},
        "previous_response_id",
        ID_MAX,
        404,  # well-formed, unknown
    ),
    "responses item_reference id": Case(
        "POST",
        _path("/v1/responses"),
        lambda s: {"input": [{"type": "item_reference", "id": s}, *HI]},
        "input[0].id",
        ID_MAX,
        400,  # well-formed: item_reference_not_found
    ),
    "responses function_call name": Case(
        "POST",
        _path("/v1/responses"),
        lambda s: {"input": [{"type": "function_call", "call_id": "c1", "name": s, "arguments": "{}"}, *HI]},
        "input[0].name",
        NAME_MAX,
        200,
    ),
    "responses function_call call_id": Case(
        "POST",
        _path("/v1/responses"),
        lambda s: {"input": [{"type": "function_call", "call_id": s, "name": "f"}, *HI]},
        "input[0].call_id",
        ID_MAX,
        200,
    ),
    "responses function_call_output call_id": Case(
        "POST",
        _path("/v1/responses"),
        # the call it answers is in the input too: an output of a call never made is 400 (§16)
        lambda s: {
            "input": [
                {"type": "function_call_output", "call_id": s, "output": "ok"},
                {"type": "function_call", "call_id": s, "name": "f"},
                *HI,
            ]
        },
        "input[0].call_id",
        ID_MAX,
        200,
    ),
    "responses tool name": Case(
        "POST",
        _path("/v1/responses"),
        lambda s: {"input": "hi", "tools": [{"type": "custom", "name": s}]},  # a function's name: OpenAI's rule
        "tools[0].name",
        NAME_MAX,
        200,
    ),
    "responses metadata value": Case(
        "POST",
        _path("/v1/responses"),
        lambda s: {"input": "hi", "metadata": {"k": s}},
        "metadata.k",
        METADATA_VALUE_MAX,
        200,
    ),
    "runs model": Case("POST", _path("/v1/runs"), lambda s: {"model": s, "input": "hi"}, "model", NAME_MAX, 202),
    "runs previous_response_id": Case(
        "POST",
        _path("/v1/runs"),
        lambda s: {"previous_response_id": s, "input": "hi"},
        "previous_response_id",
        ID_MAX,
        404,
    ),
    "session chat model": Case(
        "POST", _path("/api/sessions/limits/chat"), lambda s: {"model": s, "message": "hi"}, "model", NAME_MAX, 200
    ),
    "session title": Case("POST", _path("/api/sessions"), lambda s: {"title": s}, "title", TITLE_MAX, 201),
    "session fork title": Case(
        "POST",
        _path("/api/sessions/limits/fork"),
        lambda s: {"title": s},
        "title",
        TITLE_MAX,
        404,  # no such session
    ),
    "sessions source": Case("GET", lambda s: f"/api/sessions?source={s}", lambda s: None, "source", NAME_MAX, 200),
    "response path id": Case("GET", lambda s: f"/v1/responses/{s}", lambda s: None, "response_id", ID_MAX, 404),
    "response delete path id": Case(
        "DELETE", lambda s: f"/v1/responses/{s}", lambda s: None, "response_id", ID_MAX, 404
    ),
    "run path id": Case("GET", lambda s: f"/v1/runs/{s}", lambda s: None, "run_id", ID_MAX, 404),
    "run stop path id": Case("POST", lambda s: f"/v1/runs/{s}/stop", lambda s: None, "run_id", ID_MAX, 404),
}


async def _send(api: TestClient, auth: dict[str, str], case: Case, text: str) -> Any:
    return await fetch(api, case.method, case.path(text), json=case.body(text), headers=auth)


@pytest.mark.parametrize("name", sorted(CASES))
async def test_issue_20_defect_5_one_past_the_limit_is_400_naming_the_field_and_nothing_runs(
    api: TestClient, auth: dict[str, str], name: str
) -> None:
    case = CASES[name]
    reply = await _send(api, auth, case, "x" * (case.limit + 1))
    error = assert_error_envelope(reply, 400, "invalid_parameter", param=case.param)
    assert str(case.limit) in error["message"]
    assert executions(api.home) == []  # type: ignore[attr-defined]
    listing = await fetch(api, "GET", "/api/sessions", headers=auth)
    assert listing.json()["data"] == []  # nothing stored either


@pytest.mark.parametrize("name", sorted(CASES))
async def test_issue_20_defect_5_a_string_at_the_limit_is_taken(
    api: TestClient, auth: dict[str, str], name: str
) -> None:
    case = CASES[name]
    reply = await _send(api, auth, case, "x" * case.limit)
    assert reply.status == case.at_limit, reply.raw[:300]
    if reply.status == 400:
        assert reply.json()["error"]["code"] != "invalid_parameter", reply.raw[:300]


async def test_issue_20_defect_5_a_1_mb_model_is_refused_before_it_is_streamed_or_stored(
    api: TestClient, auth: dict[str, str]
) -> None:
    """The tester's request: a 1 MB `model` on a streamed chat made a 20 MB stream."""
    body = {"model": "m" * 1_000_000, "messages": HI, "stream": True}
    reply = await fetch(api, "POST", "/v1/chat/completions", json=body, headers=auth)
    assert_error_envelope(reply, 400, "invalid_parameter", param="model")
    assert len(reply.raw) < 1000
    assert executions(api.home) == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses"])
async def test_issue_20_defect_5_metadata_holds_at_most_16_pairs(
    api: TestClient, auth: dict[str, str], path: str
) -> None:
    """OpenAI's metadata limits: 16 pairs (then 64-character keys and 512-character values, in CASES)."""
    base = {"messages": HI} if path == "/v1/chat/completions" else {"input": "hi"}
    pairs = {f"k{i}": "v" for i in range(METADATA_PAIRS_MAX + 1)}
    reply = await fetch(api, "POST", path, json={**base, "metadata": pairs}, headers=auth)
    assert_error_envelope(reply, 400, "invalid_parameter", param="metadata")
    assert executions(api.home) == []  # type: ignore[attr-defined]
    pairs.pop("k0")
    taken = await fetch(api, "POST", path, json={**base, "metadata": pairs}, headers=auth)
    assert taken.status == 200, taken.raw[:300]
    if path == "/v1/responses":
        assert taken.json()["metadata"] == pairs


async def test_issue_20_defect_5_a_session_title_past_the_limit_changes_nothing(
    api: TestClient, auth: dict[str, str]
) -> None:
    created = await fetch(api, "POST", "/api/sessions", json={"id": "titled", "title": "kept"}, headers=auth)
    assert created.status == 201, created.raw
    patched = await fetch(api, "PATCH", "/api/sessions/titled", json={"title": "t" * (TITLE_MAX + 1)}, headers=auth)
    assert_error_envelope(patched, 400, "invalid_parameter", param="title")
    ended = await fetch(api, "PATCH", "/api/sessions/titled", json={"end_reason": "e" * 65}, headers=auth)
    assert_error_envelope(ended, 400, "invalid_parameter", param="end_reason")
    got = await fetch(api, "GET", "/api/sessions/titled", headers=auth)
    assert got.json()["session"]["title"] == "kept" and got.json()["session"]["ended_at"] is None


# -- the document states every limit ----------------------------------------------------------------------------------

# Free text: no limit of its own (the body's 10 MB, WIRE.md §1.8). Last-Event-ID is a number (issue 20, defect 1).
# A client tool's `output` and a declared function's `description` (§15.4) are the client's own text for the agent.
FREE_TEXT = {
    "content",
    "text",
    "image_url",
    "url",
    "instructions",
    "system_message",
    "arguments",
    "input",
    "message",
    "output",
    "description",
    "encrypted_content",  # a compaction's summary (WIRE §16): opaque, as long as the conversation it stands for
}
FREE_HEADERS = {"Last-Event-ID"}


def _unbounded(doc: dict[str, Any]) -> set[str]:
    """Where a request (a body or a parameter) takes a string with neither `maxLength` nor `enum`."""
    schemas = doc["components"]["schemas"]
    found: set[str] = set()

    def walk(schema: Any, where: str, seen: frozenset[str]) -> None:
        if not isinstance(schema, dict):
            return
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[1]
            if name not in seen:
                walk(schemas[name], where, seen | {name})
            return
        kinds = schema.get("type")
        kinds = [kinds] if isinstance(kinds, str) else kinds or []
        if "string" in kinds and "maxLength" not in schema and "enum" not in schema:
            found.add(where)
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in schema.get(key, []):
                walk(sub, where, seen)
        for name, sub in schema.get("properties", {}).items():
            walk(sub, f"{where}.{name}", seen)
        for key, suffix in (("items", "[]"), ("additionalProperties", ".*"), ("propertyNames", ".<key>")):
            walk(schema.get(key), where + suffix, seen)

    for path, item in doc["paths"].items():
        for method, op in item.items():
            for param in op.get("parameters", []):
                walk(param["schema"], f"{method.upper()} {path} {param['in']} {param['name']}", frozenset())
            if "requestBody" in op:
                schema = op["requestBody"]["content"]["application/json"]["schema"]
                walk(schema, f"{method.upper()} {path} body", frozenset())
    return found


def _max_lengths(schema: Any) -> set[int]:
    """Every `maxLength` in a schema."""
    if isinstance(schema, dict):
        own = {schema["maxLength"]} if "maxLength" in schema else set()
        return own.union(*(_max_lengths(v) for v in schema.values()))
    if isinstance(schema, list):
        return set().union(*(_max_lengths(v) for v in schema))
    return set()


async def _document(api: TestClient, auth: dict[str, str]) -> dict[str, Any]:
    reply = await fetch(api, "GET", "/openapi.json", headers=auth)
    assert reply.status == 200
    doc: dict[str, Any] = reply.json()
    return doc


async def test_issue_20_defect_5_every_short_request_string_states_its_max_length(
    api: TestClient, auth: dict[str, str]
) -> None:
    unbounded = _unbounded(await _document(api, auth))
    assert len(unbounded) > 10  # the walk reaches the free text
    short = {
        where
        for where in unbounded
        if where.rsplit(" ", 1)[1] not in FREE_HEADERS
        and where.rsplit(" ", 1)[1].rstrip("[]").rsplit(".", 1)[-1].rstrip("[]") not in FREE_TEXT
    }
    assert short == set()


async def test_issue_20_defect_5_the_document_states_each_limit(api: TestClient, auth: dict[str, str]) -> None:
    doc = await _document(api, auth)
    schemas = doc["components"]["schemas"]

    def prop(schema: str, name: str) -> dict[str, Any]:
        found: dict[str, Any] = schemas[schema]["properties"][name]
        return found

    def params(path: str, method: str) -> dict[str, dict[str, Any]]:
        return {p["name"]: p["schema"] for p in doc["paths"][path][method].get("parameters", [])}

    for body in ("ChatCompletionRequest", "ResponseCreateRequest", "RunCreateRequest", "SessionChatRequest"):
        for name in ("model", "provider"):
            assert prop(body, name)["maxLength"] == NAME_MAX and prop(body, name)["pattern"] == NO_NUL, (body, name)
    for body in ("ResponseCreateRequest", "RunCreateRequest"):
        assert prop(body, "previous_response_id")["maxLength"] == ID_MAX
    assert _max_lengths(prop("ResponseCreateRequest", "conversation")) == {ID_MAX}  # a name, or {"id"}
    assert schemas["ItemReference"]["properties"]["id"]["maxLength"] == ID_MAX
    assert schemas["FunctionCallItem"]["properties"]["name"]["maxLength"] == NAME_MAX
    for body in ("ChatCompletionRequest", "ResponseCreateRequest"):
        metadata = prop(body, "metadata")
        assert metadata["maxProperties"] == METADATA_PAIRS_MAX
        assert metadata["propertyNames"]["maxLength"] == METADATA_KEY_MAX
        assert metadata["additionalProperties"]["maxLength"] == METADATA_VALUE_MAX
    for body in ("SessionCreateRequest", "SessionForkRequest", "SessionUpdateRequest"):
        assert prop(body, "title")["maxLength"] == TITLE_MAX
    assert params("/v1/responses/{response_id}", "get")["response_id"]["maxLength"] == ID_MAX
    assert params("/v1/runs/{run_id}", "get")["run_id"]["maxLength"] == ID_MAX
    assert params("/api/sessions/{session_id}", "get")["session_id"]["maxLength"] == 256
    assert params("/api/sessions", "get")["source"]["maxLength"] == NAME_MAX
    # The headers' limits of WIRE.md §1.6
    chat = params("/v1/chat/completions", "post")
    assert chat["Idempotency-Key"]["maxLength"] == 255
    assert chat["X-Hermes-Session-Id"]["maxLength"] == 256 and chat["X-Hermes-Session-Key"]["maxLength"] == 256
