"""Cross-cutting HTTP behaviour: auth, CORS, security headers, error envelope, limits (WIRE.md §1).

Every test drives the real app (built through the plugin manager) over a real socket on 127.0.0.1.
"""

from __future__ import annotations

import gc
import inspect
import io
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from hermes_api_plugin import __version__
from tests.helpers import AUTH_FAILED, CHAT, HELLO_CHAT, SECURITY_HEADERS

from ..helpers import assert_error_envelope, parse_sse, raw_request, read_reply, read_until, wait_for_async
from ..live import TEST_KEY, executions

TYPE_BY_STATUS = {
    400: "invalid_request_error",
    401: "gateway_auth_error",
    403: "gateway_auth_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}
ORIGIN_NOT_ALLOWED = {
    "error": {
        "message": "Origin not allowed",
        "type": "gateway_auth_error",
        "param": None,
        "code": "origin_not_allowed",
    }
}
EXPOSED = {"x-hermes-session-id", "x-hermes-session-key", "x-hermes-run-id", "idempotency-replayed", "retry-after"}
ALLOWED_ORIGIN = "http://localhost:3000"
CORS_CONFIG = {"api_server": {"cors_origins": [ALLOWED_ORIGIN]}}
MAX_BODY = 10_000_000


# -- helpers ----------------------------------------------------------------------------------------


def assert_security_headers(headers: Any) -> None:
    """WIRE §1.5 / W-1.6."""
    for name, value in SECURITY_HEADERS.items():
        assert headers.get(name) == value, f"{name}: {headers.get(name)!r}"


async def assert_error(resp: Any, status: int, code: Any = ..., param: Any = ...) -> dict[str, Any]:
    """W-1.7: the §1.7 envelope (tests/helpers.py) with the type that goes with the status, (optionally) code and
    param; W-1.6: the security headers."""
    reply = await read_reply(resp)
    assert_security_headers(reply.headers)
    return assert_error_envelope(reply, status, code, param=param, type=TYPE_BY_STATUS[status])


# -- W-1.3 authentication ---------------------------------------------------------------------------

ROUTES = [
    ("GET", "/v1/models"),
    ("GET", "/v1/capabilities"),
    ("POST", CHAT),
    ("GET", "/v1/nope"),
    ("PUT", "/v1/models"),
    ("DELETE", CHAT),
    ("OPTIONS", "/v1/models"),  # no Origin: not a preflight, so it needs the key
    ("POST", "/health"),  # only GET/HEAD of the health paths are public
]
BAD_AUTH = {
    "missing": None,
    "empty": "",
    "wrong_key": "Bearer wrong-key-0123456789abcdef",
    "key_prefix": f"Bearer {TEST_KEY[:-1]}",
    "key_plus_char": f"Bearer {TEST_KEY}x",
    "basic_scheme": f"Basic {TEST_KEY}",
    "token_scheme": f"Token {TEST_KEY}",
    "bare_key": TEST_KEY,
    "scheme_only": "Bearer",
    "non_ascii_key": "Bearer tëst-kéy-0123456789abcdef",
    "key_with_non_ascii_suffix": f"Bearer {TEST_KEY}é",
}


@pytest.mark.parametrize("header", list(BAD_AUTH.values()), ids=list(BAD_AUTH))
async def test_auth_failure_returns_exact_401_envelope_on_every_route(api: TestClient, header: str | None) -> None:
    """W-1.3: missing / wrong / other-scheme / non-ASCII key → the exact 401 envelope on every route, before routing."""
    headers = {} if header is None else {"Authorization": header}
    for method, path in ROUTES:
        resp = await api.request(method, path, headers=headers, json=HELLO_CHAT if method == "POST" else None)
        await assert_error(resp, 401, "gateway_auth_failed")
        assert json.loads(await resp.read()) == AUTH_FAILED, (method, path)
    assert executions(api.home) == []  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "raw_value",
    [
        b"Bearer \xe9\xe8\xff",
        b"Bearer " + TEST_KEY.encode() + b"\xe9",
        b"\xc3\xa9 " + TEST_KEY.encode(),
        b"Bearer \x80",
    ],
    ids=["latin1_token", "key_plus_latin1_byte", "non_ascii_scheme", "invalid_utf8_byte"],
)
async def test_non_ascii_authorization_bytes_get_401_never_500(api: TestClient, raw_value: bytes) -> None:
    """W-1.3: raw non-ASCII / undecodable Authorization bytes → 401 envelope, never 500."""
    for method, path in [("GET", "/v1/models"), ("POST", CHAT), ("GET", "/v1/nope")]:
        body = json.dumps(HELLO_CHAT).encode() if method == "POST" else b""
        request = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            f"Content-Length: {len(body)}\r\n".encode()
            + b"Authorization: "
            + raw_value
            + b"\r\n\r\n"
            + body
        )
        reply = await raw_request(api, request)
        assert reply.status == 401, (method, path, reply.status, reply.raw)
        assert reply.headers["content-type"] == "application/json; charset=utf-8"
        assert reply.json() == AUTH_FAILED
        assert_security_headers(reply.headers)
    assert executions(api.home) == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "BeArEr"])
