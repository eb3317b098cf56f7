"""Request pieces every surface shares: Hermes headers, Idempotency-Key, Last-Event-ID, booleans, the model
selection (one provider check, one reasoning-effort fold), conversation_history, ids.

Pure: no aiohttp. Headers arrive as a plain mapping, bodies as parsed JSON objects.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..config.settings import parse_bool
from ..core.content import Message, parse_content
from ..core.digits import ascii_int
from ..core.errors import invalid_parameter
from ..core.ids import random_hex
from ..core.json_text import canonical
from .counts import MAX_MESSAGES
from .limits import HEADER_MAX, NAME_MAX, short
from .params import Keyword, Param
from .schema import Arr, Bool, Checked, Either, Obj, Prop, Str, Tagged

_TEXT_PART = Obj(
    name="TextPart",
    props=(Prop("type", Str(enum=("text", "input_text", "output_text")), True), Prop("text", Str(), True)),
)
# Rendered only (content.parse_content checks URLs, case-insensitively): the pattern is the lower-case subset.
_IMAGE_URL = Str(pattern=r"^(https?://\S|data:image/[a-z]+;base64,)", description="http(s) or data:image URL")
# "Not only whitespace" as core/content.py's `strip()` reads it, spelled out: `\S` differs between JSON Schema's regexes
# (ECMAScript) and Python's — \x1c-\x1f and \x85 are whitespace only to Python, U+FEFF only to ECMAScript.
NOT_ONLY_SPACE = r"[^\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
_DETAIL = Str(max_length=NAME_MAX, pattern=NOT_ONLY_SPACE, description="low, high or auto")
_IMAGE_PART = Obj(
    name="ImageUrlPart",
    props=(
        Prop("type", Str(enum=("image_url",)), True),
        Prop(
            "image_url",
            Either((_IMAGE_URL, Obj((Prop("url", _IMAGE_URL, True), Prop("detail", _DETAIL))))),
            True,
        ),
        # Read by content.parse_content beside a string `image_url` (the Responses spelling inside a chat part).
        Prop("detail", _DETAIL),
    ),
)
_INPUT_IMAGE_PART = Obj(
    name="InputImagePart",
    props=(
        Prop("type", Str(enum=("input_image",)), True),
        Prop("image_url", _IMAGE_URL, True),
        Prop("detail", _DETAIL),
    ),
)
_PART = Tagged(
    "type",
    {
        "text": _TEXT_PART,
        "input_text": _TEXT_PART,
        "output_text": _TEXT_PART,
        "image_url": _IMAGE_PART,
        "input_image": _INPUT_IMAGE_PART,
    },
)
CONTENT = Checked(
    Either((Str(), Arr(Either((Str(), _PART)), max_items=1000))),
    parse_content,
    description="Text, or a list of text and image parts (WIRE.md §9)",
)
"""Message content: checked by `content.parse_content` (its own §9 codes), normalised to a tuple of parts."""

REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max", "ultra")
EFFORT = Str(enum=REASONING_EFFORTS)
MODEL_OPTIONS = Obj(
    name="ModelOptions",
    props=(
        Prop(
            "reasoning",
            Obj((Prop("enabled", Bool()), Prop("effort", EFFORT))),
            description="`enabled: false` turns reasoning off; `effort` wins over the surface's alias (§10.2)",
        ),
    ),
    description="Per-request model options; unknown keys are passed to the runtime",
)
MODEL_SELECTION = (
    Prop("model", short(NAME_MAX), description="Model to use; the configured default when absent"),
    Prop("provider", short(NAME_MAX), description="One of the providers configured on this gateway"),
    Prop("model_options", MODEL_OPTIONS),
)
HISTORY_ROLES = ("user", "assistant", "system", "developer")
CONVERSATION_HISTORY = Prop(
    "conversation_history",
    Arr(
        Obj(
            name="HistoryMessage",
            props=(Prop("role", Str(enum=HISTORY_ROLES), True), Prop("content", CONTENT, True)),
            whole=True,
        ),
        max_items=MAX_MESSAGES,
    ),
    description="Explicit earlier messages (system/developer entries dropped)",
)
# WIRE.md §1.6: the session id rule, for body fields, path ids and X-Hermes-Session-Id (check_session_id) alike;
# rendered as a pattern so that generators know it.
_SESSION_ID_PATTERN = r"^(?!\.\.?$)[^/\\\s\x00-\x1f\x7f](?:[^/\\\x00-\x08\x0a-\x1f\x7f]*[^/\\\s\x00-\x1f\x7f])?$"
SESSION_ID = Str(
    min_length=1,
    max_length=256,
    code="invalid_session_id",
    pattern=_SESSION_ID_PATTERN,
    message="{param} must be 1-256 characters without '/', '\\', CR, LF, NUL or surrounding spaces",
)

# CR, LF, NUL (WIRE.md §1.6) and the other control characters but tab: these ids are echoed in response headers,
# which cannot carry them.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_SESSION_KEY = Str(
    min_length=1,
    max_length=256,
    code="invalid_session_key",
    message="X-Hermes-Session-Key must be 1-256 characters without CR, LF or NUL",
)
_SWITCH = Str(
    max_length=HEADER_MAX, description="`off` (any case) switches it off; other values keep the default (WIRE.md §1.6)"
)
_IDEMPOTENCY = Str(
    min_length=1,
    max_length=255,
    pattern=r"^[\x21-\x7e]{1,255}$",
    code="invalid_idempotency_key",
    message="Idempotency-Key must be 1-255 visible ASCII characters",
)
IDEMPOTENCY_HEADER = Param("Idempotency-Key", _IDEMPOTENCY, "header", description="Makes the request idempotent (§5)")
SESSION_ID_HEADER = Param("X-Hermes-Session-Id", SESSION_ID, "header", description="§1.6")
SESSION_KEY_HEADER = Param("X-Hermes-Session-Key", _SESSION_KEY, "header", description="Memory scope and conversation")
TOOL_PROGRESS_HEADER = Param("X-Hermes-Tool-Progress", _SWITCH, "header", description="off: no hermes.tool.progress")
# X-Hermes-Tool-Items (§1.6, §15.3): `on` (default) shows the server's tools as function_call + function_call_output
# pairs, `off` leaves them out of this delivery, `hosted` renders them as mcp_call items (a create request's mode).
TOOL_ITEMS_MODES = ("on", "off", "hosted")
_TOOL_ITEMS = Keyword(values=TOOL_ITEMS_MODES, default="on", max_length=HEADER_MAX)
TOOL_ITEMS_HEADER = Param(
    "X-Hermes-Tool-Items",
    _TOOL_ITEMS,
    "header",
    description="on (default): server tools as function_call + function_call_output items; off: none in this "
    "delivery; hosted: server tools as mcp_call items (create only; a stored response keeps the mode it was created "
    "with). Any case; other values: on (§1.6, §15.3)",
)
# X-Hermes-Approvals (§15.2): `ask` ends the delivery with the approval question, answered by the next message; `hold`
# keeps §14.2's open stream, decided through POST /v1/runs/{id}/approval. Absent or another value: the configured mode.
APPROVAL_MODES = ("ask", "hold")
_CONFIGURED = "configured"
_APPROVALS = Keyword(values=APPROVAL_MODES, default=_CONFIGURED, max_length=HEADER_MAX)
APPROVALS_HEADER = Param(
    "X-Hermes-Approvals",
    _APPROVALS,
    "header",
    description="ask: an approval ends the delivery with its question, the next message (/approve, /deny, yes, no) "
    "answers it; hold: the stream stays open until POST /v1/runs/{id}/approval decides. Any case; absent or other "
    "values: api_server.approvals.chat (§15.2)",
)
LAST_EVENT_ID_HEADER = Param(
    "Last-Event-ID", Str(), "header", description="Resume after this record id; any other value: from the start"
)


@dataclass(frozen=True)
class HermesHeaders:
    session_id: str | None
    session_key: str | None
    tool_progress: bool  # X-Hermes-Tool-Progress (chat)
    tool_items: str = "on"  # X-Hermes-Tool-Items (Responses): on | off | hosted (TOOL_ITEMS_MODES)
    approvals: str | None = None  # X-Hermes-Approvals: ask | hold (APPROVAL_MODES); None: the configured mode

    def holds_approvals(self, configured: str) -> bool:
        """Whether an approval keeps this request's stream open (§14.2) rather than ending its delivery (§15.2)."""
        return (self.approvals or configured) == "hold"

    @property
    def tool_items_shown(self) -> bool:
        """Whether this delivery shows the server's tool items (`off` hides them)."""
        return self.tool_items != "off"


