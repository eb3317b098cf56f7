"""Whether this process traces: `start_tracing` loads the OpenTelemetry SDK (otel.py) only when `api_server.tracing`
or the `OTEL_EXPORTER_OTLP_*` variables turn tracing on; off, the callers hold None and pay one `is not None` test per
request or turn (trace_api.py is what they hold)."""

from __future__ import annotations

import logging
from importlib.util import find_spec

from ..config.settings import Settings
from .trace_api import Tracing

log = logging.getLogger("hermes_api_plugin")

OTEL_PACKAGES = ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")


def start_tracing(settings: Settings, runtime_name: str) -> Tracing | None:
    """The OpenTelemetry tracing `settings` ask for, or None: off, or the `otel` extra is not installed (logged)."""
    if not settings.tracing.enabled:
        return None
    missing = [name for name in OTEL_PACKAGES if not _importable(name)]
    if missing:
        log.warning(
            "[API Server] Tracing is configured but OpenTelemetry is not installed (%s): "
            "pip install 'hermes-api-plugin[otel]'; running without traces",
            ", ".join(missing),
        )
        return None
    from .otel import OtelTracing  # the SDK is imported here, and only here

    secrets = tuple(s for s in (settings.key, settings.model.api_key) if s)
    return OtelTracing(
        settings.tracing,
        agent_name=settings.model_name,
        provider=settings.model.provider or runtime_name,
        model=settings.model.default or settings.model_name,
        secrets=secrets,
    )


def _importable(name: str) -> bool:
    try:
        return find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False
