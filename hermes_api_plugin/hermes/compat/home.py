"""The compat boundary for Hermes' home: `$HERMES_HOME` as Hermes resolves it (profiles included) and config.yaml as
Hermes loads it (defaults merged). Several features read them (profiles, cron, the toolsets listing), so they are
declared here, once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...config.settings import default_hermes_home
from ._core import MISSING, HermesName, call

HERMES_HOME = HermesName(
    "hermes_constants", "get_hermes_home", args=(), fallback="$HERMES_HOME, else ~/.hermes (profiles are not resolved)"
)
# Required: the host routes built on it (toolsets, the cron fire webhook) fail 500 without it.
LOAD_CONFIG = HermesName("hermes_cli.config", "load_config", args=())

NAMES: tuple[HermesName, ...] = (HERMES_HOME, LOAD_CONFIG)


def hermes_home() -> Path:
    """`$HERMES_HOME` as Hermes resolves it (profiles included)."""
    home = call(HERMES_HOME)
    if home is MISSING:
        return default_hermes_home()
    return Path(home)


def load_config() -> Any:
    """config.yaml as Hermes loads it, defaults merged (re-read each time: it may change). Blocking: worker thread."""
    return LOAD_CONFIG.resolve()()
