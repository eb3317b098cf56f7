"""gateway/runner.py: requests aiohttp's HTTP parser refuses answer in the §1.7 envelope (WIRE.md §1.5, §1.7), over a
raw socket to the real reference gateway on 127.0.0.1 — and the hook into aiohttp's internals fails loudly if an
aiohttp upgrade moves them."""

from __future__ import annotations

import asyncio
import inspect

import aiohttp
import pytest
from aiohttp import web
from aiohttp.http import HttpVersion11
from aiohttp.http_parser import RawRequestMessage
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from hermes_api_plugin.gateway.runner import ApiRunner, without_profile_prefix
from tests.helpers import JSON_TYPE, SECURITY_HEADERS, Reply, assert_error_envelope, live_request, raw_exchange
from tests.live import TEST_KEY, LiveGateway

HOOK_BROKEN = (
    "aiohttp {version} no longer routes parser rejections through RequestHandler.handle_error as "
    "hermes_api_plugin/gateway/runner.py expects: adapt that module to this aiohttp"
)


def post(content_length: bytes, body: bytes = b"{}", extra: bytes = b"") -> bytes:
    return (
        b"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        b"Authorization: Bearer "
        + TEST_KEY.encode()
        + b"\r\n"
        + extra
        + b"Content-Length: "
        + content_length
        + b"\r\n\r\n"
        + body
    )


def assert_parser_envelope(reply: Reply, code: str, param: str | None) -> dict[str, object]:
    error = assert_error_envelope(reply, 400, code, param=param, type="invalid_request_error")
    for name, value in SECURITY_HEADERS.items():
        assert reply.headers.get(name) == value, name
    return error


@pytest.mark.parametrize(
    "value",
    [b"abc", b"-1", b"+5", b"1 2", b"0x10", b"", b"9" * 40],
    ids=["letters", "negative", "plus_sign", "two_numbers", "hex", "empty", "overflow"],
)
def test_unparsable_content_length_gets_invalid_content_length(live_gateway: LiveGateway, value: bytes) -> None:
    """W-1.7 / §1.7: 400 invalid_content_length with param Content-Length, in the envelope, with the §1.5 headers."""
    reply = raw_exchange(live_gateway.host, live_gateway.port, post(value))
    error = assert_parser_envelope(reply, "invalid_content_length", "Content-Length")
    assert "Content-Length" in str(error["message"])
    assert live_gateway.executions() == []


def test_two_different_content_lengths_get_invalid_content_length(live_gateway: LiveGateway) -> None:
    """§1.7: a request smuggling two lengths is refused the same way, nothing runs."""
    reply = raw_exchange(live_gateway.host, live_gateway.port, post(b"2", extra=b"Content-Length: 5\r\n"))
    assert_parser_envelope(reply, "invalid_content_length", "Content-Length")
    assert live_gateway.executions() == []


MALFORMED = {
    "nul_in_header": b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
    "raw_byte_in_path": b"GET /v1/responses/\xff HTTP/1.1\r\nHost: x\r\n\r\n",
    "raw_byte_in_query": b"GET /api/sessions?source=\xff HTTP/1.1\r\nHost: x\r\n\r\n",
    "not_http": b"GARBAGE\r\n\r\n",
    "tls_hello": b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03",
    "unknown_version": b"GET /health HTTP/9.9\r\nHost: x\r\n\r\n",
    "no_host": b"GET /health HTTP/1.1\r\n\r\n",
    "header_over_parser_limit": b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 70_000 + b"\r\n\r\n",
    "bad_chunk_size": b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
}


@pytest.mark.parametrize("request_bytes", list(MALFORMED.values()), ids=list(MALFORMED))
def test_other_parser_rejections_get_malformed_request(live_gateway: LiveGateway, request_bytes: bytes) -> None:
    """§1.7: every other request the HTTP parser refuses gets 400 malformed_request in the envelope, not text."""
    reply = raw_exchange(live_gateway.host, live_gateway.port, request_bytes)
    error = assert_parser_envelope(reply, "malformed_request", None)
    assert str(error["message"]).startswith("Malformed HTTP request: ")