async def test_bearer_scheme_is_case_insensitive(api: TestClient, scheme: str) -> None:
    """W-1.3 / W-1.16: the scheme `Bearer` matches in any case; the right key then authenticates."""
    resp = await api.get("/v1/models", headers={"Authorization": f"{scheme} {TEST_KEY}"})
    assert resp.status == 200
    body = await resp.json()
    assert body["object"] == "list"
    resp = await api.post(CHAT, json=HELLO_CHAT, headers={"Authorization": f"{scheme} {TEST_KEY}"})
    assert resp.status == 200
    assert (await resp.json())["object"] == "chat.completion"


@pytest.mark.parametrize("path", ["/health", "/v1/health"])
@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}], ids=["no_auth", "wrong_auth"])
async def test_health_needs_no_auth(api: TestClient, path: str, headers: dict[str, str]) -> None:
    """W-1.3 / §1.9: health answers 200 without (or with a wrong) key, with the exact body."""
    resp = await api.get(path, headers=headers)
    assert resp.status == 200
    assert resp.headers["Content-Type"] == "application/json; charset=utf-8"
    assert await resp.json() == {"status": "ok", "platform": "hermes-agent", "version": __version__}
    assert_security_headers(resp.headers)


# -- W-1.4 / W-1.5 CORS ------------------------------------------------------------------------------

PREFLIGHT_HEADERS = "authorization, x-stainless-os, idempotency-key, x-hermes-session-key, last-event-id, user-agent, openai-organization"


def preflight(origin: str, request_headers: str | None = PREFLIGHT_HEADERS, method: str = "POST") -> dict[str, str]:
    headers = {"Origin": origin, "Access-Control-Request-Method": method}
    if request_headers is not None:
        headers["Access-Control-Request-Headers"] = request_headers
    return headers


def header_names(value: str | None) -> list[str]:
    return [h.strip().lower() for h in (value or "").split(",") if h.strip()]


@pytest.mark.parametrize(
    "method,path,with_key,preflight_request",
    [
        ("GET", "/v1/models", True, False),
        ("GET", "/v1/models", False, False),
        ("POST", CHAT, True, False),
        ("POST", CHAT, False, False),
        ("OPTIONS", CHAT, False, True),
        ("OPTIONS", "/v1/models", True, False),
        ("DELETE", "/v1/models", True, False),
        ("GET", "/v1/nope", False, False),
    ],
    ids=["get", "get_no_key", "post", "post_no_key", "preflight", "options_plain", "delete", "unknown_path_no_key"],
)
async def test_cors_disallowed_origin_gets_403_before_auth(
    make_api: Any, auth: dict[str, str], method: str, path: str, with_key: bool, preflight_request: bool
) -> None:
    """W-1.4: a disallowed Origin → 403 origin_not_allowed on every method, checked before authentication."""
    api = await make_api(config=CORS_CONFIG)
    headers = preflight("http://evil.example") if preflight_request else {"Origin": "http://evil.example"}
    if with_key:
        headers.update(auth)
    resp = await api.request(method, path, headers=headers, json=HELLO_CHAT if method == "POST" else None)
    await assert_error(resp, 403, "origin_not_allowed")
    assert json.loads(await resp.read()) == ORIGIN_NOT_ALLOWED
    assert "Access-Control-Allow-Origin" not in resp.headers
    assert executions(api.home) == []


@pytest.mark.parametrize(
    "origin", ["http://localhost:3001", "https://localhost:3000", "null", "http://LOCALHOST:3000x"]
)
async def test_cors_origin_must_match_allowlist_exactly(make_api: Any, auth: dict[str, str], origin: str) -> None:
    """W-1.4: only origins on the list are allowed (other port, scheme, `null` → 403)."""
    api = await make_api(config=CORS_CONFIG)
    resp = await api.get("/v1/models", headers={**auth, "Origin": origin})
    await assert_error(resp, 403, "origin_not_allowed", None)


@pytest.mark.parametrize("path", [CHAT, "/v1/models", "/v1/nope"])
async def test_cors_preflight_allowed_origin_without_auth(make_api: Any, path: str) -> None:
    """W-1.4: an allowed preflight → 200, empty body, no auth, the five methods, Max-Age 600, origin echoed."""
    api = await make_api(config=CORS_CONFIG)
    resp = await api.options(path, headers=preflight(ALLOWED_ORIGIN))
    assert resp.status == 200
    assert await resp.read() == b""
    assert resp.headers["Access-Control-Allow-Origin"] == ALLOWED_ORIGIN
    assert "origin" in header_names(resp.headers.get("Vary"))
    assert resp.headers["Access-Control-Allow-Methods"] == "GET, POST, PATCH, DELETE, OPTIONS"
    assert resp.headers["Access-Control-Max-Age"] == "600"
    assert_security_headers(resp.headers)  # W-1.6: preflights too


