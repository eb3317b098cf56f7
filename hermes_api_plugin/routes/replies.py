"""Compact JSON replies, as every route handler writes them (a turn's Hermes headers: surfaces/surface.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from ..http.sse import dumps


def json_response(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    """Compact UTF-8 JSON with `application/json; charset=utf-8`."""
    return web.json_response(body, status=status, content_type="application/json", dumps=dumps, headers=headers)
