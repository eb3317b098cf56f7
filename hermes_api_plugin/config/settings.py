"""Settings: one frozen value built from the process env, `$HERMES_HOME/.env` and `config.yaml`.

Sources, highest first: process environment, `.env`, `config.yaml` (WIRE.md §12). Invalid values are
collected by key path in `Settings.problems` and fall back to their default. `yaml.safe_load` only here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..core.redact import mask_url, userinfo_password

MIN_KEY_LENGTH = 16
DEFAULT_PORT = 8642
DEFAULT_BIND_ADDRESS = "127.0.0.1"
DEFAULT_MODEL_NAME = "hermes-agent"
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
_ENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


@dataclass(frozen=True)
class ModelSettings:
    """The `model:` section, read as Hermes reads it (provider, base_url, default model, key)."""

    provider: str | None = None
    base_url: str | None = None
    default: str | None = None
    api_key: str | None = None

    @property
    def configured(self) -> bool:
        return bool(self.provider or self.base_url)


DEFAULT_OTLP_ENDPOINT = "http://localhost:4318"  # OTLP/HTTP's default collector address
OTLP_TRACES_PATH = "/v1/traces"
DEFAULT_SERVICE_NAME = "hermes-api-plugin"
LOG_FORMATS = frozenset({"text", "json"})


@dataclass(frozen=True)
class TracingSettings:
    """`api_server.tracing.*` and the standard `OTEL_*` variables, resolved: traces go to `endpoint` (an OTLP/HTTP
    traces URL) when `enabled`. The variables win over config.yaml, as the OpenTelemetry SDKs read them."""

    enabled: bool = False
    endpoint: str | None = None
    # exporter headers (an auth token, often): None leaves them to OTEL_EXPORTER_OTLP_[TRACES_]HEADERS. Not in repr.
    headers: Mapping[str, str] | None = field(default=None, repr=False)
    service_name: str = DEFAULT_SERVICE_NAME
    sample_ratio: float | None = None  # None: the SDK's sampler (OTEL_TRACES_SAMPLER), parent-based always-on
    capture_content: bool = False  # OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: prompts, answers, tool I/O


@dataclass(frozen=True)
class Settings:
    hermes_home: Path
    enabled: bool = False
    key: str | None = None  # trimmed; None when missing or too short
    bind_address: str = DEFAULT_BIND_ADDRESS  # `api_server.host`: the address the listener binds
    port: int = DEFAULT_PORT
    cors_origins: tuple[str, ...] = ()
    model_name: str = DEFAULT_MODEL_NAME
    profile: str = "default"
    max_concurrent_runs: int = 10
    sse_keepalive_seconds: float = 10.0
    tool_progress_events: bool = True
    on_disconnect: str = "auto"
    idempotency_retention_seconds: int = 86400
    idempotency_tombstone_seconds: int = 2592000
    responses_max_stored: int = 10000
    tool_output_max_chars: int = 16000
    # api_server.responses.tool_items: on | hosted — how a new Response renders the server's own tools when neither
    # the request (client function tools, X-Hermes-Tool-Items: hosted) asks for hosted (WIRE.md §15.3)
    responses_tool_items: str = "on"
    # api_server.approvals.chat: ask | hold — how chat and session chat deliver an approval when the request does not
    # say (X-Hermes-Approvals): ask ends the delivery with the question, hold keeps the stream open (WIRE.md §15.2)
    approvals_chat: str = "ask"
    direct_model_requests: bool = False
    model_options: tuple[Mapping[str, Any], ...] = ()
    interim_assistant_messages: bool = True
    max_turns: int = 90
    # warm agents (issue 14): at most this many idle or running agents kept, one per conversation (0: none kept)
    agents_max_cached: int = 64
    agents_idle_seconds: float = 3600.0  # an agent unused this long is released (Hermes' own gateway: 1 h)
    # one SSL context per CA bundle for every provider client (hermes/compat/tls.py) instead of one per provider call
    agents_share_tls_contexts: bool = True
    # hermes-agent per-call work made cheaper, its result the same (hermes/compat/config_copies.py, request_bodies.py)
    agents_fast_config_copies: bool = True
    agents_fast_request_bodies: bool = True
    chat_continuity: str = "auto"  # auto | off: a stateless chat continues the conversation its history matches
    # the process's start-up objects left out of every later full garbage collection (core/collector.py)
    gc_freeze_at_start: bool = True
    runtime: str = "auto"  # auto | hermes | scripted
    script_path: Path | None = None
    # api_server.store.url: the PostgreSQL store shared by several gateways (None: SQLite in hermes_home). Left out
    # of repr: the URL may carry the database password.
    store_url: str | None = field(default=None, repr=False)
    store_url_problem: str | None = None  # set when a store URL was given but is not a PostgreSQL one
    store_lease_seconds: float = 15.0  # a gateway that stops renewing its lease this long is gone (cluster/leases.py)
    # settled turns kept readable in memory (runs, issue 20 defect 2): at most this many, and this many estimated bytes
    turns_max_recent: int = 10_000
    turns_max_recent_bytes: int = 64 * 1024 * 1024
    # how long a suspended turn waits for its client's answer (WIRE.md §15.1) before resolving it negatively
    turns_suspend_seconds: float = 900.0
    turns_max_suspended: int = 100  # turns waiting for their clients at once; they hold no run slot
    # connection time-outs (issue 20, defect 4; gateway/runner.py): a request head, a request body, an idle keep-alive
    header_timeout_seconds: float = 30.0
    body_timeout_seconds: float = 300.0
    keepalive_timeout_seconds: float = 75.0
    # api_server.metrics (issue 24): GET /metrics served (and every instrument recorded) when enabled; its auth is
    # `key` (API_SERVER_KEY, as every route) or `none` (a scraper on a trusted network without the key)
    metrics_enabled: bool = True
    metrics_auth: str = "key"
    model: ModelSettings = field(default_factory=ModelSettings)
    tracing: TracingSettings = field(default_factory=TracingSettings)
    log_format: str = "text"  # api_server.logging.format: text | json (every line of a turn carries its ids)
    problems: tuple[str, ...] = ()

    @property
    def env_file(self) -> Path:
        return self.hermes_home / ".env"

    @property
    def config_file(self) -> Path:
        return self.hermes_home / "config.yaml"

    @property
    def store_path(self) -> Path:
        return self.hermes_home / "hermes_api.sqlite3"

    @property
    def cors_wildcard(self) -> bool:
        return "*" in self.cors_origins


def default_hermes_home(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    raw = env.get("HERMES_HOME", "").strip()
    return Path(raw).expanduser() if raw else Path.home() / ".hermes"


def parse_env_file(text: str) -> dict[str, str]:
    """Parse a dotenv file: `KEY=VALUE`, optional `export`, quotes, `#` comments."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _ENV_LINE.match(line)
        if not match:
            continue
        key, value = match.group(1), match.group(2)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        else:
            value = re.sub(r"\s+#.*$", "", value)
        values[key] = value
    return values