async def test_cors_preflight_reflects_requested_headers(make_api: Any) -> None:
    """W-1.4: every requested header name (x-stainless-*, idempotency-key, user-agent, …) is reflected."""
    api = await make_api(config=CORS_CONFIG)
    resp = await api.options(CHAT, headers=preflight(ALLOWED_ORIGIN))
    assert resp.status == 200
    assert header_names(resp.headers.get("Access-Control-Allow-Headers")) == header_names(PREFLIGHT_HEADERS)


async def test_cors_preflight_leaves_out_invalid_header_tokens(make_api: Any) -> None:
    """W-1.4: only valid header tokens are reflected; an invalid name is left out."""
    api = await make_api(config=CORS_CONFIG)
    resp = await api.options(CHAT, headers=preflight(ALLOWED_ORIGIN, "x-good, bad header, b@d, x-stainless-lang,,"))
    assert resp.status == 200
    assert header_names(resp.headers.get("Access-Control-Allow-Headers")) == ["x-good", "x-stainless-lang"]


async def test_cors_preflight_without_requested_headers_has_no_allow_headers(make_api: Any) -> None:
    """W-1.4 / §1.4: Access-Control-Allow-Headers is absent when none is requested."""
    api = await make_api(config=CORS_CONFIG)
    resp = await api.options(CHAT, headers=preflight(ALLOWED_ORIGIN, None))
    assert resp.status == 200
    assert "Access-Control-Allow-Headers" not in resp.headers
    assert resp.headers["Access-Control-Allow-Methods"] == "GET, POST, PATCH, DELETE, OPTIONS"


def assert_cors_response_headers(headers: Any, origin: str = ALLOWED_ORIGIN) -> None:
    """W-1.5: Allow-Origin, Vary: Origin, Expose-Headers with the five names of §1.4."""
    assert headers.get("Access-Control-Allow-Origin") == origin
    assert "origin" in header_names(headers.get("Vary"))
    exposed = set(header_names(headers.get("Access-Control-Expose-Headers")))
    assert {"x-hermes-session-id", "x-hermes-run-id"} <= exposed
    assert exposed == EXPOSED


async def test_cors_headers_on_json_and_error_responses(make_api: Any, auth: dict[str, str]) -> None:
    """W-1.5: an allowed origin gets the CORS headers on 200 JSON, 401, 404 and 400 responses."""
    api = await make_api(config=CORS_CONFIG)
    origin = {"Origin": ALLOWED_ORIGIN}
    resp = await api.get("/v1/models", headers={**auth, **origin})
    assert resp.status == 200
    assert_cors_response_headers(resp.headers)
    resp = await api.get("/v1/models", headers=origin)
    await assert_error(resp, 401, "gateway_auth_failed")
    assert_cors_response_headers(resp.headers)
    resp = await api.get("/v1/nope", headers={**auth, **origin})
    await assert_error(resp, 404, "not_found")
    assert_cors_response_headers(resp.headers)
    resp = await api.post(CHAT, data=b"{", headers={**auth, **origin})
    await assert_error(resp, 400, "invalid_json")
    assert_cors_response_headers(resp.headers)


async def test_cors_headers_on_chat_responses_stream_and_json(make_api: Any, auth: dict[str, str]) -> None:
    """W-1.5: streaming chat (SSE) and non-streaming chat replies carry the CORS headers in their head."""
    api = await make_api(config=CORS_CONFIG)
    headers = {**auth, "Origin": ALLOWED_ORIGIN}
    resp = await api.post(CHAT, json={**HELLO_CHAT, "stream": True}, headers=headers)
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/event-stream")
    assert_cors_response_headers(resp.headers)
    records, _ = parse_sse(await resp.read())
    assert records[-1].data == "[DONE]"
    resp = await api.post(CHAT, json=HELLO_CHAT, headers=headers)
    assert resp.status == 200
    assert_cors_response_headers(resp.headers)
    assert (await resp.json())["object"] == "chat.completion"


async def test_cors_wildcard_allows_any_origin_with_star(make_api: Any, auth: dict[str, str]) -> None:
    """W-1.4 / W-1.5: `*` in the list → every origin allowed, Allow-Origin `*`."""
    api = await make_api(config={"api_server": {"cors_origins": ["*"]}})
    resp = await api.get("/v1/models", headers={**auth, "Origin": "https://anything.example"})
    assert resp.status == 200
    assert_cors_response_headers(resp.headers, "*")
    resp = await api.options(CHAT, headers=preflight("https://other.example"))
    assert resp.status == 200
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    assert resp.headers["Access-Control-Max-Age"] == "600"


async def test_cors_origins_from_env_comma_list(make_api: Any, auth: dict[str, str]) -> None:
    """W-1.4 / §1.4: API_SERVER_CORS_ORIGINS is a comma list with whitespace trimmed."""
    api = await make_api(env={"API_SERVER_CORS_ORIGINS": " http://a.test , http://b.test "})
    for origin in ("http://a.test", "http://b.test"):
        resp = await api.get("/v1/models", headers={**auth, "Origin": origin})
        assert resp.status == 200
        assert_cors_response_headers(resp.headers, origin)
    resp = await api.get("/v1/models", headers={**auth, "Origin": "http://c.test"})
    await assert_error(resp, 403, "origin_not_allowed")


