"""The live gateway the fuzz tests hit, and the properties every one of its answers must have.

One reference gateway per test module (tests/fuzz/conftest.py), running the millisecond fuzz script. Before the
fuzzing it stores a session, a response and a run (the canary); after each request nothing may be left behind —
no turn running or queued, no slot admitted, no stream open (`/health/detailed`, issue 20: a request that failed
after admission used to keep its slot for good); after each test the gateway must answer /health, still serve the
canary exactly as before, and its log must hold no traceback (a turn that failed outside the agent, a store write
that raised: failures a client never sees as a status code).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tests.helpers import (
    Reply,
    assert_error_envelope,
    live_request,
    metric_samples,
    parse_sse,
    raw_exchange,
    wait_until_nothing_held,
)
from tests.live import TEST_KEY, LiveGateway

AUTHORIZATION = f"Bearer {TEST_KEY}".encode()
METRICS_TYPES = ("text/plain", "application/openmetrics-text")  # GET /metrics (issue 24)


def http_request(
    method: str,
    target: bytes,
    body: bytes | None = None,
    headers: list[tuple[bytes, bytes]] | None = None,
    *,
    auth: bool = True,
) -> bytes:
    """Raw HTTP/1.1 request bytes. The fuzzed headers go last, after Content-Length and `Connection: close`, so a
    value that smuggles CR LF cannot leave the server waiting for bytes that never come."""
    lines = [method.encode() + b" " + target + b" HTTP/1.1", b"Host: 127.0.0.1", b"Connection: close"]
    if auth:
        lines.append(b"Authorization: " + AUTHORIZATION)
    if body is not None:
        lines.append(b"Content-Length: " + str(len(body)).encode())
    lines += [name + b": " + value for name, value in headers or []]
    return b"\r\n".join(lines) + b"\r\n\r\n" + (body or b"")


def check_reply(reply: Reply, what: object) -> None:
    """No status ≥ 500; every non-2xx is the §1.7 envelope with the JSON content type; a 2xx body is whole JSON, a
    well-formed SSE stream, or a /metrics document."""
    assert reply.status < 500, (what, reply.status, reply.raw[:500])
    if reply.status >= 400:
        assert_error_envelope(reply, reply.status)
    elif reply.is_stream:
        parse_sse(reply.raw)  # well-formed records (none at all is fine: a resume past the end, W-4.12)
    elif reply.headers.get("Content-Type", "").startswith(METRICS_TYPES):
        metric_samples(reply.raw.decode())  # GET /metrics: a document Prometheus' own parser reads
    elif reply.raw.strip():
        json.loads(reply.raw)


@dataclass
class FuzzTarget:
    """A live gateway with its canary; `send` applies the properties and counts the requests."""

    gateway: LiveGateway
    canary: dict[str, Any] = field(default_factory=dict)
    statuses: Counter[int] = field(default_factory=Counter)

    @property
    def session_id(self) -> str:
        return str(self.canary["session_id"])

    @property
    def response_id(self) -> str:
        return str(self.canary["response_id"])

    @property
    def run_id(self) -> str:
        return str(self.canary["run_id"])

    def send(self, request: bytes) -> Reply:
        """Send one request, check its answer, then wait until it left nothing behind (a detached turn settles in
        milliseconds on the fuzz script; a turn still held after 10 s fails the example)."""
        reply = raw_exchange(self.gateway.host, self.gateway.port, request)
        self.statuses[reply.status] += 1
        check_reply(reply, request[:300])
        wait_until_nothing_held(self.gateway, request[:300])
        return reply

    @property
    def sent(self) -> int:
        """How many generated requests were answered so far."""
        return sum(self.statuses.values())

    def served_since(self, before: Counter[int]) -> int:
        """How many answers since `before` (a copy of `statuses`) were 2xx: the fuzz reached the handlers' logic."""
        return sum(n for status, n in (self.statuses - before).items() if status < 300)

    def _get(self, path: str) -> Any:
        reply = live_request(self.gateway, "GET", path)
        assert reply.status == 200, (path, reply.status, reply.raw[:300])
        return reply.json()

    def _snapshot(self) -> dict[str, Any]:
        return {
            "response": self._get(f"/v1/responses/{self.response_id}"),
            "input_items": self._get(f"/v1/responses/{self.response_id}/input_items"),
            "messages": self._get(f"/api/sessions/{self.session_id}/messages"),
            "run": self._get(f"/v1/runs/{self.run_id}"),
        }

    def plant(self) -> None:
        """Store the canary: a session with a turn (its run), and a stored response."""
        gateway = self.gateway
        created = live_request(gateway, "POST", "/api/sessions", {"id": "canary-session", "title": "Canary"})
        assert created.status == 201, created.raw
        chat = live_request(gateway, "POST", "/api/sessions/canary-session/chat", {"message": "use tool"})
        assert chat.status == 200, chat.raw
        response = live_request(gateway, "POST", "/v1/responses", {"input": "canary", "store": True})
        assert response.status == 200, response.raw
        self.canary = {"session_id": "canary-session", "response_id": response.json()["id"], "run_id": chat.run_id}
        self.canary["snapshot"] = self._snapshot()

    def check_intact(self) -> None:
        """Healthy, the canary unchanged, no traceback in the log."""
        health = live_request(self.gateway, "GET", "/health")
        assert health.status == 200 and health.json()["status"] == "ok"
        assert self._snapshot() == self.canary["snapshot"]
        output = self.gateway.output()
        assert "Traceback" not in output, output[output.index("Traceback") - 300 :][:3000]