def test_parser_rejection_never_repeats_the_clients_bytes(live_gateway: LiveGateway) -> None:
    """§1.7: `message` passes redaction — a rejected Authorization line's key is not quoted back."""
    request = b"GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TEST_KEY.encode() + b"\x00\r\n\r\n"
    reply = raw_exchange(live_gateway.host, live_gateway.port, request)
    assert_parser_envelope(reply, "malformed_request", None)
    assert TEST_KEY.encode() not in reply.raw


def test_gateway_serves_after_parser_rejections_and_logs_no_traceback(live_gateway: LiveGateway) -> None:
    """A refused request costs one connection, not the server: health answers, the log holds no traceback."""
    for request_bytes in MALFORMED.values():
        raw_exchange(live_gateway.host, live_gateway.port, request_bytes)
    reply = live_request(live_gateway, "GET", "/health")
    assert reply.status == 200 and reply.headers["Content-Type"] == JSON_TYPE
    assert "Traceback" not in live_gateway.output()


async def test_the_aiohttp_hook_still_holds() -> None:
    """The internals gateway/runner.py relies on, named, so an aiohttp upgrade that moves them fails here first."""
    version = aiohttp.__version__
    params = list(inspect.signature(web.RequestHandler.handle_error).parameters)
    assert params == ["self", "request", "status", "exc", "message"], HOOK_BROKEN.format(version=version)
    runner = ApiRunner(web.Application())
    await runner.setup()
    try:
        server = runner.server
        assert server is not None
        assert hasattr(server, "_loop") and hasattr(server, "_kwargs"), HOOK_BROKEN.format(version=version)
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        reply = await asyncio.to_thread(raw_exchange, "127.0.0.1", port, post(b"abc"))
    finally:
        await runner.cleanup()
    assert reply.headers.get("Content-Type") == JSON_TYPE, HOOK_BROKEN.format(version=version)
    assert_parser_envelope(reply, "invalid_content_length", "Content-Length")


@pytest.mark.parametrize(
    ("target", "profile", "rest"),
    [
        ("/p/work/v1/models", "work", "/v1/models"),
        ("/p/work/api/sessions?limit=2&source=a%20b", "work", "/api/sessions?limit=2&source=a%20b"),
        ("/p/work/api/sessions/a%2Fb/messages", "work", "/api/sessions/a%2Fb/messages"),
        ("/p/w%C3%A9rk/v1/models", "wérk", "/v1/models"),
        ("/p/work/", "work", "/"),
        ("/p/work", None, "/p/work"),
        ("/p//v1/models", None, "/p//v1/models"),
        ("/v1/p/work/models", None, "/v1/p/work/models"),
    ],
)
def test_a_profile_prefix_is_split_off_the_path_with_the_rest_kept_as_sent(
    target: str, profile: str | None, rest: str
) -> None:
    """§14.3: `/p/{profile}` mirrors every route; the runner strips it before routing, the query and the
    percent-encoding of the rest untouched."""
    message = RawRequestMessage(
        "GET", target, HttpVersion11, CIMultiDictProxy(CIMultiDict()), (), False, None, False, False, URL(target)
    )
    found, stripped = without_profile_prefix(message)
    assert found == profile
    assert stripped.path == rest and str(stripped.url) == rest


def test_the_reference_gateway_has_no_profiles_to_serve(live_gateway: LiveGateway) -> None:
    """§14.3 on a host without profiles: a prefixed route is 501 not_supported_by_host (after authentication);
    the same route without the prefix is served."""
    reply = live_request(live_gateway, "GET", "/p/work/v1/models", headers={"Authorization": "Bearer wrong-key-123456"})
    assert_error_envelope(reply, 401)
    for method, path in (("GET", "/p/work/v1/models"), ("POST", "/p/default/v1/chat/completions")):
        assert_error_envelope(live_request(live_gateway, method, path, {}), 501, "not_supported_by_host")
    assert live_request(live_gateway, "GET", "/v1/models").status == 200