@pytest.mark.parametrize("origin", [ALLOWED_ORIGIN, "null", "https://example.com"])
async def test_cors_off_by_default_any_origin_is_403(api: TestClient, auth: dict[str, str], origin: str) -> None:
    """W-1.4: without CORS config every request carrying an Origin gets 403, preflight included."""
    resp = await api.get("/v1/models", headers={**auth, "Origin": origin})
    await assert_error(resp, 403, "origin_not_allowed", None)
    resp = await api.options(CHAT, headers=preflight(origin))
    await assert_error(resp, 403, "origin_not_allowed", None)


async def test_requests_without_origin_are_unaffected_by_cors(make_api: Any, auth: dict[str, str]) -> None:
    """§1.4: no Origin header → no CORS check and no CORS response headers."""
    api = await make_api(config=CORS_CONFIG)
    resp = await api.get("/v1/models", headers=auth)
    assert resp.status == 200
    assert "Access-Control-Allow-Origin" not in resp.headers


# -- W-1.6 security headers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method,path,with_key,status",
    [
        ("GET", "/v1/models", True, 200),
        ("GET", "/v1/capabilities", True, 200),
        ("GET", "/health", False, 200),
        ("GET", "/v1/models", False, 401),
        ("GET", "/v1/nope", True, 404),
        ("GET", CHAT, True, 405),
        ("POST", CHAT, True, 400),
    ],
    ids=["models_200", "capabilities_200", "health_200", "401", "404", "405", "400"],
)
async def test_security_headers_on_every_response(
    api: TestClient, auth: dict[str, str], method: str, path: str, with_key: bool, status: int
) -> None:
    """W-1.6: the four §1.5 headers on 200 JSON, 401, 404, 405 and 400 responses."""
    resp = await api.request(method, path, headers=auth if with_key else {}, data=b"[]" if method == "POST" else None)
    assert resp.status == status
    assert_security_headers(resp.headers)
    assert resp.headers["Content-Type"] == "application/json; charset=utf-8"
    await resp.read()


async def test_security_headers_on_streaming_chat(api: TestClient, auth: dict[str, str]) -> None:
    """W-1.6: the security headers are part of the SSE head."""
    resp = await api.post(CHAT, json={**HELLO_CHAT, "stream": True}, headers=auth)
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/event-stream")
    assert_security_headers(resp.headers)
    records, _ = parse_sse(await resp.read())
    assert records[-1].data == "[DONE]"


async def test_security_headers_on_non_streaming_chat(api: TestClient, auth: dict[str, str]) -> None:
    """W-1.6 / §1.11: the early-head JSON reply carries the security headers and the JSON content type."""
    resp = await api.post(CHAT, json=HELLO_CHAT, headers=auth)
    assert resp.status == 200
    assert resp.headers["Content-Type"] == "application/json; charset=utf-8"
    assert_security_headers(resp.headers)
    assert (await resp.json())["object"] == "chat.completion"


# -- W-1.7 error envelope and validation ------------------------------------------------------------

INVALID_JSON_BODIES = {
    "malformed": b'{"messages": [',
    "empty": b"",
    "array": b'[{"role":"user","content":"hi"}]',
    "string": b'"hello"',
    "number": b"42",
    "null": b"null",
    "non_utf8": b'{"messages":[{"role":"user","content":"\xff\xfe"}]}',
    "latin1_bom": b"\xff\xfe{}",
}


@pytest.mark.parametrize("body", list(INVALID_JSON_BODIES.values()), ids=list(INVALID_JSON_BODIES))
async def test_invalid_json_body_gets_400_invalid_json(api: TestClient, auth: dict[str, str], body: bytes) -> None:
    """W-1.7: not UTF-8 JSON or not a JSON object → 400 invalid_json, never 500."""
    resp = await api.post(CHAT, data=body, headers={**auth, "Content-Type": "application/json"})
    await assert_error(resp, 400, "invalid_json")
    assert executions(api.home) == []  # type: ignore[attr-defined]


def user(text: Any = "hello") -> dict[str, Any]:
    return {"role": "user", "content": text}


