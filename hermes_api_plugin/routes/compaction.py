"""POST /v1/responses/compact (WIRE.md §16): parse, compact (surfaces/compaction.py), answer the compacted resource.

The path is registered before `/v1/responses/{response_id}` and answers every other method itself (405), so that
`compact` is never taken for a response id.
"""

from __future__ import annotations

from aiohttp import web

from ..http.app_keys import RUNTIME, STORE
from ..http.profiles import profile_of
from ..protocol.compaction import parse_compact_request
from ..surfaces.compaction import CompactionService
from .posted import posted
from .replies import json_response


async def compact_response(request: web.Request) -> web.Response:
    post = await posted(request, lambda raw, _, providers: parse_compact_request(raw, providers))
    profile = profile_of(request)
    service = CompactionService(request.app[STORE], profile.conversations, request.app[RUNTIME], profile.home)
    return json_response(await service.compact(post.body))


async def compact_other_method(request: web.Request) -> web.Response:
    raise web.HTTPMethodNotAllowed(request.method, ["POST"])
