"""Request pieces every work-creating route shares: Hermes headers, booleans, reasoning options, ids."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any, Mapping

from aiohttp import web

from ..config import parse_bool
from ..content import Message, canonical_json, parse_content
from ..errors import invalid_parameter, invalid_request
from ..runtimes.base import REASONING_EFFORTS
from ..sse import dumps

_CONTROL = re.compile(r"[\r\n\x00]")


@dataclass(frozen=True)
class HermesHeaders:
    session_id: str | None
    session_key: str | None
    tool_progress: bool  # X-Hermes-Tool-Progress (chat)
    tool_items: bool = True  # X-Hermes-Tool-Items (Responses): off leaves server tool items out


def check_session_id(sid: str, param: str) -> None:
    """Session id rules (WIRE.md §1.6): 1-256 chars, no CR/LF/NUL, no slashes, not `.`/`..`, no outer spaces."""
    if (
        not 1 <= len(sid) <= 256
        or _CONTROL.search(sid)
        or "/" in sid
        or "\\" in sid
        or sid in (".", "..")
        or sid != sid.strip()
    ):
        raise invalid_request(
            "invalid_session_id",
            f"{param} must be 1-256 characters without '/', '\\', CR, LF, NUL or surrounding spaces",
            param,
        )


def parse_hermes_headers(request: web.Request) -> HermesHeaders:
    """Validate X-Hermes-Session-Id / -Session-Key / -Tool-Progress (WIRE.md §1.6)."""
    sid = request.headers.get("X-Hermes-Session-Id")
    if sid is not None:
        check_session_id(sid, "X-Hermes-Session-Id")
    key = request.headers.get("X-Hermes-Session-Key")
    if key is not None and (not 1 <= len(key) <= 256 or _CONTROL.search(key)):
        raise invalid_request(
            "invalid_session_key", "X-Hermes-Session-Key must be 1-256 characters without CR, LF or NUL",
            "X-Hermes-Session-Key",
        )
    progress = request.headers.get("X-Hermes-Tool-Progress", "").strip().lower() != "off"
    items = request.headers.get("X-Hermes-Tool-Items", "").strip().lower() != "off"
    return HermesHeaders(sid, key, progress, items)


def body_bool(body: Mapping[str, Any], name: str, default: bool) -> bool:
    value = body.get(name)
    if value is None:
        return default
    parsed = parse_bool(value)
    if parsed is None:
        raise invalid_parameter(f"'{name}' must be a boolean", name)
    return parsed


def optional_string(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid_parameter(f"'{name}' must be a string", name)
    return value


def _effort(value: Any, param: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value not in REASONING_EFFORTS:
        raise invalid_parameter(f"'{param}' must be one of {', '.join(REASONING_EFFORTS)}", param)
    return value


@dataclass(frozen=True)
class ModelChoice:
    model_options: Mapping[str, Any]
    reasoning_enabled: bool
    reasoning_effort: str | None


def parse_model_options(body: Mapping[str, Any], *, alias_effort: Any = None, alias_param: str = "reasoning_effort") -> ModelChoice:
    """`model_options` with its reasoning block; effort precedence per WIRE.md §10.2."""
    options = body.get("model_options")
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise invalid_parameter("'model_options' must be an object", "model_options")
    reasoning = options.get("reasoning")
    if reasoning is None:
        reasoning = {}
    if not isinstance(reasoning, dict):
        raise invalid_parameter("'model_options.reasoning' must be an object", "model_options.reasoning")
    enabled = True
    if reasoning.get("enabled") is not None:
        parsed = parse_bool(reasoning["enabled"])
        if parsed is None:
            raise invalid_parameter("'model_options.reasoning.enabled' must be a boolean", "model_options.reasoning.enabled")
        enabled = parsed
    effort = _effort(reasoning.get("effort"), "model_options.reasoning.effort")
    alias = _effort(alias_effort, alias_param)
    return ModelChoice(options, enabled, effort or alias)


def credential_scope(profile: str, key: str) -> str:
    return hashlib.sha256(f"{profile}\0{key}".encode()).hexdigest()


def derived_session_id(scope: str, system_prompt: str, first_user_content: Any) -> str:
    """`api-` + 16 hex: the same opening of a chat maps to the same server-side session."""
    seed = f"{scope}\0{system_prompt}\n{canonical_json(first_user_content)}"
    return "api-" + hashlib.sha256(seed.encode()).hexdigest()[:16]


def new_run_id() -> str:
    return "run_" + secrets.token_hex(16)


def new_completion_id() -> str:
    return "chatcmpl-" + secrets.token_hex(16)


def json_response(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    """Compact UTF-8 JSON with `application/json; charset=utf-8`."""
    return web.json_response(body, status=status, content_type="application/json", dumps=dumps, headers=headers)


def parse_conversation_history(body: Mapping[str, Any]) -> list[Message] | None:
    """`conversation_history`: explicit `{"role","content"}` history (system/developer entries dropped)."""
    raw = body.get("conversation_history")
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise invalid_parameter("'conversation_history' must be an array", "conversation_history")
    history: list[Message] = []
    for i, entry in enumerate(raw):
        param = f"conversation_history[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("role"), str) or "content" not in entry:
            raise invalid_parameter(f"'{param}' needs 'role' and 'content'", param)
        if entry["role"] not in ("user", "assistant", "system", "developer"):
            raise invalid_parameter(f"'{param}.role' must be user, assistant, system or developer", param)
        parts = parse_content(entry["content"], f"{param}.content")
        if entry["role"] in ("user", "assistant"):
            history.append(Message(entry["role"], parts))
    return history