VALIDATION_CASES: dict[str, tuple[dict[str, Any], str, str | None]] = {
    # id: (body, code, param)
    "messages_missing": ({}, "missing_required_parameter", "messages"),
    "messages_null": ({"messages": None}, "missing_required_parameter", "messages"),
    "messages_empty": ({"messages": []}, "missing_required_parameter", "messages"),
    "messages_string": ({"messages": "x"}, "invalid_parameter", "messages"),
    "messages_object": ({"messages": {"role": "user", "content": "hi"}}, "invalid_parameter", "messages"),
    "message_not_object": ({"messages": ["hi"]}, "invalid_parameter", "messages[0]"),
    "message_null": ({"messages": [user(), None]}, "invalid_parameter", "messages[1]"),
    "bad_role": ({"messages": [{"role": "robot", "content": "hi"}]}, "invalid_parameter", "messages[0].role"),
    "role_missing": ({"messages": [{"content": "hi"}]}, "invalid_parameter", "messages[0].role"),
    "role_number": ({"messages": [{"role": 1, "content": "hi"}]}, "invalid_parameter", "messages[0].role"),
    "stream_maybe": ({"messages": [user()], "stream": "maybe"}, "invalid_parameter", "stream"),
    "stream_number": ({"messages": [user()], "stream": 2}, "invalid_parameter", "stream"),
    "model_number": ({"messages": [user()], "model": 5}, "invalid_parameter", "model"),
    "model_options_array": ({"messages": [user()], "model_options": []}, "invalid_parameter", "model_options"),
    "model_options_reasoning_string": (
        {"messages": [user()], "model_options": {"reasoning": "yes"}},
        "invalid_parameter",
        "model_options.reasoning",
    ),
    "reasoning_enabled_x": (
        {"messages": [user()], "model_options": {"reasoning": {"enabled": "x"}}},
        "invalid_parameter",
        "model_options.reasoning.enabled",
    ),
    "reasoning_effort_huge": (
        {"messages": [user()], "reasoning_effort": "huge"},
        "invalid_parameter",
        "reasoning_effort",
    ),
    "reasoning_effort_number": ({"messages": [user()], "reasoning_effort": 3}, "invalid_parameter", "reasoning_effort"),
    "model_options_effort_huge": (
        {"messages": [user()], "model_options": {"reasoning": {"effort": "huge"}}},
        "invalid_parameter",
        "model_options.reasoning.effort",
    ),
    "provider_unknown": ({"messages": [user()], "provider": "nope"}, "invalid_parameter", "provider"),
    "last_message_assistant": (
        {"messages": [user(), {"role": "assistant", "content": "hi there"}]},
        "missing_user_message",
        "messages",
    ),
    "only_system": ({"messages": [{"role": "system", "content": "Be brief."}]}, "missing_user_message", "messages"),
    "only_developer_and_tool": (
        {"messages": [{"role": "developer", "content": "x"}, {"role": "tool", "content": "out", "tool_call_id": "c"}]},
        "missing_user_message",
        "messages",
    ),
    "blank_user_text": ({"messages": [user("   \n\t ")]}, "missing_user_message", "messages"),
    "empty_user_text": ({"messages": [user("")]}, "missing_user_message", "messages"),
    "null_user_content": ({"messages": [user(None)]}, "missing_user_message", "messages"),
    "blank_user_parts": (
        {"messages": [user([{"type": "text", "text": " "}, " "])]},
        "missing_user_message",
        "messages",
    ),
}


@pytest.mark.parametrize("body,code,param", list(VALIDATION_CASES.values()), ids=list(VALIDATION_CASES))
async def test_chat_validation_errors_use_the_envelope(
    api: TestClient, auth: dict[str, str], body: dict[str, Any], code: str, param: str | None
) -> None:
    """W-1.7 (+ W-3.9 missing_user_message, W-8.5 provider, W-10.2 effort): 400 with code and param, no turn run."""
    resp = await api.post(CHAT, json=body, headers=auth)
    await assert_error(resp, 400, code, param)
    assert executions(api.home) == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("stream", [True, "true"])
async def test_validation_error_on_streaming_request_is_json_not_sse(
    api: TestClient, auth: dict[str, str], stream: Any
) -> None:
    """W-1.7 / W-1.15: errors decided before admission keep their status and JSON body on a stream request."""
    resp = await api.post(CHAT, json={"messages": [{"role": "robot", "content": "x"}], "stream": stream}, headers=auth)
    await assert_error(resp, 400, "invalid_parameter", "messages[0].role")


async def test_valid_effort_and_boolean_strings_are_accepted(api: TestClient, auth: dict[str, str]) -> None:
    """W-1.7 / W-10.2 control case: a valid effort and a compatibility boolean string are not errors."""
    body = {
        **HELLO_CHAT,
        "reasoning_effort": "high",
        "stream": "false",
        "model_options": {"reasoning": {"enabled": "true"}},
    }
    resp = await api.post(CHAT, json=body, headers=auth)
    assert resp.status == 200
    assert (await resp.json())["object"] == "chat.completion"
    assert executions(api.home)[-1]["reasoning_effort"] == "high"  # type: ignore[attr-defined]


async def test_oversized_header_gets_400_envelope(api: TestClient, auth: dict[str, str]) -> None:
    """W-1.7: a 40 000-byte header → 400 with the JSON envelope (never 500, never plain text)."""
    resp = await api.post(CHAT, json=HELLO_CHAT, headers={**auth, "X-Foo": "a" * 40_000})
    err = await assert_error(resp, 400)
    assert isinstance(err["code"], str)
    assert executions(api.home) == []  # type: ignore[attr-defined]
    resp = await api.get("/v1/models", headers={**auth, "X-Foo": "b" * 40_000})
    err = await assert_error(resp, 400)
    assert isinstance(err["code"], str)


