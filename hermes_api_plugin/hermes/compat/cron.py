"""The compat boundary for Hermes' cron (WIRE §14.3): its job store (`cron.jobs`, the `/api/jobs` routes through
`hermes/jobs.py`), its prompt scanner, the active scheduler provider, and the `/api/cron/fire` webhook's fire-token
verifier. Blocking (files, config, imports): callers run every function here in a worker thread.
"""

from __future__ import annotations

from typing import Any

from . import home
from ._core import MISSING, HermesName, call, warn_fallback

_CRON = "cron.jobs"
# The cron store, as the built-in api_server imports it: a missing one makes its `/api/jobs` routes answer that
# cron is unavailable, and so do ours (no fallback: `cron_functions` reports it).
CRON_LIST = HermesName(_CRON, "list_jobs", args=(), kwargs=("include_disabled",))
CRON_GET = HermesName(_CRON, "get_job", args=("job_id",))
CRON_CREATE = HermesName(
    _CRON, "create_job", args=(), kwargs=("prompt", "schedule", "name", "deliver", "origin", "skills", "repeat")
)
CRON_UPDATE = HermesName(_CRON, "update_job", args=("job_id", "updates"))
CRON_REMOVE = HermesName(_CRON, "remove_job", args=("job_id",))
CRON_PAUSE = HermesName(_CRON, "pause_job", args=("job_id",))
CRON_RESUME = HermesName(_CRON, "resume_job", args=("job_id",))
CRON_TRIGGER = HermesName(_CRON, "trigger_job", args=("job_id",))
CRON_FUNCTIONS = {
    "list": CRON_LIST,
    "get": CRON_GET,
    "create": CRON_CREATE,
    "update": CRON_UPDATE,
    "remove": CRON_REMOVE,
    "pause": CRON_PAUSE,
    "resume": CRON_RESUME,
    "trigger": CRON_TRIGGER,
}
SCAN_CRON_PROMPT = HermesName(
    "tools.cronjob_tools",
    "_scan_cron_prompt",
    args=("prompt",),
    fallback="job prompts are stored unscanned (as the built-in server does without the scanner)",
)
NOTIFY_JOBS_CHANGED = HermesName(
    "cron.scheduler",
    "_notify_provider_jobs_changed",
    args=(),
    fallback="an external cron scheduler provider learns of REST changes at its next read of the job store",
)
# The managed-cron fire webhook (`POST /api/cron/fire`), as the built-in api_server serves it: the active fire-token
# verifier (pluggable; 0.19.0's is the Chronos NAS-JWT one, declared with the keywords the plugin calls any verifier
# with) and the active scheduler provider, whose `fire_due` claims and runs the job.
_CHRONOS_VERIFY = "plugins.cron_providers.chronos.verify"
_SCHEDULER_PROVIDER = "cron.scheduler_provider"
FIRE_VERIFIER = HermesName(_CHRONOS_VERIFY, "get_fire_verifier", args=())
NAS_FIRE_VERIFIER = HermesName(
    _CHRONOS_VERIFY, "verify_nas_fire_token", args=(), kwargs=("token", "expected_audience", "jwks_or_key", "issuer")
)
CRON_SCHEDULER = HermesName(_SCHEDULER_PROVIDER, "resolve_cron_scheduler", args=())
FIRE_DUE = HermesName(_SCHEDULER_PROVIDER, "CronScheduler.fire_due", args=("job_id",), kwargs=("adapters", "loop"))

NAMES: tuple[HermesName, ...] = (
    *CRON_FUNCTIONS.values(),
    SCAN_CRON_PROMPT,
    NOTIFY_JOBS_CHANGED,
    FIRE_VERIFIER,
    NAS_FIRE_VERIFIER,
    CRON_SCHEDULER,
    FIRE_DUE,
)


def cron_functions() -> dict[str, Any] | None:
    """The cron store's functions by operation (`list`, `get`, `create`, …); None when `cron.jobs` does not import
    here, where the built-in server reports cron unavailable."""
    try:
        return {operation: name.resolve() for operation, name in CRON_FUNCTIONS.items()}
    except (ImportError, AttributeError):
        return None


def scan_cron_prompt(prompt: str) -> str:
    """Hermes' cron prompt scanner (the cronjob tool's): the reason a prompt is refused, "" when it passes."""
    found = call(SCAN_CRON_PROMPT, prompt)
    return "" if found is MISSING else str(found or "")


def notify_jobs_changed() -> None:
    """Tell the active cron scheduler provider the job set changed (best effort, as upstream: never raises)."""
    try:
        call(NOTIFY_JOBS_CHANGED)
    except Exception as exc:
        warn_fallback(NOTIFY_JOBS_CHANGED, f"raised {type(exc).__name__}: {exc}")


def _chronos_settings() -> dict[str, Any]:
    """`cron.chronos` of config.yaml as Hermes loads it (defaults merged, re-read each time: it may change)."""
    section: Any = home.load_config()
    for key in ("cron", "chronos"):
        section = section.get(key) if isinstance(section, dict) else None
    return section if isinstance(section, dict) else {}


def fire_token_valid(token: str) -> bool:
    """The built-in server's check of a fire token: the active verifier, given this agent's audience, the NAS key
    (a JWKS URL or an inline PEM public key) and the portal as issuer; it answers None for a token it refuses
    (0.19.0's refuses every token while no key or no audience is configured: it never decodes unsigned)."""
    chronos = _chronos_settings()
    verifier = FIRE_VERIFIER.resolve()()
    claims = verifier(
        token=token,
        expected_audience=chronos.get("expected_audience") or "",
        jwks_or_key=chronos.get("nas_jwks_url") or None,
        issuer=chronos.get("portal_url") or None,
    )
    return claims is not None


def fire_due(job_id: str, loop: Any) -> bool:
    """Run the job now through the active cron scheduler provider (it claims the job first, so a retried fire runs
    it once); no adapters, as the built-in server fires: delivery takes Hermes' standalone path."""
    scheduler = CRON_SCHEDULER.resolve()()
    return bool(scheduler.fire_due(job_id, adapters=None, loop=loop))
