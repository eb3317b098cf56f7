"""`hermes-api`: `gateway` runs the reference gateway, `init` writes `$HERMES_HOME/.env` with a new key,
`install-hook` copies the `hermes gateway` startup hook into `$HERMES_HOME/hooks/`."""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
from importlib import resources
from pathlib import Path

from ..config.settings import MIN_KEY_LENGTH, Settings, default_hermes_home, load_settings, parse_env_file
from ..hermes.bridge import ENTRY_POINT_NAME
from ..telemetry.log_format import configure_logging
from .server import run_gateway


def _setup_logging(verbose: bool, settings: Settings) -> None:
    """`api_server.logging.format` for the whole process, secrets masked (the key, the model key, exporter headers)."""
    secrets = (settings.key, settings.model.api_key, *(settings.tracing.headers or {}).values())
    configure_logging(settings.log_format, verbose=verbose, secrets=[s for s in secrets if s])


def init_env(home: Path) -> tuple[str, bool]:
    """Ensure `home/.env` enables the API server with a key; returns (key, created). File mode 0600."""
    home.mkdir(parents=True, exist_ok=True)
    env_path = home / ".env"
    existing = env_path.read_text(encoding="utf-8") if env_path.exists() else ""
    values = parse_env_file(existing)
    current = values.get("API_SERVER_KEY", "").strip()
    additions: list[str] = []
    if values.get("API_SERVER_ENABLED") is None:
        additions.append("API_SERVER_ENABLED=true")
    created = len(current) < MIN_KEY_LENGTH
    key = secrets.token_urlsafe(32) if created else current
    if created:
        additions.append(f"API_SERVER_KEY={key}")
    if additions:
        prefix = "" if not existing or existing.endswith("\n") else "\n"
        header = "" if existing else "# Written by `hermes-api init`. Keep this file private.\n"
        fd = os.open(env_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(prefix + header + "\n".join(additions) + "\n")
    os.chmod(env_path, 0o600)
    return key, created


def hook_bundle() -> Path:
    """The `hooks/hermes-api-plugin` bundle: packaged copy in a wheel, `hooks/` in a source checkout."""
    packaged = resources.files("hermes_api_plugin").joinpath("_data/hooks/hermes-api-plugin")
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "hooks" / "hermes-api-plugin"


def install_hook(home: Path) -> Path:
    """Copy the gateway:startup hook bundle to `home/hooks/hermes-api-plugin` (replacing an older copy)."""
    source = hook_bundle()
    target = home / "hooks" / source.name
    target.mkdir(parents=True, exist_ok=True)
    for name in ("HOOK.yaml", "handler.py"):
        shutil.copyfile(source / name, target / name)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hermes-api", description="OpenAI-compatible API for a Hermes agent gateway")
    sub = parser.add_subparsers(dest="command", required=True)
    gw = sub.add_parser("gateway", help="run the reference gateway (reads $HERMES_HOME/.env and config.yaml)")
    gw.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub.add_parser("init", help="write $HERMES_HOME/.env with API_SERVER_ENABLED=true and a new API_SERVER_KEY")
    sub.add_parser("install-hook", help="copy the `hermes gateway` startup hook into $HERMES_HOME/hooks/")
    args = parser.parse_args(argv)

    if args.command == "install-hook":
        home = default_hermes_home()
        target = install_hook(home)
        print(f"Installed the gateway:startup hook in {target}")
        print(f"Enable the plugin in {home / 'config.yaml'} (it then replaces Hermes' built-in api_server):")
        print(f"  plugins:\n    enabled: [{ENTRY_POINT_NAME}]")
        return 0

    if args.command == "init":
        home = default_hermes_home()
        key, created = init_env(home)
        where = home / ".env"
        print(f"{'Wrote a new key to' if created else 'Using the key already in'} {where}")
        print(f"API_SERVER_KEY={key}")
        return 0

    settings = load_settings()
    _setup_logging(args.verbose, settings)
    try:
        return asyncio.run(run_gateway(settings))
    except KeyboardInterrupt:
        return 130
