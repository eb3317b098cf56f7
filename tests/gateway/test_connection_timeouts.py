"""Issue 20, defect 4: connections that never finish their request are closed (gateway/runner.py), over raw sockets
to the real reference gateway on 127.0.0.1 with short time-outs (`api_server.limits.*`): a connection that sends
nothing, half a request line or part of its headers is closed once the head time-out passes; an idle kept-alive
connection once the keep-alive time-out passes; a body that stops arriving once the body time-out passes. A
stream, or a slow non-streaming reply, open for longer than all of them is not affected, nor is a slow but steady
client."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.helpers import live_request, parse_raw_reply
from tests.live import TEST_KEY, LiveGateway, start_gateway, write_home

HEAD_S = 1.0
KEEPALIVE_S = 1.5
BODY_S = 3.0
MARGIN_S = 1.5
LIMITS = {
    "header_timeout_seconds": HEAD_S,
    "keepalive_timeout_seconds": KEEPALIVE_S,
    "body_timeout_seconds": BODY_S,
}
AUTH = f"Authorization: Bearer {TEST_KEY}\r\n".encode()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    home = write_home(tmp_path_factory.mktemp("timeouts") / "home", config={"api_server": {"limits": LIMITS}})
    live = start_gateway(home)
    try:
        yield live
    finally:
        live.stop()


def connect(live: LiveGateway) -> socket.socket:
    return socket.create_connection((live.host, live.port), timeout=30)


def seconds_until_closed(sock: socket.socket, start: float) -> tuple[float, bytes]:
    """Read until the server closes the connection: (seconds since `start`, what it sent)."""
    data = b""
    with sock:
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
    return time.monotonic() - start, data


def opened_and_left(live: LiveGateway, sent: bytes) -> tuple[float, bytes]:
    sock = connect(live)
    start = time.monotonic()
    if sent:
        sock.sendall(sent)
    return seconds_until_closed(sock, start)


@pytest.mark.parametrize(
    "sent",
    [
        b"",
        b"GET /heal",
        b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: applica",
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + AUTH,
    ],
    ids=["nothing", "half-request-line", "part-of-the-headers", "headers-without-the-blank-line"],
)
def test_issue_20_defect_4_an_unfinished_request_head_is_closed(gateway: LiveGateway, sent: bytes) -> None:
    elapsed, data = opened_and_left(gateway, sent)
    assert HEAD_S - 0.2 <= elapsed <= HEAD_S + MARGIN_S, elapsed
    assert data == b""  # nothing was asked: nothing is answered


def test_issue_20_defect_4_an_idle_kept_alive_connection_is_closed(gateway: LiveGateway) -> None:
    sock = connect(gateway)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    first = sock.recv(65536)
    assert first.startswith(b"HTTP/1.1 200"), first
    elapsed, rest = seconds_until_closed(sock, time.monotonic())
    assert KEEPALIVE_S - 0.2 <= elapsed <= KEEPALIVE_S + MARGIN_S, elapsed
    assert rest == b""


def test_issue_20_defect_4_a_body_that_stops_arriving_is_closed(gateway: LiveGateway) -> None:
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + AUTH + b"Content-Length: 100\r\n\r\n{"
    elapsed, _ = opened_and_left(gateway, head)
    assert BODY_S - 0.2 <= elapsed <= BODY_S + MARGIN_S, elapsed


def test_issue_20_defect_4_a_slow_but_steady_client_is_served(gateway: LiveGateway) -> None:
    """The head in pieces within the head time-out, then a body over twice the head time-out: answered."""
    body = json.dumps({"messages": [{"role": "user", "content": "hello there"}]}).encode()
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json"
        b"\r\n" + AUTH + f"Content-Length: {len(body)}\r\n\r\n".encode()
    )
    with connect(gateway) as sock:
        for i in range(0, len(head), 20):
            sock.sendall(head[i : i + 20])
            time.sleep(HEAD_S * 0.6 / (len(head) / 20))
        for i in range(0, len(body), 8):
            sock.sendall(body[i : i + 8])
            time.sleep(HEAD_S * 2.2 / (len(body) / 8))
        _, data = seconds_until_closed(sock, time.monotonic())
    reply = parse_raw_reply(data)
    assert reply.status == 200, data
    assert reply.json()["choices"][0]["message"]["content"]


def test_issue_20_defect_4_replies_longer_than_every_time_out_are_not_affected(gateway: LiveGateway) -> None:
    """A "paced" turn takes about 3 s, longer than the head and keep-alive time-outs: streamed and as one JSON reply,
    it arrives whole; meanwhile the unfinished heads of other connections are closed."""

    def paced(stream: bool) -> tuple[int, bytes]:
        body = {"stream": stream, "messages": [{"role": "user", "content": "paced"}]}
        start = time.monotonic()
        reply = live_request(gateway, "POST", "/v1/chat/completions", body)
        assert time.monotonic() - start > max(HEAD_S, KEEPALIVE_S) + 0.5  # it outlasted the time-outs
        return reply.status, reply.raw

    with ThreadPoolExecutor(3) as pool:
        streamed = pool.submit(paced, True)
        whole = pool.submit(paced, False)
        stalled = pool.submit(opened_and_left, gateway, b"GET /heal")
        status, raw = streamed.result(30)
        assert status == 200 and raw.endswith(b"data: [DONE]\n\n") and b'"finish_reason":"stop"' in raw, raw
        status, raw = whole.result(30)
        assert status == 200 and b"Fourth part." in raw, raw
        assert stalled.result(30)[0] <= HEAD_S + MARGIN_S


def test_issue_20_defect_4_the_time_outs_are_settings(tmp_path: Path) -> None:
    from hermes_api_plugin.config.settings import load_settings

    settings = load_settings(write_home(tmp_path, config={"api_server": {"limits": LIMITS}}, script=None), environ={})
    assert (settings.header_timeout_seconds, settings.keepalive_timeout_seconds, settings.body_timeout_seconds) == (
        HEAD_S,
        KEEPALIVE_S,
        BODY_S,
    )
