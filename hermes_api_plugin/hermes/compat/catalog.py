"""The compat boundary for what Hermes offers a client to choose from (WIRE §14.3): its installed skills
(`GET /v1/skills`), its configurable toolsets (`GET /v1/toolsets`) and its model inventory (the dashboard's
`/api/model/options`), read as the built-in api_server and the dashboard read them.

Required names: a route built on a missing one answers 500. Blocking (files, config; the inventory may probe
provider endpoints): callers run every function here in a worker thread. Their exceptions propagate.
"""

from __future__ import annotations

from typing import Any

from . import agent, home
from ._core import API_SERVER, HermesName

FIND_SKILLS = HermesName("tools.skills_tool", "_find_all_skills", args=(), kwargs=("skip_disabled",))
SORT_SKILLS = HermesName("tools.skills_tool", "_sort_skills", args=("skills",))
CONFIGURABLE_TOOLSETS = HermesName("hermes_cli.tools_config", "_get_effective_configurable_toolsets", args=())
TOOLSET_HAS_KEYS = HermesName("hermes_cli.tools_config", "_toolset_has_keys", args=("ts_key", "config"))
RESOLVE_TOOLSET = HermesName("toolsets", "resolve_toolset", args=("name",))
PICKER_CONTEXT = HermesName("hermes_cli.inventory", "load_picker_context", args=())
MODELS_PAYLOAD = HermesName(
    "hermes_cli.inventory",
    "build_models_payload",
    args=("ctx",),
    kwargs=(
        "explicit_only",
        "include_unconfigured",
        "picker_hints",
        "canonical_order",
        "pricing",
        "capabilities",
        "refresh",
        "probe_custom_providers",
        "probe_current_custom_provider",
    ),
)

NAMES: tuple[HermesName, ...] = (
    FIND_SKILLS,
    SORT_SKILLS,
    CONFIGURABLE_TOOLSETS,
    TOOLSET_HAS_KEYS,
    RESOLVE_TOOLSET,
    PICKER_CONTEXT,
    MODELS_PAYLOAD,
)


def all_skills() -> list[dict[str, Any]]:
    """The installed skills the agent loads (disabled ones left out), sorted as the built-in `GET /v1/skills` lists
    them."""
    return list(SORT_SKILLS.resolve()(FIND_SKILLS.resolve()(skip_disabled=False)))


def toolsets_listing(platform: str = API_SERVER) -> list[dict[str, Any]]:
    """The configurable toolsets with their state for `platform`, as the built-in `GET /v1/toolsets` builds them."""
    config = home.load_config()
    enabled = agent.PLATFORM_TOOLS.resolve()(config, platform, include_default_mcp_servers=False)
    has_keys = TOOLSET_HAS_KEYS.resolve()
    data = []
    for name, label, description in CONFIGURABLE_TOOLSETS.resolve()():
        entry = {"name": name, "label": label, "description": description, "enabled": name in enabled}
        data.append({**entry, "configured": has_keys(name, config), "tools": _toolset_tools(name)})
    return data


def _toolset_tools(name: str) -> list[str]:
    try:
        return sorted(set(RESOLVE_TOOLSET.resolve()(name)))
    except Exception:  # one unresolvable toolset (a broken plugin) lists no tools, as upstream
        return []


def model_inventory(refresh: bool) -> dict[str, Any]:
    """The dashboard's call: default opens probe only the current custom endpoint, a refresh probes them all."""
    payload = MODELS_PAYLOAD.resolve()(
        PICKER_CONTEXT.resolve()(),
        explicit_only=False,
        include_unconfigured=False,
        picker_hints=True,
        canonical_order=True,
        pricing=True,
        capabilities=True,
        refresh=refresh,
        probe_custom_providers=refresh,
        probe_current_custom_provider=not refresh,
    )
    return dict(payload)
