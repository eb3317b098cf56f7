"""Settings: sources and precedence, parsing, and problems reported by key path (WIRE.md §12)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hermes_api_plugin.config.settings import load_settings, parse_bool, parse_env_file


def home_with(tmp_path: Path, env_text: str = "", config: dict | None = None) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".env").write_text(env_text, encoding="utf-8")
    if config is not None:
        (home / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return home


def test_defaults_without_files(tmp_path: Path) -> None:
    s = load_settings(tmp_path / "empty", environ={})
    assert (s.enabled, s.key, s.bind_address, s.port) == (False, None, "127.0.0.1", 8642)
    assert s.model_name == "hermes-agent" and s.max_concurrent_runs == 10 and s.sse_keepalive_seconds == 10
    assert s.tool_progress_events and s.on_disconnect == "auto" and s.interim_assistant_messages
    assert s.problems == ()


def test_process_env_wins_over_dotenv_which_wins_over_yaml(tmp_path: Path) -> None:
    home = home_with(
        tmp_path,
        "API_SERVER_KEY=from-dotenv-0123456789\nAPI_SERVER_PORT=9000\nAPI_SERVER_ENABLED=yes\n",
        {"api_server": {"port": 7000, "host": "127.0.0.2", "key": "from-yaml-0123456789"}},
    )
    s = load_settings(home, environ={"API_SERVER_PORT": "9100"})
    assert s.port == 9100
    assert s.key == "from-dotenv-0123456789"
    assert s.bind_address == "127.0.0.2"
    assert s.enabled is True


def test_key_is_trimmed_and_must_have_16_chars(tmp_path: Path) -> None:
    assert load_settings(tmp_path, environ={"API_SERVER_KEY": "  change-me-local-dev  "}).key == "change-me-local-dev"
    assert load_settings(tmp_path, environ={"API_SERVER_KEY": " 123456789012345 "}).key is None


@pytest.mark.parametrize("raw", ["true", "TRUE", " 1 ", "yes", "On"])
def test_enabled_accepts_true_spellings(tmp_path: Path, raw: str) -> None:
    assert load_settings(tmp_path, environ={"API_SERVER_ENABLED": raw}).enabled is True


def test_dotenv_parsing() -> None:
    parsed = parse_env_file("# c\nexport A=1\nB = 'two words'\nC=\"q\"\nD=x # note\nbad line\nE=\n")
    assert parsed == {"A": "1", "B": "two words", "C": "q", "D": "x", "E": ""}


def test_parse_bool() -> None:
    assert (
        parse_bool(True) is True and parse_bool("no") is False and parse_bool("maybe") is None and parse_bool(1) is None
    )


def test_invalid_values_fall_back_and_are_reported_by_key_path(tmp_path: Path) -> None:
    home = home_with(
        tmp_path,
        "",
        {
            "api_server": {
                "max_concurrent_runs": -3,
                "sse_keepalive_seconds": 99,
                "tool_progress_events": "perhaps",
                "on_disconnect": "explode",
                "port": "abc",
            },
            "agent": {"max_turns": "many"},
        },
    )
    s = load_settings(home, environ={})
    assert s.max_concurrent_runs == 10 and s.sse_keepalive_seconds == 10 and s.tool_progress_events
    assert s.on_disconnect == "auto" and s.port == 8642 and s.max_turns == 90
    joined = "\n".join(s.problems)
    for path in (
        "api_server.max_concurrent_runs",
        "api_server.sse_keepalive_seconds",
        "api_server.tool_progress_events",
        "api_server.on_disconnect",
        "api_server.port",
        "agent.max_turns",
    ):
        assert path in joined


def test_cors_origins_from_env_list_or_yaml_list(tmp_path: Path) -> None:
    env = load_settings(tmp_path, environ={"API_SERVER_CORS_ORIGINS": " http://a , http://b ,"})
    assert env.cors_origins == ("http://a", "http://b")
    home = home_with(tmp_path, "", {"api_server": {"cors_origins": ["*"]}})
    assert load_settings(home, environ={}).cors_wildcard


def test_interim_messages_platform_setting_wins_over_global(tmp_path: Path) -> None:
    home = home_with(
        tmp_path,
        "",
        {
            "display": {
                "interim_assistant_messages": True,
                "platforms": {"api_server": {"interim_assistant_messages": False}},
            }
        },
    )
    assert load_settings(home, environ={}).interim_assistant_messages is False


def test_model_name_falls_back_to_profile(tmp_path: Path) -> None:
    assert load_settings(tmp_path, environ={"HERMES_PROFILE": "work"}).model_name == "work"
    assert load_settings(tmp_path, environ={"HERMES_PROFILE": "default"}).model_name == "hermes-agent"
    assert load_settings(tmp_path, environ={"API_SERVER_MODEL_NAME": "mine"}).model_name == "mine"


def test_unreadable_yaml_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    (home / "config.yaml").write_text("api_server: [unclosed", encoding="utf-8")
    s = load_settings(home, environ={})
    assert any("config.yaml" in p for p in s.problems)


def test_script_path_from_env_or_config(tmp_path: Path) -> None:
    home = home_with(tmp_path, "", {"agent": {"script": "scripts/mine.yaml"}})
    assert load_settings(home, environ={}).script_path == home / "scripts" / "mine.yaml"
    assert load_settings(home, environ={"HERMES_API_SCRIPT": "/abs/x.yaml"}).script_path == Path("/abs/x.yaml")


# -- api_server.store.url (issue 15): the PostgreSQL store ------------------------------------------------

PG_URL = "postgresql://hermes:s3cret-pw@db.internal:5432/hermes"


def test_store_url_is_unset_by_default_and_sqlite_is_used(tmp_path: Path) -> None:
    s = load_settings(tmp_path / "empty", environ={})
    assert s.store_url is None and s.store_url_problem is None
    assert load_settings(tmp_path / "empty", environ={"API_SERVER_STORE_URL": "  "}).store_url is None


def test_store_url_from_yaml_dotenv_or_process_env_which_wins(tmp_path: Path) -> None:
    yaml_url = "postgres://from-yaml@db/h"
    home = home_with(tmp_path, f"API_SERVER_STORE_URL={PG_URL}\n", {"api_server": {"store": {"url": yaml_url}}})
    assert load_settings(home, environ={}).store_url == PG_URL  # .env wins over config.yaml
    process = "postgresql://from-process@db/h"
    assert load_settings(home, environ={"API_SERVER_STORE_URL": process}).store_url == process
    (home / ".env").write_text("", encoding="utf-8")
    s = load_settings(home, environ={})
    assert s.store_url == yaml_url and s.problems == ()  # postgres:// is PostgreSQL's other spelling


@pytest.mark.parametrize(
    ("where", "value"),
    [
        ("API_SERVER_STORE_URL", "mysql://hermes:s3cret-pw@db.internal/hermes"),
        ("API_SERVER_STORE_URL", "/var/lib/hermes/state.sqlite3"),
        ("API_SERVER_STORE_URL", "postgresql://"),
        ("api_server.store.url", "redis://hermes:s3cret-pw@db:6379/0"),
        ("api_server.store.url", 5432),
    ],
)
def test_a_store_url_that_is_not_postgresql_is_a_problem_naming_the_key(
    tmp_path: Path, where: str, value: object
) -> None:
    if where.startswith("API_"):
        s = load_settings(home_with(tmp_path), environ={where: str(value)})
    else:
        s = load_settings(home_with(tmp_path, "", {"api_server": {"store": {"url": value}}}), environ={})
    assert s.store_url is None
    assert s.store_url_problem is not None and s.store_url_problem.startswith(f"{where}: expected a postgresql://")
    assert s.store_url_problem in s.problems
    assert "s3cret-pw" not in "\n".join(s.problems)  # the value is shown with its password masked


def test_the_store_url_password_stays_out_of_the_settings_repr(tmp_path: Path) -> None:
    s = load_settings(tmp_path, environ={"API_SERVER_STORE_URL": PG_URL})
    assert s.store_url == PG_URL and "s3cret-pw" not in repr(s)


def test_the_lease_seconds_default_to_15_and_are_checked(tmp_path: Path) -> None:
    """Issue 15: `api_server.store.lease_seconds` (1–3600, a number): a gateway renews its lease every third of it."""
    assert load_settings(tmp_path / "none", environ={}).store_lease_seconds == 15.0
    for value, expected, problem in ((2, 2.0, False), (0.5, 15.0, True), ("soon", 15.0, True), (7200, 15.0, True)):
        (tmp_path / str(value)).mkdir()
        s = load_settings(home_with(tmp_path / str(value), "", {"api_server": {"store": {"lease_seconds": value}}}), {})
        assert s.store_lease_seconds == expected
        assert any("api_server.store.lease_seconds" in p for p in s.problems) is problem


def test_the_suspend_seconds_default_to_900_and_are_checked(tmp_path: Path) -> None:
    """Issue 22: `api_server.turns.suspend_seconds` (a number, 0.01 s – 7 days) bounds a suspended turn's wait."""
    assert load_settings(tmp_path / "none", environ={}).turns_suspend_seconds == 900.0
    for value, expected, problem in ((60, 60.0, False), (0.5, 0.5, False), (0, 900.0, True), ("soon", 900.0, True)):
        (tmp_path / str(value)).mkdir()
        s = load_settings(
            home_with(tmp_path / str(value), "", {"api_server": {"turns": {"suspend_seconds": value}}}), {}
        )
        assert s.turns_suspend_seconds == expected
        assert any("api_server.turns.suspend_seconds" in p for p in s.problems) is problem


