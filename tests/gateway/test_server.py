"""Reference gateway pieces that need no process: loopback rules, refusal lines, init."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest

from hermes_api_plugin.config.settings import load_settings, parse_env_file
from hermes_api_plugin.gateway.cli import init_env
from hermes_api_plugin.gateway.server import check_startable, display_address, is_loopback


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1", "localhost", "LOCALHOST"])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.4", "10.0.0.1", "no-such-host.invalid"])
def test_exposed_hosts(host: str) -> None:
    assert not is_loopback(host)


def test_ipv6_hosts_are_bracketed_in_urls() -> None:
    assert display_address("::1") == "[::1]" and display_address("127.0.0.1") == "127.0.0.1"


def test_refusal_without_key_is_one_line_naming_the_variable_and_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """W-1.1"""
    caplog.set_level(logging.INFO, "hermes_api_plugin")
    settings = load_settings(tmp_path, environ={"API_SERVER_ENABLED": "true", "API_SERVER_KEY": "short"})
    assert check_startable(settings) is False
    (record,) = caplog.records
    assert record.getMessage() == (
        "[API Server] Refusing to start: API_SERVER_KEY is missing or shorter than 16 characters — "
        f"set it in {tmp_path}/.env"
    )


def test_a_key_alone_does_not_enable(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """§1.2"""
    settings = load_settings(tmp_path, environ={"API_SERVER_KEY": "change-me-local-dev"})
    assert check_startable(settings) is False
    assert "API_SERVER_ENABLED" in caplog.text


def test_a_store_url_that_is_not_postgresql_refuses_the_start_naming_the_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 15: a gateway told to share a database never falls back to a file of its own."""
    caplog.set_level(logging.INFO, "hermes_api_plugin")
    env = {
        "API_SERVER_ENABLED": "true",
        "API_SERVER_KEY": "change-me-local-dev",
        "API_SERVER_STORE_URL": "mysql://hermes:s3cret-pw@db/hermes",
    }
    assert check_startable(load_settings(tmp_path, environ=env)) is False
    (record,) = caplog.records
    assert record.levelname == "ERROR"
    assert record.getMessage().startswith(
        "[API Server] Refusing to start: API_SERVER_STORE_URL: expected a postgresql:// or postgres:// URL, got "
        "'mysql://hermes:***@db/hermes'"
    )
    caplog.clear()
    assert check_startable(load_settings(tmp_path, environ={**env, "API_SERVER_STORE_URL": "postgresql://db/h"}))
    assert caplog.records == []


def test_init_writes_a_private_env_with_a_new_key_once(tmp_path: Path) -> None:
    key, created = init_env(tmp_path / "home")
    env_file = tmp_path / "home" / ".env"
    assert created and len(key) >= 16
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert parse_env_file(env_file.read_text()) == {"API_SERVER_ENABLED": "true", "API_SERVER_KEY": key}
    again, created_again = init_env(tmp_path / "home")
    assert (again, created_again) == (key, False)


def test_init_keeps_existing_settings_and_adds_what_is_missing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".env").write_text("OPENROUTER_API_KEY=abc\nAPI_SERVER_ENABLED=false")
    key, created = init_env(home)
    values = parse_env_file((home / ".env").read_text())
    assert created and values == {"OPENROUTER_API_KEY": "abc", "API_SERVER_ENABLED": "false", "API_SERVER_KEY": key}
