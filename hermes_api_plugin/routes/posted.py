"""The parse step of a work-creating POST: its body (a pure parser of protocol/) and every header its surface reads,
into one frozen `Posted` value before anything is admitted (issue 20, defect 1: nothing reads the request after
`submit`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from aiohttp import web

from ..http.app_keys import RUNTIME
from ..http.middleware import large_body, read_parsed
from ..protocol.common import HermesHeaders, idempotency_key, parse_hermes_headers
from ..surfaces.surface import Posted

B = TypeVar("B")
BodyParser = Callable[[dict[str, Any], HermesHeaders, frozenset[str]], B]  # the JSON object, headers, providers


async def posted(request: web.Request, parse: BodyParser[B]) -> Posted[B]:
    """The Hermes headers (400 first), the body (400/413), then Idempotency-Key (400)."""
    hermes = parse_hermes_headers(request.headers)
    providers = request.app[RUNTIME].providers()
    body = await read_parsed(request, lambda raw: parse(raw, hermes, providers))
    key = idempotency_key(request.headers)
    return Posted(body, hermes, key, await large_body(request))