def test_the_settled_turn_bounds_default_and_are_checked(tmp_path: Path) -> None:
    """Issue 20, defect 2: `api_server.turns.max_recent` (0–1 000 000) and `max_recent_bytes` (0–2**40), integers,
    bound the settled turns kept in memory; a bad value falls back to its default and is reported by key path."""
    s = load_settings(tmp_path / "none", environ={})
    assert (s.turns_max_recent, s.turns_max_recent_bytes) == (10_000, 64 * 1024 * 1024)
    (tmp_path / "good").mkdir()
    (tmp_path / "bad").mkdir()
    good = load_settings(
        home_with(tmp_path / "good", "", {"api_server": {"turns": {"max_recent": 50, "max_recent_bytes": 1000}}}), {}
    )
    assert (good.turns_max_recent, good.turns_max_recent_bytes, good.problems) == (50, 1000, ())
    bad = load_settings(
        home_with(tmp_path / "bad", "", {"api_server": {"turns": {"max_recent": -1, "max_recent_bytes": "lots"}}}), {}
    )
    assert (bad.turns_max_recent, bad.turns_max_recent_bytes) == (10_000, 64 * 1024 * 1024)
    assert any(p.startswith("api_server.turns.max_recent:") for p in bad.problems)
    assert any(p.startswith("api_server.turns.max_recent_bytes:") for p in bad.problems)