def check_session_id(sid: str, param: str) -> None:
    """Session id rules (WIRE.md §1.6): 1-256 chars, no control characters but tab, no slashes, not `.`/`..`, no
    outer whitespace — the SESSION_ID node, for ids that do not come in a checked body (paths, the header)."""
    SESSION_ID.check(sid, param)


def parse_hermes_headers(headers: Mapping[str, str]) -> HermesHeaders:
    """Validate X-Hermes-Session-Id / -Session-Key / -Tool-Progress / -Tool-Items / -Approvals (WIRE.md §1.6)."""
    sid = headers.get("X-Hermes-Session-Id")
    if sid is not None:
        check_session_id(sid, "X-Hermes-Session-Id")
    key = headers.get("X-Hermes-Session-Key")
    if key is not None and (_SESSION_KEY.check(key, "X-Hermes-Session-Key") and _CONTROL.search(key)):
        raise _SESSION_KEY.fail("X-Hermes-Session-Key", _SESSION_KEY.message)
    progress = headers.get("X-Hermes-Tool-Progress", "").strip().lower() != "off"
    approvals: str | None = _APPROVALS.check(headers.get("X-Hermes-Approvals", ""), "X-Hermes-Approvals")
    if approvals == _CONFIGURED:
        approvals = None
    return HermesHeaders(sid, key, progress, tool_items_mode(headers), approvals)


