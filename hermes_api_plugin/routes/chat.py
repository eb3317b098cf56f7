"""POST /v1/chat/completions: parse → submit → deliver, as SSE chunks or one JSON body (WIRE.md §3). What a chat
turn is made of — its session, history, reply and rendering — is the surface's (surfaces/chat.py)."""

from __future__ import annotations

from aiohttp import web

from ..http.app_keys import CONVERSATION_INDEX, SETTINGS
from ..http.delivery import deliver_outcome, early_stream, open_stream
from ..http.profiles import profile_of
from ..http.sse import SseStream
from ..protocol.chat import parse_chat_request
from ..submission.submit import Refusal, Submission, refusal_error
from ..surfaces.chat import ChatSurface
from .posted import posted


async def chat_completions(request: web.Request) -> web.StreamResponse:
    post = await posted(request, lambda raw, _, providers: parse_chat_request(raw, providers))
    app, profile = request.app, profile_of(request)
    surface = ChatSurface(app[SETTINGS], profile.conversations, app[CONVERSATION_INDEX], profile.model_name, post)
    # A keyed chat stream writes its head right after admission and reports a refused reservation in-stream (§5.3).
    early = early_stream(request, surface) if surface.stream and surface.key is not None else None
    outcome: Submission[SseStream] = await profile.submitter.submit(surface, early)
    if isinstance(outcome, Refusal):
        return await _refuse(request, surface, outcome)
    return await deliver_outcome(request, outcome, surface)


async def _refuse(request: web.Request, surface: ChatSurface, refusal: Refusal[SseStream]) -> web.StreamResponse:
    """An outcome that executes nothing: the HTTP error, or the §3.5 chunk on a keyed chat stream."""
    if not surface.stream:
        raise refusal_error(refusal)
    stream = (
        refusal.head if refusal.head is not None else await open_stream(request, surface.headers(), surface.first())
    )
    await stream.send(surface.refused(refusal.code))
    await stream.done()
    return stream.response