def parse_bool(value: Any) -> bool | None:
    """JSON booleans and the strings true/false/1/0/yes/no/on/off; None when neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
    return None


class _Reader:
    """Looks values up by source precedence and records problems by key path."""

    def __init__(self, env: Mapping[str, str], yaml_doc: Mapping[str, Any]) -> None:
        self.env = env
        self.doc = yaml_doc
        self.problems: list[str] = []

    def yaml(self, path: str) -> Any:
        node: Any = self.doc
        for part in path.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return None
            node = node[part]
        return node

    def raw(self, env_name: str | None, path: str | None) -> tuple[Any, str | None]:
        if env_name and env_name in self.env:
            return self.env[env_name], env_name
        if path is not None:
            value = self.yaml(path)
            if value is not None:
                return value, path
        return None, None

    def boolean(self, env_name: str | None, path: str | None, default: bool) -> bool:
        value, where = self.raw(env_name, path)
        if value is None:
            return default
        parsed = parse_bool(value)
        if parsed is None:
            self.problems.append(f"{where}: expected a boolean, got {value!r}; using {default}")
            return default
        return parsed

    def integer(
        self, env_name: str | None, path: str, default: int, lo: int | None = None, hi: int | None = None
    ) -> int:
        value, where = self.raw(env_name, path)
        if value is None:
            return default
        try:
            if isinstance(value, bool):
                raise ValueError
            number = int(str(value).strip())
        except ValueError:
            self.problems.append(f"{where}: expected an integer, got {value!r}; using {default}")
            return default
        if (lo is not None and number < lo) or (hi is not None and number > hi):
            self.problems.append(f"{where}: {number} is outside {lo}..{hi}; using {default}")
            return default
        return number

    def number(self, path: str, default: float, lo: float, hi: float) -> float:
        value = self.yaml(path)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.problems.append(f"{path}: expected a number, got {value!r}; using {default}")
            return default
        if not lo <= value <= hi:
            self.problems.append(f"{path}: {value} is outside {lo}..{hi}; using {default}")
            return default
        return float(value)

    def string(self, env_name: str | None, path: str | None) -> str | None:
        value, where = self.raw(env_name, path)
        if value is None:
            return None
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            self.problems.append(f"{where}: expected a string, got {value!r}")
            return None
        text = str(value).strip()
        return text or None

    def choice(self, path: str, default: str, allowed: frozenset[str]) -> str:
        value = self.yaml(path)
        if value is None:
            return default
        if not isinstance(value, str) or value.strip().lower() not in allowed:
            self.problems.append(f"{path}: expected one of {sorted(allowed)}, got {value!r}; using {default}")
            return default
        return value.strip().lower()


STORE_URL_SCHEMES = ("postgresql", "postgres")


def _store_url(r: _Reader) -> tuple[str | None, str | None]:
    """`API_SERVER_STORE_URL` / `api_server.store.url`: (the URL, None), (None, None) when unset, or (None, the
    problem) when it is not a postgresql:// URL. The problem shows the value with its password masked."""
    value, where = r.raw("API_SERVER_STORE_URL", "api_server.store.url")
    if value is None:
        return None, None
    if not isinstance(value, str):
        problem = f"{where}: expected a postgresql:// URL, got {type(value).__name__}"
    else:
        url = value.strip()
        if not url:
            return None, None  # set but empty: the embedded SQLite store, as when unset
        scheme, sep, rest = url.partition("://")
        if not (sep and scheme.lower() in STORE_URL_SCHEMES and rest):
            problem = f"{where}: expected a postgresql:// or postgres:// URL, got {mask_url(url)!r}"
        elif any(c in (userinfo_password(url) or "") for c in "@/?#"):
            # libpq would split such a password into host, port or database and quote the pieces in its errors
            problem = (
                f"{where}: the password in {mask_url(url)!r} holds an unencoded '@', '/', '?' or '#'; percent-encode it"
            )
        else:
            return url, None
    r.problems.append(problem)
    return None, problem


