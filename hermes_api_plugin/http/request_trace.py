"""The outermost middleware: the request's place in the logs (its route template, log_context.py) and, with tracing
on, its SERVER span — continuing an incoming W3C `traceparent`, current while the handler runs, so the turns the
request creates are its children. Installed only when JSON logs or tracing ask for it: text logs without tracing pay
nothing per request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from ..telemetry.log_context import bind_request
from ..telemetry.trace_api import RequestInfo, Tracing

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def route_template(request: web.Request) -> str | None:
    """The matched route's template (`/v1/responses/{response_id}`): bounded, unlike the path; None when none
    matched."""
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else None


def request_trace_middlewares(tracing: Tracing | None, log_format: str) -> list[Middleware]:
    """The middleware this configuration needs: the traced one, the log route alone (JSON logs), or none."""
    if tracing is not None:
        return [_traced(tracing)]
    if log_format == "json":
        return [log_route]
    return []


@web.middleware
async def log_route(request: web.Request, handler: Handler) -> web.StreamResponse:
    bind_request(route_template(request))
    return await handler(request)


def _traced(tracing: Tracing) -> Middleware:
    @web.middleware
    async def traced(request: web.Request, handler: Handler) -> web.StreamResponse:
        info = RequestInfo(
            method=request.method,
            route=route_template(request),
            path=request.path,
            scheme=request.scheme,
            host=request.host,
            user_agent=request.headers.get("User-Agent"),
            headers=request.headers,
        )
        with tracing.request_span(info) as span:
            try:
                response = await handler(request)
            except web.HTTPException as exc:  # what the error middleware lets through (redirects)
                span.finish(exc.status)
                raise
            span.finish(response.status)
            return response

    return traced