# -- api_server.limits.*_timeout_seconds (issue 20, defect 4): connection time-outs ------------------------------


def test_the_connection_time_outs_default_and_are_checked(tmp_path: Path) -> None:
    """Issue 20, defect 4: a request head (30 s), a request body (300 s), an idle keep-alive (75 s); numbers in range,
    else the default with a problem naming the key."""
    s = load_settings(tmp_path / "none", environ={})
    assert (s.header_timeout_seconds, s.body_timeout_seconds, s.keepalive_timeout_seconds) == (30.0, 300.0, 75.0)
    limits = {"header_timeout_seconds": 2, "body_timeout_seconds": 0.5, "keepalive_timeout_seconds": 10}
    s = load_settings(home_with(mkdir(tmp_path / "set"), "", {"api_server": {"limits": limits}}), environ={})
    assert (s.header_timeout_seconds, s.body_timeout_seconds, s.keepalive_timeout_seconds) == (2.0, 0.5, 10.0)
    assert s.problems == ()
    bad = {"header_timeout_seconds": 0, "body_timeout_seconds": "soon", "keepalive_timeout_seconds": -1}
    s = load_settings(home_with(mkdir(tmp_path / "bad"), "", {"api_server": {"limits": bad}}), environ={})
    assert (s.header_timeout_seconds, s.body_timeout_seconds, s.keepalive_timeout_seconds) == (30.0, 300.0, 75.0)
    for key in bad:
        assert any(p.startswith(f"api_server.limits.{key}:") for p in s.problems), s.problems


def mkdir(path: Path) -> Path:
    path.mkdir()
    return path