def _otlp_traces_url(base: str) -> str:
    """An OTLP/HTTP base URL as the traces URL (`/v1/traces` appended, as the SDKs do); a traces URL unchanged."""
    base = base.strip()
    if base.rstrip("/").endswith(OTLP_TRACES_PATH):
        return base
    return base.rstrip("/") + OTLP_TRACES_PATH


def _tracing(r: _Reader) -> TracingSettings:
    """`api_server.tracing.*` with the standard variables over it: on when an endpoint is known (the variables or
    `endpoint`) unless `enabled: false`, OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none says otherwise; `enabled: true`
    alone exports to OTLP/HTTP's default address."""
    env_traces = r.string("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", None)
    env_base = r.string("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    configured = r.string(None, "api_server.tracing.endpoint")
    if env_traces:
        endpoint: str | None = env_traces
    elif env_base or configured:
        endpoint = _otlp_traces_url(env_base or configured or "")
    else:
        endpoint = None
    switch = r.yaml("api_server.tracing.enabled")
    enabled = endpoint is not None if switch is None else r.boolean(None, "api_server.tracing.enabled", False)
    if r.boolean("OTEL_SDK_DISABLED", None, False) or (r.string("OTEL_TRACES_EXPORTER", None) or "").lower() == "none":
        enabled = False
    headers_raw = r.yaml("api_server.tracing.headers")
    headers: dict[str, str] | None = None
    if isinstance(headers_raw, Mapping) and all(
        isinstance(k, str) and isinstance(v, (str, int)) and not isinstance(v, bool) for k, v in headers_raw.items()
    ):
        headers = {k: str(v) for k, v in headers_raw.items()}
    elif headers_raw is not None:
        r.problems.append("api_server.tracing.headers: expected a mapping of header names to values")
    ratio_raw = r.yaml("api_server.tracing.sample_ratio")
    ratio = None if ratio_raw is None else r.number("api_server.tracing.sample_ratio", 1.0, 0.0, 1.0)
    return TracingSettings(
        enabled=enabled,
        endpoint=(endpoint or _otlp_traces_url(DEFAULT_OTLP_ENDPOINT)) if enabled else endpoint,
        headers=headers,
        service_name=r.string("OTEL_SERVICE_NAME", "api_server.tracing.service_name") or DEFAULT_SERVICE_NAME,
        sample_ratio=ratio,
        capture_content=r.boolean(
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "api_server.tracing.capture_content", False
        ),
    )


def load_settings(hermes_home: Path | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Build Settings from `$HERMES_HOME/.env`, `config.yaml` and the process environment."""
    process_env = dict(os.environ if environ is None else environ)
    home = hermes_home or default_hermes_home(process_env)
    problems: list[str] = []

    file_env: dict[str, str] = {}
    env_path = home / ".env"
    if env_path.is_file():
        try:
            file_env = parse_env_file(env_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{env_path}: unreadable ({exc})")
    env = {**file_env, **process_env}  # the process environment wins over .env

    doc: Mapping[str, Any] = {}
    config_path = home / "config.yaml"
    if config_path.is_file():
        try:
            loaded = yaml.safe_load(config_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            problems.append(f"{config_path}: unreadable ({exc}); using defaults")
            loaded = None
        if isinstance(loaded, Mapping):
            doc = loaded
        elif loaded is not None:
            problems.append(f"{config_path}: top level must be a mapping; using defaults")

    r = _Reader(env, doc)
    key_raw = r.string("API_SERVER_KEY", "api_server.key")
    key = key_raw if key_raw and len(key_raw) >= MIN_KEY_LENGTH else None

    cors_raw, cors_where = r.raw("API_SERVER_CORS_ORIGINS", "api_server.cors_origins")
    cors: tuple[str, ...] = ()
    if isinstance(cors_raw, str):
        cors = tuple(o.strip() for o in cors_raw.split(",") if o.strip())
    elif isinstance(cors_raw, list) and all(isinstance(o, str) for o in cors_raw):
        cors = tuple(o.strip() for o in cors_raw if o.strip())
    elif cors_raw is not None:
        r.problems.append(f"{cors_where}: expected a comma list or a list of origins")

    profile = (env.get("HERMES_PROFILE") or "").strip() or "default"
    model_name = r.string("API_SERVER_MODEL_NAME", "api_server.model_name") or (
        profile if profile != "default" else DEFAULT_MODEL_NAME
    )

    max_runs = r.integer(None, "api_server.max_concurrent_runs", 10)
    if max_runs < 0:
        r.problems.append(f"api_server.max_concurrent_runs: {max_runs} is negative; using 10")
        max_runs = 10

    interim_specific = r.yaml("display.platforms.api_server.interim_assistant_messages")
    interim = r.boolean(None, "display.interim_assistant_messages", True)
    if interim_specific is not None:
        interim = r.boolean(None, "display.platforms.api_server.interim_assistant_messages", interim)

    options_raw = r.yaml("api_server.model_options")
    model_options: tuple[Mapping[str, Any], ...] = ()
    if isinstance(options_raw, list) and all(isinstance(o, Mapping) for o in options_raw):
        model_options = tuple(options_raw)
    elif options_raw is not None:
        r.problems.append("api_server.model_options: expected a list of mappings")

    script = r.string("HERMES_API_SCRIPT", "agent.script")
    script_path = Path(script).expanduser() if script else None
    if script_path is not None and not script_path.is_absolute():
        script_path = (home / script_path) if not script_path.exists() else script_path.resolve()

    store_url, store_url_problem = _store_url(r)

    model = ModelSettings(
        provider=r.string(None, "model.provider"),
        base_url=r.string(None, "model.base_url"),
        default=r.string(None, "model.default"),
        api_key=r.string(None, "model.api_key"),
    )

    return Settings(
        hermes_home=home,
        enabled=r.boolean("API_SERVER_ENABLED", "api_server.enabled", False),
        key=key,
        bind_address=r.string("API_SERVER_HOST", "api_server.host") or DEFAULT_BIND_ADDRESS,
        port=r.integer("API_SERVER_PORT", "api_server.port", DEFAULT_PORT, 0, 65535),
        cors_origins=cors,
        model_name=model_name,
        profile=profile,
        max_concurrent_runs=max_runs,
        sse_keepalive_seconds=r.number("api_server.sse_keepalive_seconds", 10.0, 1.0, 30.0),
        tool_progress_events=r.boolean(None, "api_server.tool_progress_events", True),
        on_disconnect=r.choice("api_server.on_disconnect", "auto", frozenset({"auto", "cancel", "continue"})),
        idempotency_retention_seconds=r.integer(None, "api_server.idempotency.retention_seconds", 86400, 0),
        idempotency_tombstone_seconds=r.integer(None, "api_server.idempotency.tombstone_seconds", 2592000, 0),
        responses_max_stored=r.integer(None, "api_server.responses.max_stored", 10000, 1),
        tool_output_max_chars=r.integer(None, "api_server.responses.tool_output_max_chars", 16000, 1),
        responses_tool_items=r.choice("api_server.responses.tool_items", "on", frozenset({"on", "hosted"})),
        approvals_chat=r.choice("api_server.approvals.chat", "ask", frozenset({"ask", "hold"})),
        direct_model_requests=r.boolean(None, "api_server.direct_model_requests", False),
        model_options=model_options,
        interim_assistant_messages=interim,
        max_turns=r.integer(None, "agent.max_turns", 90, 1),
        agents_max_cached=r.integer(None, "api_server.agents.max_cached", 64, 0, 4096),
        agents_idle_seconds=r.number("api_server.agents.idle_seconds", 3600.0, 1.0, 7 * 86400.0),
        agents_share_tls_contexts=r.boolean(None, "api_server.agents.share_tls_contexts", True),
        agents_fast_config_copies=r.boolean(None, "api_server.agents.fast_config_copies", True),
        agents_fast_request_bodies=r.boolean(None, "api_server.agents.fast_request_bodies", True),
        chat_continuity=r.choice("api_server.chat_continuity", "auto", frozenset({"auto", "off"})),
        gc_freeze_at_start=r.boolean(None, "api_server.gc.freeze_at_start", True),
        runtime=r.choice("agent.runtime", "auto", frozenset({"auto", "hermes", "scripted"})),
        script_path=script_path,
        store_url=store_url,
        store_url_problem=store_url_problem,
        store_lease_seconds=r.number("api_server.store.lease_seconds", 15.0, 1.0, 3600.0),
        turns_max_recent=r.integer(None, "api_server.turns.max_recent", 10_000, 0, 1_000_000),
        turns_max_recent_bytes=r.integer(None, "api_server.turns.max_recent_bytes", 64 * 1024 * 1024, 0, 2**40),
        turns_suspend_seconds=r.number("api_server.turns.suspend_seconds", 900.0, 0.01, 7 * 86400.0),
        turns_max_suspended=r.integer(None, "api_server.turns.max_suspended", 100, 1, 100_000),
        # connection time-outs (issue 20, defect 4)
        header_timeout_seconds=r.number("api_server.limits.header_timeout_seconds", 30.0, 0.1, 3600.0),
        body_timeout_seconds=r.number("api_server.limits.body_timeout_seconds", 300.0, 0.1, 86400.0),
        keepalive_timeout_seconds=r.number("api_server.limits.keepalive_timeout_seconds", 75.0, 0.1, 86400.0),
        metrics_enabled=r.boolean(None, "api_server.metrics.enabled", True),
        metrics_auth=r.choice("api_server.metrics.auth", "key", frozenset({"key", "none"})),
        model=model,
        tracing=_tracing(r),
        log_format=r.choice("api_server.logging.format", "text", LOG_FORMATS),
        problems=tuple(problems + r.problems),
    )
