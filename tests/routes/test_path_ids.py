"""Path ids whose percent-escapes are not UTF-8 (`%FF`, an encoded surrogate `%ED%A0%80`) name nothing: 404 for the
server-made response and run ids, as for any unknown id; 400 invalid_session_id for client-chosen session ids, which
must not alias the session literally named `%FF` (WIRE.md §1.6, §1.7)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from aiohttp.test_utils import TestClient

from tests.helpers import assert_error_envelope, fetch, raw_exchange, raw_request
from tests.live import TEST_KEY, LiveGateway, executions

BAD_IDS = ["%FF", "%ED%A0%80", "resp_%C3"]
RESPONSE_ROUTES = [
    ("GET", "/v1/responses/{}"),
    ("GET", "/v1/responses/{}/input_items"),
    ("DELETE", "/v1/responses/{}"),
    ("POST", "/v1/responses/{}/cancel"),
]
RUN_ROUTES = [("GET", "/v1/runs/{}"), ("GET", "/v1/runs/{}/events"), ("POST", "/v1/runs/{}/stop")]
SESSION_ROUTES = [
    ("GET", "/api/sessions/{}"),
    ("PATCH", "/api/sessions/{}"),
    ("DELETE", "/api/sessions/{}"),
    ("GET", "/api/sessions/{}/messages"),
    ("POST", "/api/sessions/{}/chat"),
    ("POST", "/api/sessions/{}/chat/stream"),
]


def raw(method: str, path: str, body: bytes = b"") -> bytes:
    """The path exactly as written: a client library would re-encode the escapes."""
    if method in ("POST", "PATCH") and not body:
        body = b'{"message":"hello"}' if path.endswith(("/chat", "/stream")) else b"{}"
    return (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer {TEST_KEY}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


@pytest.mark.parametrize("bad", BAD_IDS)
async def test_response_and_run_ids_that_are_not_utf8_are_unknown(api: TestClient, bad: str) -> None:
    for method, template in RESPONSE_ROUTES:
        reply = await raw_request(api, raw(method, template.format(bad)))
        assert_error_envelope(reply, 404, "response_not_found", type="not_found_error")
    for method, template in RUN_ROUTES:
        reply = await raw_request(api, raw(method, template.format(bad)))
        assert_error_envelope(reply, 404, "run_not_found", type="not_found_error")


@pytest.mark.parametrize("bad", BAD_IDS)
async def test_session_ids_that_are_not_utf8_get_invalid_session_id(api: TestClient, bad: str) -> None:
    """The same answer as any other id breaking the §1.6 rules; session chat creates nothing and runs nothing."""
    for method, template in SESSION_ROUTES:
        reply = await raw_request(api, raw(method, template.format(bad)))
        assert_error_envelope(reply, 400, "invalid_session_id", param="session_id", type="invalid_request_error")
    assert executions(api.home) == []  # type: ignore[attr-defined]


async def test_a_session_named_with_a_percent_sign_is_reached_only_by_its_own_escape(
    api: TestClient, auth: dict[str, str]
) -> None:
    """`/api/sessions/%FF` used to resolve to the session literally called "%FF", whose path is `%25FF`."""
    created = await fetch(api, "POST", "/api/sessions", json={"id": "%FF"}, headers=auth)
    assert created.status == 201
    reply = await raw_request(api, raw("GET", "/api/sessions/%25FF"))
    assert reply.status == 200 and reply.json()["session"]["id"] == "%FF"
    reply = await raw_request(api, raw("GET", "/api/sessions/%FF"))
    assert_error_envelope(reply, 400, "invalid_session_id", param="session_id")


RAW_PATHS = [b"/v1/responses/\xff", b"/v1/runs/\xed\xa0\x80/events", b"/api/sessions/\x80", b"/nope/\xff"]


def test_raw_path_bytes_that_are_not_utf8_name_nothing_under_the_pure_python_parser(
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    """aiohttp's C parser refuses raw non-ASCII path bytes itself (tests/gateway/test_runner.py); its pure-Python
    fallback (no C extension, or AIOHTTP_NO_EXTENSIONS) hands them on as lone surrogates, which used to reach SQLite."""
    gateway = gateway_factory(extra_env={"AIOHTTP_NO_EXTENSIONS": "1"})
    for path in RAW_PATHS:
        request = b"GET " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer "
        reply = raw_exchange(gateway.host, gateway.port, request + TEST_KEY.encode() + b"\r\n\r\n")
        assert_error_envelope(reply, 404, "not_found", type="not_found_error")