def tool_items_mode(headers: Mapping[str, str]) -> str:
    """`X-Hermes-Tool-Items` (WIRE.md §1.6, §15.3), any case: `off` leaves the server's tool items out of this
    delivery, `hosted` asks a new response to render them as `mcp_call` items; any other value, or none, is `on`."""
    return str(_TOOL_ITEMS.check(headers.get("X-Hermes-Tool-Items", ""), "X-Hermes-Tool-Items"))


def tool_items_shown(headers: Mapping[str, str]) -> bool:
    """`X-Hermes-Tool-Items` (WIRE.md §1.6): `off` leaves the server's tool items out of this delivery; any
    other value, or none, shows them."""
    return tool_items_mode(headers) != "off"


def idempotency_key(headers: Mapping[str, str]) -> str | None:
    """The trimmed `Idempotency-Key`, None when absent; 400 invalid_idempotency_key when malformed (§5.1)."""
    raw = headers.get("Idempotency-Key")
    if raw is None:
        return None
    return str(_IDEMPOTENCY.check(raw.strip(), "Idempotency-Key"))


def last_event_id(headers: Mapping[str, str]) -> int:
    """`Last-Event-ID` as the last record id the client saw; 0 (from the start) when absent or not an id this
    server could have issued (WIRE.md §6.3, §7.4): only ASCII digits, at most MAX_DIGITS of them — `²`, `١`, `+3`,
    `1e3` or 5 000 digits are ignored, never an error. Only HTTP's optional whitespace (space, tab) is trimmed."""
    return ascii_int(headers.get("Last-Event-ID", "").strip(" \t")) or 0


def body_bool(body: Mapping[str, Any], name: str, default: bool) -> bool:
    value = body.get(name)
    if value is None:
        return default
    parsed = parse_bool(value)
    if parsed is None:
        raise invalid_parameter(f"'{name}' must be a boolean", name)
    return parsed


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
    body: Mapping[str, Any], providers: frozenset[str], *, alias_effort: str | None = None
) -> ModelSelection:
    """The MODEL_SELECTION fields of a checked body: `provider` must be configured here; effort precedence per
    WIRE.md §10.2 (`model_options.reasoning.effort`, then the surface's alias)."""
    provider = body.get("provider")
    if provider is not None and provider not in providers:
        raise invalid_parameter(f"Provider '{provider}' is not configured on this gateway", "provider")
    options = body.get("model_options") or {}
    reasoning = options.get("reasoning") or {}
    if "reasoning" in options:
        options = {**options, "reasoning": reasoning}  # the checked form: `enabled` folded to a bool
    effort = reasoning.get("effort")
    return ModelSelection(body.get("model"), provider, options, reasoning.get("enabled", True), effort or alias_effort)


def identity_hash(fields: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of the identity fields (sorted keys, compact, UTF-8), WIRE.md §5.2."""
    return hashlib.sha256(canonical(fields).encode()).hexdigest()


def credential_scope(profile: str, key: str) -> str:
    return hashlib.sha256(f"{profile}\0{key}".encode()).hexdigest()


def derived_session_id(scope: str, system_prompt: str, first_user_content: Any) -> str:
    """`api-` + 16 hex: the same opening of a chat maps to the same server-side session."""
    seed = f"{scope}\0{system_prompt}\n{canonical(first_user_content)}"
    return "api-" + hashlib.sha256(seed.encode()).hexdigest()[:16]


def new_run_id() -> str:
    return "run_" + random_hex(16)


def new_completion_id() -> str:
    return "chatcmpl-" + random_hex(16)


def new_response_id() -> str:
    return "resp_" + random_hex(16)


def new_session_id() -> str:
    """A new server-side session id for runs and session creation (`api_<unix time>_<8 hex>`)."""
    return f"api_{int(time.time())}_{random_hex(4)}"


def new_chain_session_id() -> str:
    """A new session id for a Responses chain (`api-` + 16 hex)."""
    return "api-" + random_hex(8)


def conversation_history(body: Mapping[str, Any]) -> list[Message] | None:
    """The checked `conversation_history` (CONVERSATION_HISTORY) as messages, system/developer entries dropped."""
    raw = body.get("conversation_history")
    if raw is None:
        return None
    return [Message(e["role"], e["content"]) for e in raw if e["role"] in ("user", "assistant")]