def test_the_responses_tool_items_mode_defaults_to_on_and_is_checked(tmp_path: Path) -> None:
    """WIRE.md §15.3: `api_server.responses.tool_items` is `on` (the §4.2 pairs) or `hosted` (mcp_call items), any
    case; another value falls back to `on` and is reported by key path."""
    assert load_settings(tmp_path / "none", environ={}).responses_tool_items == "on"
    for n, (value, expected, problem) in enumerate(
        (("hosted", "hosted", False), ("Hosted", "hosted", False), ("on", "on", False), ("off", "on", True))
        + (("mcp", "on", True), (1, "on", True))
    ):
        (tmp_path / str(n)).mkdir()
        s = load_settings(home_with(tmp_path / str(n), "", {"api_server": {"responses": {"tool_items": value}}}), {})
        assert s.responses_tool_items == expected
        assert any(p.startswith("api_server.responses.tool_items:") for p in s.problems) is problem


# -- api_server.tracing and the OTEL_* variables (issue 24, part 2); api_server.logging (part 3) ------------------------


def test_tracing_is_off_without_an_endpoint_and_on_with_the_standard_variables(tmp_path: Path) -> None:
    off = load_settings(tmp_path, environ={}).tracing
    assert (off.enabled, off.endpoint, off.capture_content, off.service_name) == (
        False,
        None,
        False,
        "hermes-api-plugin",
    )
    base = load_settings(tmp_path, environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"}).tracing
    assert base.enabled and base.endpoint == "http://collector:4318/v1/traces"
    # the traces variable is a full URL, used as given, and wins over the base one
    both = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:9/t"}
    assert load_settings(tmp_path, environ=both).tracing.endpoint == "http://b:9/t"


def test_tracing_config_keys_and_the_variables_over_them(tmp_path: Path) -> None:
    tracing = {
        "endpoint": "https://otel.example/v1/traces",
        "headers": {"Authorization": "Bearer tok-0123456789abcdef"},
        "service_name": "team-gateway",
        "sample_ratio": 0.25,
        "capture_content": True,
    }
    home = home_with(tmp_path, config={"api_server": {"tracing": tracing}})
    s = load_settings(home, environ={}).tracing
    assert s.enabled and s.endpoint == "https://otel.example/v1/traces"  # already a traces URL: unchanged
    assert s.headers == {"Authorization": "Bearer tok-0123456789abcdef"} and "tok-" not in repr(s)
    assert (s.service_name, s.sample_ratio, s.capture_content) == ("team-gateway", 0.25, True)
    env = {
        "OTEL_SERVICE_NAME": "from-env",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "false",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318",
    }
    s = load_settings(home, environ=env).tracing
    assert (s.service_name, s.capture_content, s.endpoint) == ("from-env", False, "http://env:4318/v1/traces")


@pytest.mark.parametrize(
    ("config", "environ", "enabled"),
    [
        ({"enabled": True}, {}, True),  # OTLP/HTTP's default address
        ({"enabled": False}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, False),
        ({}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, False),
        ({}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
    ],
    ids=["enabled-alone", "disabled-in-config", "sdk-disabled", "exporter-none"],
)
def test_tracing_switches(tmp_path: Path, config: dict, environ: dict[str, str], enabled: bool) -> None:
    s = load_settings(home_with(tmp_path, config={"api_server": {"tracing": config}}), environ=environ).tracing
    assert s.enabled is enabled
    if config == {"enabled": True}:
        assert s.endpoint == "http://localhost:4318/v1/traces"


def test_tracing_and_logging_values_are_checked_by_key_path(tmp_path: Path) -> None:
    bad = {"tracing": {"headers": ["x"], "sample_ratio": 2, "enabled": "sometimes"}, "logging": {"format": "xml"}}
    s = load_settings(home_with(tmp_path, config={"api_server": bad}), environ={})
    assert s.tracing.headers is None and s.tracing.sample_ratio == 1.0 and s.tracing.enabled is False
    assert s.log_format == "text"
    assert [p.split(":")[0] for p in s.problems] == [
        "api_server.tracing.enabled",
        "api_server.tracing.headers",
        "api_server.tracing.sample_ratio",
        "api_server.logging.format",
    ]
    assert load_settings(tmp_path, environ={}).log_format == "text"
    (tmp_path / "j").mkdir()
    json_home = home_with(tmp_path / "j", config={"api_server": {"logging": {"format": "JSON"}}})
    assert load_settings(json_home, environ={}).log_format == "json"
