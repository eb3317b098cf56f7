"""Every operation a live gateway serves, read from its own /openapi.json, and a request to it with any of its
declared header and query parameters set to given bytes (issue 20: a route added tomorrow is fuzzed without
anyone listing it here).

What the document cannot say lives here: a body each operation with a request body accepts, the path ids to call
it on, and query values that lead a handler down its fullest path while another parameter is replaced. An
operation with a request body and no entry in BODIES fails `served_operations`, so a new one is noticed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_from_bytes

from tests.helpers import live_request
from tests.live import LiveGateway

from .target import http_request

HELLO = {"role": "user", "content": "hello"}
# Bodies each operation accepts (the first is used unless a test picks another): a streamed and a plain form where
# the operation has both, so a header reaches both deliveries.
BODIES: dict[str, tuple[dict[str, Any], ...]] = {
    "chat_completions": ({"messages": [HELLO]}, {"messages": [HELLO], "stream": True}),
    "responses": ({"input": "hello"}, {"input": "hello", "stream": True}, {"input": "hello", "background": True}),
    "responses_compact": ({"model": "hermes-agent", "input": "hello"},),
    "runs": ({"input": "hello"},),
    "run_approval": ({"choice": "deny"},),
    "run_answer": ({"text": "main"},),
    "run_tool_outputs": ({"outputs": [{"call_id": "call_fuzz", "output": "42"}]},),
    "session_create": ({"title": "fuzz"},),
    "session_update": ({"title": "fuzz"},),
    "session_fork": ({},),
    "session_chat": ({"message": "hello"},),
    "session_chat_stream": ({"message": "hello"},),
    "job_create": ({"schedule": "every 1h", "prompt": "hello"},),
    "job_update": ({"name": "fuzz"},),
    "cron_fire": ({},),
}
# Other query values sent while one parameter is replaced: the GET of a Response then re-streams it, so that
# `starting_after` reaches the stream and not only the parser.
BASE_QUERY: dict[str, dict[str, str]] = {"response": {"stream": "true"}}


@dataclass(frozen=True)
class Operation:
    """One served operation: its id, method, path template and the parameters it declares, by place."""

    id: str
    method: str
    path: str
    headers: tuple[str, ...]
    query: tuple[str, ...]
    path_params: tuple[str, ...]
    body: bool

    @property
    def params(self) -> tuple[tuple[str, str], ...]:
        """(place, name) of every header and query parameter."""
        return (*(("header", h) for h in self.headers), *(("query", q) for q in self.query))


def served_operations(live: LiveGateway) -> list[Operation]:
    """The operations of the gateway's /openapi.json."""
    reply = live_request(live, "GET", "/openapi.json")
    assert reply.status == 200, reply.raw[:300]
    out = []
    for path, methods in reply.json()["paths"].items():
        for method, op in methods.items():
            params = op.get("parameters", [])

            def named(where: str, params: list[dict[str, Any]] = params) -> tuple[str, ...]:
                return tuple(p["name"] for p in params if p["in"] == where)

            operation = Operation(
                op["operationId"],
                method.upper(),
                path,
                named("header"),
                named("query"),
                named("path"),
                "requestBody" in op,
            )
            assert not operation.body or operation.id in BODIES, f"{operation.id}: add a body it accepts to BODIES"
            out.append(operation)
    return out


def percent_encoded(value: bytes) -> bytes:
    """A query value as a client writes any bytes: every byte percent-encoded (`%00`, `%ED%A0%80`, …)."""
    return quote_from_bytes(value, safe="").encode()


def request_bytes(
    op: Operation,
    ids: Mapping[str, str],
    headers: Sequence[tuple[str, bytes]] = (),
    query: Sequence[tuple[str, bytes]] = (),
    *,
    body: int = 0,
    extra: Sequence[tuple[bytes, bytes]] = (),
) -> bytes:
    """Raw request bytes for `op`: path ids from `ids` (by parameter name), the header values as raw bytes (CR, LF,
    NUL and undecodable bytes included: the HTTP parser's refusal is part of what is tested), the query values
    percent-encoded over BASE_QUERY, and BODIES[op.id][body] when the operation takes a body."""
    path = op.path
    for name in op.path_params:
        path = path.replace("{" + name + "}", quote_from_bytes(ids[name].encode(), safe=""))
    given = {name for name, _ in query}
    pairs = [(k.encode(), percent_encoded(v.encode())) for k, v in BASE_QUERY.get(op.id, {}).items() if k not in given]
    pairs += [(name.encode(), percent_encoded(value)) for name, value in query]
    target = path.encode() + (b"?" + b"&".join(k + b"=" + v for k, v in pairs) if pairs else b"")
    payload = json.dumps(BODIES[op.id][body % len(BODIES[op.id])]).encode() if op.body else None
    return http_request(op.method, target, payload, [*extra, *((n.encode(), v) for n, v in headers)])
