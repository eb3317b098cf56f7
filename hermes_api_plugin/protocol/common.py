"""Request pieces every surface shares: Hermes headers, Idempotency-Key, Last-Event-ID, booleans, the model
selection (one provider check, one reasoning-effort fold), conversation_history, ids.

Pure: no aiohttp. Headers arrive as a plain mapping, bodies as parsed JSON objects.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config import parse_bool
from ..content import Message, canonical_json, parse_content
from ..errors import invalid_parameter, invalid_request
from ..runtimes.base import REASONING_EFFORTS

_CONTROL = re.compile(r"[\r\n\x00]")
_IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")


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


def parse_hermes_headers(headers: Mapping[str, str]) -> HermesHeaders:
    """Validate X-Hermes-Session-Id / -Session-Key / -Tool-Progress / -Tool-Items (WIRE.md §1.6)."""
    sid = headers.get("X-Hermes-Session-Id")
    if sid is not None:
        check_session_id(sid, "X-Hermes-Session-Id")
    key = headers.get("X-Hermes-Session-Key")
    if key is not None and (not 1 <= len(key) <= 256 or _CONTROL.search(key)):
        raise invalid_request(
            "invalid_session_key",
            "X-Hermes-Session-Key must be 1-256 characters without CR, LF or NUL",
            "X-Hermes-Session-Key",
        )
    progress = headers.get("X-Hermes-Tool-Progress", "").strip().lower() != "off"
    return HermesHeaders(sid, key, progress, tool_items_shown(headers))


def tool_items_shown(headers: Mapping[str, str]) -> bool:
    """`X-Hermes-Tool-Items` (WIRE.md §1.6): `off` leaves the server's tool items out of this delivery; any
    other value, or none, shows them."""
    return headers.get("X-Hermes-Tool-Items", "").strip().lower() != "off"


def idempotency_key(headers: Mapping[str, str]) -> str | None:
    """The trimmed `Idempotency-Key`, None when absent; 400 invalid_idempotency_key when malformed (§5.1)."""
    raw = headers.get("Idempotency-Key")
    if raw is None:
        return None
    key = raw.strip()
    if not _IDEMPOTENCY_KEY.match(key):
        raise invalid_request(
            "invalid_idempotency_key", "Idempotency-Key must be 1-255 visible ASCII characters", "Idempotency-Key"
        )
    return key


def last_event_id(headers: Mapping[str, str]) -> int:
    """`Last-Event-ID` as the last record id the client saw; 0 (from the start) when absent or not a number."""
    raw = headers.get("Last-Event-ID", "").strip()
    return int(raw) if raw.isdigit() else 0


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
class ModelSelection:
    """Which model and how it reasons, as a request asked for it."""

    model: str | None
    provider: str | None
    model_options: dict[str, Any]
    reasoning_enabled: bool
    reasoning_effort: str | None

    def identity_options(self) -> dict[str, Any]:
        """`model_options` with the effort alias folded into `reasoning.effort` (WIRE.md §5.2)."""
        options = dict(self.model_options)
        if self.reasoning_effort is not None:
            options["reasoning"] = {**(options.get("reasoning") or {}), "effort": self.reasoning_effort}
        return options


def parse_model_selection(
    body: Mapping[str, Any],
    providers: frozenset[str],
    *,
    alias_effort: Any = None,
    alias_param: str = "reasoning_effort",
) -> ModelSelection:
    """`model`, `provider` (one of the configured ones) and `model_options` with its reasoning block;
    effort precedence per WIRE.md §10.2 (`model_options.reasoning.effort`, then the surface's alias)."""
    model = optional_string(body, "model")
    provider = optional_string(body, "provider")
    if provider is not None and provider not in providers:
        raise invalid_parameter(f"Provider '{provider}' is not configured on this gateway", "provider")
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
            raise invalid_parameter(
                "'model_options.reasoning.enabled' must be a boolean", "model_options.reasoning.enabled"
            )
        enabled = parsed
    effort = _effort(reasoning.get("effort"), "model_options.reasoning.effort")
    alias = _effort(alias_effort, alias_param)
    return ModelSelection(model, provider, dict(options), enabled, effort or alias)


def identity_hash(fields: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of the identity fields (sorted keys, compact, UTF-8), WIRE.md §5.2."""
    return hashlib.sha256(canonical_json(fields).encode()).hexdigest()


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


def new_response_id() -> str:
    return "resp_" + secrets.token_hex(16)


def new_session_id() -> str:
    """A new server-side session id for runs and session creation (`api_<unix time>_<8 hex>`)."""
    return f"api_{int(time.time())}_{secrets.token_hex(4)}"


def new_chain_session_id() -> str:
    """A new session id for a Responses chain (`api-` + 16 hex)."""
    return "api-" + secrets.token_hex(8)


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