# -- W-1.8 body limit ---------------------------------------------------------------------------------


def padded_body(size: int) -> bytes:
    """A valid chat body of exactly `size` bytes (JSON whitespace padding)."""
    core = json.dumps(HELLO_CHAT).encode()
    return core + b" " * (size - len(core))


async def chunks(data: bytes, size: int = 1 << 20) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


async def test_body_over_limit_with_content_length_gets_413(api: TestClient, auth: dict[str, str]) -> None:
    """W-1.8: Content-Length over 10 000 000 → 413 body_too_large."""
    resp = await api.post(CHAT, data=io.BytesIO(padded_body(MAX_BODY + 1)), headers=auth)
    assert resp.request_info.headers.get("Content-Length") == str(MAX_BODY + 1)
    await assert_error(resp, 413, "body_too_large")
    assert executions(api.home) == []  # type: ignore[attr-defined]


async def test_chunked_body_over_limit_gets_413(api: TestClient, auth: dict[str, str]) -> None:
    """W-1.8: a chunked body exceeding 10 000 000 bytes → 413 body_too_large (with security headers, W-1.6)."""
    resp = await api.post(CHAT, data=chunks(padded_body(MAX_BODY + 1)), headers=auth)
    assert resp.request_info.headers.get("Transfer-Encoding") == "chunked"
    await assert_error(resp, 413, "body_too_large")
    assert executions(api.home) == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("chunked", [False, True], ids=["content_length", "chunked"])
async def test_body_of_exactly_the_limit_is_accepted(api: TestClient, auth: dict[str, str], chunked: bool) -> None:
    """W-1.8: at most 10 000 000 bytes is allowed — exactly the limit is not 413."""
    body = padded_body(MAX_BODY)
    resp = await api.post(CHAT, data=chunks(body) if chunked else io.BytesIO(body), headers=auth)
    assert resp.status == 200, await resp.read()
    assert (await resp.json())["object"] == "chat.completion"


# -- W-1.9 concurrency cap -------------------------------------------------------------------------


async def test_concurrency_cap_returns_429_then_frees_the_slot(make_api: Any, auth: dict[str, str]) -> None:
    """W-1.9: at the cap a new turn gets 429 rate_limit_exceeded + Retry-After: 1; a disconnect frees the slot."""
    api = await make_api(config={"api_server": {"max_concurrent_runs": 1}})
    first = await api.post(CHAT, json={"stream": True, "messages": [user("hang")]}, headers=auth)
    assert first.status == 200
    await read_until(first, b"event: hermes.tool.progress")

    for body in (HELLO_CHAT, {**HELLO_CHAT, "stream": True}):
        resp = await api.post(CHAT, json=body, headers=auth)
        assert resp.headers.get("Retry-After") == "1"
        await assert_error(resp, 429, "rate_limit_exceeded", None)
        assert json.loads(await resp.read()) == {
            "error": {
                "message": "Too many concurrent runs (max 1)",
                "type": "rate_limit_error",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        }
    resp = await api.get("/v1/models", headers=auth)  # non-work requests are not capped
    assert resp.status == 200
    await resp.read()

    first.close()  # the client disconnects: the unkeyed turn is cancelled and its slot freed

    async def hello() -> int:
        resp = await api.post(CHAT, json=HELLO_CHAT, headers=auth)
        if resp.status == 200:
            assert (await resp.json())["object"] == "chat.completion"
        else:
            await assert_error(resp, 429, "rate_limit_exceeded")
        return resp.status

    await wait_for_async(hello, until=lambda status: status == 200, interval=0.1, what="the freed slot")


# -- W-1.10 session headers ---------------------------------------------------------------------------

BAD_SESSION_IDS = {
    "slash": "a/b",
    "backslash": "a\\b",
    "dot": ".",
    "dotdot": "..",
    "leading_nbsp": "\u00a0lead",
    "trailing_nbsp": "trail\u00a0",
    "surrounding_ideographic_space": "\u3000both\u3000",
    "too_long": "s" * 257,
    "empty": "",
}


@pytest.mark.parametrize("value", list(BAD_SESSION_IDS.values()), ids=list(BAD_SESSION_IDS))
async def test_invalid_session_id_header_gets_400(api: TestClient, auth: dict[str, str], value: str) -> None:
    """W-1.10: X-Hermes-Session-Id with / or \\, . or .., surrounding whitespace, > 256 chars → 400 invalid_session_id.

    (SP / HTAB around a field value are optional whitespace the HTTP parser removes, RFC 9110 §5.5; the
    server can only see other Unicode whitespace, hence NBSP / U+3000 here.)
    """
    for stream in (False, True):
        resp = await api.post(
            CHAT, json={**HELLO_CHAT, "stream": stream}, headers={**auth, "X-Hermes-Session-Id": value}
        )
        await assert_error(resp, 400, "invalid_session_id", "X-Hermes-Session-Id")
    assert executions(api.home) == []  # type: ignore[attr-defined]


async def test_session_id_of_256_chars_is_accepted(api: TestClient, auth: dict[str, str]) -> None:
    """W-1.10 boundary: 256 characters is valid and echoed."""
    sid = "s" * 256
    resp = await api.post(CHAT, json=HELLO_CHAT, headers={**auth, "X-Hermes-Session-Id": sid})
    assert resp.status == 200
    assert resp.headers["X-Hermes-Session-Id"] == sid
    await resp.read()


@pytest.mark.parametrize("value", ["k" * 257, ""], ids=["too_long", "empty"])
async def test_invalid_session_key_header_gets_400(api: TestClient, auth: dict[str, str], value: str) -> None:
    """W-1.10: X-Hermes-Session-Key longer than 256 chars (or empty) → 400 invalid_session_key."""
    resp = await api.post(CHAT, json=HELLO_CHAT, headers={**auth, "X-Hermes-Session-Key": value})
    await assert_error(resp, 400, "invalid_session_key", "X-Hermes-Session-Key")
    assert executions(api.home) == []  # type: ignore[attr-defined]


async def test_session_key_of_256_chars_is_accepted_and_echoed(api: TestClient, auth: dict[str, str]) -> None:
    """W-1.10 boundary / §1.6: a 256-char key is valid and echoed unchanged."""
    key = "team/alpha:" + "k" * 245
    assert len(key) == 256
    resp = await api.post(CHAT, json=HELLO_CHAT, headers={**auth, "X-Hermes-Session-Key": key})
    assert resp.status == 200
    assert resp.headers["X-Hermes-Session-Key"] == key
    await resp.read()


# -- W-1.11 routing errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method,path,allowed",
    [
        ("GET", CHAT, "POST"),
        ("PUT", "/v1/models", "GET"),
        ("DELETE", "/v1/capabilities", "GET"),
        ("POST", "/health", "GET"),
        ("PATCH", CHAT, "POST"),
    ],
)
async def test_known_path_with_other_method_gets_405(
    api: TestClient, auth: dict[str, str], method: str, path: str, allowed: str
) -> None:
    """W-1.11: known path, unsupported method → 405 method_not_allowed with an Allow header."""
    resp = await api.request(method, path, headers=auth)
    await assert_error(resp, 405, "method_not_allowed", None)
    assert allowed.lower() in header_names(resp.headers.get("Allow"))
    assert method.lower() not in header_names(resp.headers.get("Allow"))


