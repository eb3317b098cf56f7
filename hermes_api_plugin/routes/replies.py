"""Reply pieces the route handlers share: compact JSON replies and the Hermes headers of a turn's reply."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from ..http.sse import dumps


def json_response(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    """Compact UTF-8 JSON with `application/json; charset=utf-8`."""
    return web.json_response(body, status=status, content_type="application/json", dumps=dumps, headers=headers)


def run_headers(
    session_id: str | None, run_id: str | None, session_key: str | None, replayed: bool = False
) -> dict[str, str]:
    """X-Hermes-Session-Id, X-Hermes-Run-Id, the echoed X-Hermes-Session-Key, Idempotency-Replayed (§1.5)."""
    headers: dict[str, str] = {}
    if session_id is not None:
        headers["X-Hermes-Session-Id"] = session_id
    if run_id is not None:
        headers["X-Hermes-Run-Id"] = run_id
    if session_key is not None:
        headers["X-Hermes-Session-Key"] = session_key
    if replayed:
        headers["Idempotency-Replayed"] = "true"
    return headers
