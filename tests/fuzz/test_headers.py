"""Hostile header bytes (X-Hermes-Session-Id/-Key, Idempotency-Key, Last-Event-ID, Authorization, Origin, …; raw
bytes, CR/LF/NUL, not UTF-8, over the limits) on every POST route and the GET routes with ids, and hostile path ids
and query strings, sent over a raw socket to one live gateway.

Properties (tests/fuzz/target.py): no answer ≥ 500, every non-2xx in the §1.7 envelope with the JSON content type
(the HTTP parser's own rejections included), the gateway healthy afterwards with the canary unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .strategies import encode, header_sets, url_parts
from .surfaces import SURFACES
from .target import FuzzTarget, http_request
from .test_bodies import fuzz_settings

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