@pytest.mark.parametrize("path", ["/v1/nope", "/v1/embeddings", "/api/cron/nope", "/p/default/v1/models", "/"])
async def test_unknown_path_gets_404_not_found(api: TestClient, auth: dict[str, str], path: str) -> None:
    """W-1.11 / §1.1: unknown routes (including the upstream-only ones) → 404 not_found envelope."""
    resp = await api.get(path, headers=auth)
    await assert_error(resp, 404, "not_found")
    resp = await api.post(path, json=HELLO_CHAT, headers=auth)
    await assert_error(resp, 404, "not_found")


# -- W-1.13 content list size ---------------------------------------------------------------------


async def test_content_list_over_1000_parts_gets_400(api: TestClient, auth: dict[str, str]) -> None:
    """W-1.13: a content list of 1001 parts → 400 invalid_content_part."""
    parts = [{"type": "text", "text": "a"}] * 1001
    resp = await api.post(CHAT, json={"messages": [user(parts)]}, headers=auth)
    err = await assert_error(resp, 400, "invalid_content_part")
    assert err["param"] is not None and err["param"].startswith("messages[0].content")
    assert executions(api.home) == []  # type: ignore[attr-defined]


async def test_content_list_of_1000_parts_is_accepted(api: TestClient, auth: dict[str, str]) -> None:
    """W-1.13 boundary: exactly 1000 parts is allowed."""
    parts = [{"type": "text", "text": "a"}] * 1000
    resp = await api.post(CHAT, json={"messages": [user(parts)]}, headers=auth)
    assert resp.status == 200
    assert (await resp.json())["object"] == "chat.completion"
    assert len(executions(api.home)[-1]["input"]["content"]) == 1000  # type: ignore[attr-defined]


# -- §1.6 / §1.7: header and query values that are not UTF-8 -----------------------------------------------------------

# aiohttp hands such bytes to the app as lone surrogates, which SQLite and every UTF-8 encoder refuse.
NOT_UTF8 = [b"\xff\xfe", b"\xed\xa0\x80", b"ok\x80"]
HEADER_ROUTES = {
    # header: (code, the routes that read it)
    "X-Hermes-Session-Key": (
        "invalid_session_key",
        [("POST", "/v1/responses"), ("POST", CHAT), ("POST", "/v1/runs"), ("POST", "/api/sessions/s1/chat")],
    ),
    "X-Hermes-Session-Id": ("invalid_session_id", [("POST", CHAT), ("POST", "/v1/runs")]),
    "Idempotency-Key": ("invalid_idempotency_key", [("POST", "/v1/responses"), ("POST", "/api/sessions/s1/chat")]),
    "Last-Event-ID": (
        "invalid_parameter",
        [("GET", "/v1/runs/run_x/events"), ("POST", "/api/sessions/s1/chat/stream")],
    ),
    "X-Hermes-Tool-Items": ("invalid_parameter", [("POST", "/v1/responses")]),
    "X-Hermes-Tool-Progress": ("invalid_parameter", [("POST", CHAT)]),
}
TURN_BODY = json.dumps({"input": "hello", "message": "hello", **HELLO_CHAT}).encode()


