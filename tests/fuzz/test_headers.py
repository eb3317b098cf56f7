"""Hostile header bytes (X-Hermes-Session-Id/-Key, Idempotency-Key, Last-Event-ID, Authorization, Origin, …; raw
bytes, CR/LF/NUL, not UTF-8, over the limits) on every POST route and the GET routes with ids, hostile path ids
and query strings, and — for every operation of the served /openapi.json — every declared header and query
parameter drawn from hostile values (Unicode digits of every class, integers past 4 300 digits, NUL and other
controls, lone surrogates, 8 KB values; issue 20), sent over a raw socket to one live gateway.

Properties (tests/fuzz/target.py): no answer ≥ 500, every non-2xx in the §1.7 envelope with the JSON content type
(the HTTP parser's own rejections included), nothing left behind after each request (no turn, slot or stream in
/health/detailed), the gateway healthy afterwards with the canary unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .operations import Operation, request_bytes, served_operations
from .strategies import as_bytes, encode, fuzz_settings, header_sets, hostile_strings, url_parts
from .surfaces import SURFACES
from .target import FuzzTarget, http_request

pytestmark = [pytest.mark.fuzz, pytest.mark.slow]

Request = Callable[[FuzzTarget], tuple[str, bytes, bytes | None]]


def _get(template: str) -> Request:
    return lambda t: ("GET", template.format(r=t.response_id, u=t.run_id, s=t.session_id).encode(), None)


ROUTES: dict[str, Request] = {
    **{
        name: (lambda s: lambda t: (s.method, s.path.encode(), encode(s.base).encode()))(surface)
        for name, surface in SURFACES.items()
    },
    "response": _get("/v1/responses/{r}"),
    "response_stream": _get("/v1/responses/{r}?stream=true&starting_after=2"),
    "input_items": _get("/v1/responses/{r}/input_items"),
    "run": _get("/v1/runs/{u}"),
    "run_events": _get("/v1/runs/{u}/events"),
    "session": _get("/api/sessions/{s}"),
    "session_messages": _get("/api/sessions/{s}/messages"),
    "models": _get("/v1/models"),
    "health": _get("/health"),
}


def test_hostile_header_bytes_on_every_route(target: FuzzTarget) -> None:
    """§1.6 / W-1.7: undecodable, control, oversized and smuggling header values; never 500."""

    before = target.statuses.copy()

    @fuzz_settings(1200)
    @given(route=st.sampled_from(list(ROUTES)), headers=header_sets)
    def run(route: str, headers: list[tuple[bytes, bytes]]) -> None:
        method, path, body = ROUTES[route](target)
        replace_auth = any(name == b"Authorization" for name, _ in headers)
        target.send(http_request(method, path, body, headers, auth=not replace_auth))

    run()
    assert target.served_since(before) > 0
    target.check_intact()


ID_ROUTES = [
    "/v1/responses/{}",
    "/v1/responses/{}/input_items",
    "/v1/runs/{}",
    "/v1/runs/{}/events",
    "/api/sessions/{}",
    "/api/sessions/{}/messages",
]
QUERY_NAMES = [
    b"stream",
    b"starting_after",
    b"limit",
    b"offset",
    b"order",
    b"include_compacted",
    b"inline_images",
    b"x",
]


def test_hostile_path_ids_and_query_strings(target: FuzzTarget) -> None:
    """Ids that are not UTF-8, empty, dot segments or raw bytes, and query values of any bytes; never 500."""

    before = target.statuses.copy()

    @fuzz_settings(400)
    @given(
        template=st.sampled_from(ID_ROUTES),
        known=st.booleans(),
        ident=url_parts(),
        query=st.lists(st.tuples(st.sampled_from(QUERY_NAMES), url_parts()), max_size=3),
    )
    def run(template: str, known: bool, ident: bytes, query: list[tuple[bytes, bytes]]) -> None:
        if known:  # the canary's own ids, so the query reaches the handlers' logic
            ident = {"responses": target.response_id, "runs": target.run_id}.get(
                template.split("/")[2], target.session_id
            ).encode()
        path = template.encode().replace(b"{}", ident)
        if query:
            path += b"?" + b"&".join(name + b"=" + value for name, value in query)
        target.send(http_request("GET", path))

    run()
    assert target.served_since(before) > 0
    target.check_intact()


PARAMETER_EXAMPLES = 4000  # measured: about 25 s on 2 cores
FUZZ_SESSION = "fuzz-session"  # session routes run turns here, never on the canary


def test_hostile_values_of_every_declared_parameter_of_every_operation(target: FuzzTarget) -> None:
    """Issue 20: each operation of /openapi.json that declares header or query parameters gets one to three of them
    (now and then a header another operation declares: every route may read any of them) with hostile values; the
    header bytes go raw (CR, LF, NUL and undecodable bytes included), the query values percent-encoded. Never 500,
    nothing left behind; this is the test that finds a bad Last-Event-ID that takes a slot (defect 1)."""
    operations = [op for op in served_operations(target.gateway) if op.params]
    every_header = sorted({h for op in operations for h in op.headers})
    assert {"Last-Event-ID", "Idempotency-Key"} <= set(every_header) and operations
    created = http_request("POST", b"/api/sessions", encode({"id": FUZZ_SESSION}).encode())
    target.send(created)  # 201, or 409 when another test made it first
    before = target.statuses.copy()
    sent: dict[str, int] = {}

    @fuzz_settings(PARAMETER_EXAMPLES)
    @given(data=st.data(), op=st.sampled_from(operations))
    def run(data: st.DataObject, op: Operation) -> None:
        choices = [*op.params, *(("header", h) for h in every_header if h not in op.headers)]
        declared = st.sampled_from(op.params)
        picked = data.draw(
            st.lists(st.one_of(declared, declared, declared, st.sampled_from(choices)), min_size=1, max_size=3)
        )
        values = [(place, name, as_bytes(data.draw(hostile_strings))) for place, name in picked]
        ids = {"response_id": target.response_id, "run_id": target.run_id, "session_id": FUZZ_SESSION}
        if op.method == "DELETE":  # the canary stays; a missing id still has its parameters parsed
            ids = dict.fromkeys(ids, "fuzz-missing")
        headers = [(name, value) for place, name, value in values if place == "header"]
        query = [(name, value) for place, name, value in values if place == "query"]
        target.send(request_bytes(op, ids, headers, query, body=data.draw(st.integers(0, 2))))
        for _, name, _ in values:
            sent[name] = sent.get(name, 0) + 1

    run()
    assert target.served_since(before) > 0
    assert sum(target.statuses.values()) - sum(before.values()) >= PARAMETER_EXAMPLES
    assert {name for op in operations for _, name in op.params} <= set(sent), sent  # every parameter was reached
    target.check_intact()