def raw_with_header(method: str, path: str, name: str, value: bytes) -> bytes:
    body = TURN_BODY if method == "POST" else b""
    return (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer {TEST_KEY}\r\n"
        f"Content-Length: {len(body)}\r\n".encode()
        + name.encode()
        + b": "
        + value
        + b"\r\n\r\n"
        + body
    )


@pytest.mark.parametrize("value", NOT_UTF8, ids=["latin1", "encoded_surrogate", "stray_continuation"])
@pytest.mark.parametrize("name", list(HEADER_ROUTES))
async def test_a_header_the_server_reads_that_is_not_utf8_gets_its_own_400(
    api: TestClient, name: str, value: bytes
) -> None:
    """§1.6 / W-1.7: the header's §1.6 code (else invalid_parameter) with `param` naming it, never 500 (a bad
    X-Hermes-Session-Key on /v1/responses used to reach SQLite); nothing runs."""
    code, routes = HEADER_ROUTES[name]
    for method, path in routes:
        reply = await raw_request(api, raw_with_header(method, path, name, value))
        assert_error_envelope(reply, 400, code, param=name, type="invalid_request_error")
        assert_security_headers(reply.headers)
    assert executions(api.home) == []  # type: ignore[attr-defined]


async def test_a_header_that_is_utf8_but_not_ascii_still_works(api: TestClient, auth: dict[str, str]) -> None:
    """Only undecodable bytes are refused: a UTF-8 session key (1-256 characters, §1.6) is echoed as sent."""
    key = "clé-ключ-鍵"
    request = raw_with_header("POST", "/v1/responses", "X-Hermes-Session-Key", key.encode())
    reply = await raw_request(api, request)
    assert reply.status == 200, reply.raw[:300]
    assert reply.headers["X-Hermes-Session-Key"].encode("latin-1").decode() == key


@pytest.mark.parametrize(
    "target,param",
    [
        ("/api/sessions?source=%FF", "source"),
        ("/api/sessions?limit=%ED%A0%80", "limit"),
        ("/api/sessions/s1/messages?order=%C3", "order"),
        ("/v1/responses/resp_x?stream=true&starting_after=%FF", "starting_after"),
        ("/api/model/options?refresh=%FF", "refresh"),
    ],
)
async def test_a_query_parameter_that_is_not_utf8_gets_400_naming_it(api: TestClient, target: str, param: str) -> None:
    """A query value that does not decode to UTF-8 is refused rather than silently read as U+FFFD."""
    request = (
        f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer {TEST_KEY}\r\n\r\n"
    )
    reply = await raw_request(api, request.encode())
    assert_error_envelope(reply, 400, "invalid_parameter", param=param, type="invalid_request_error")


async def test_undecodable_origin_and_authorization_keep_their_own_answers(api: TestClient) -> None:
    """§1.4 / §1.3 come first: an Origin that is not UTF-8 is not on any allowlist (403), such a key fails (401)."""
    reply = await raw_request(api, raw_with_header("GET", "/v1/models", "Origin", b"http://\xff.example"))
    assert_error_envelope(reply, 403, "origin_not_allowed")
    request = (
        b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer \xed\xa0\x80\r\n\r\n"
    )
    assert_error_envelope(await raw_request(api, request), 401, "gateway_auth_failed")


async def test_the_checks_on_the_way_in_hold_no_coroutine_while_a_stream_is_open(api: TestClient) -> None:
    """CORS, auth, limits and the profile check hand the request on without awaiting it (issue 25): an open stream's
    await chain — resumed on every wake-up of its task, walked by every full garbage collection — holds the error
    middleware that wraps the reply, and none of them."""
    checks = {"cors_middleware", "auth_middleware", "limits_middleware", "profile_middleware", "_in_profile"}
    headers = {"Authorization": f"Bearer {TEST_KEY}", "Origin": "http://example.com"}
    body = {"stream": True, "messages": [{"role": "user", "content": "keepalive"}]}
    async with api.post(CHAT, json=body, headers=headers) as resp:
        assert resp.status == 403  # CORS checked the Origin (off by default) before anything ran
    async with api.post(CHAT, json=body, headers={"Authorization": headers["Authorization"]}) as resp:
        await read_until(resp, b"reasoning_content")  # the turn runs, its stream is open
        running = {o.cr_code.co_name for o in gc.get_objects() if inspect.iscoroutine(o) and o.cr_frame is not None}
        assert "error_middleware" in running and "chat_completions" in running, running
        assert running & checks == set(), running
