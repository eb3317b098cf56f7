"""Issue 20, defect 8: a mistyped store URL logged its password (`got '…secret…'` at WARNING and ERROR). However the
URL or DSN is written — one slash, no scheme, a libpq key=value string, a password with `@`, `:` or `/`, a
`password=` / `sslpassword=` parameter — and wherever it comes from (the process environment, `.env`,
config.yaml), its secret never reaches the settings' problems, the log, or a StoreError's text, even where libpq
itself quotes the URL in its error."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hermes_api_plugin.config.settings import load_settings
from hermes_api_plugin.store.base import StoreError
from hermes_api_plugin.store.postgres.db import PostgresDatabase
from tests.helpers import STORE_PASSWORD
from tests.live import LiveGateway, spawn_gateway, write_home

# Each refused by the config check (not a postgresql:// URL, or a password libpq would split).
REFUSED = [
    f"postgresql:/hermes:{STORE_PASSWORD}@127.0.0.1:1/h",
    f"hermes:{STORE_PASSWORD}@127.0.0.1:1/h",
    f"host=127.0.0.1 port=1 password={STORE_PASSWORD}",
    f"host=127.0.0.1 port=1 sslpassword='{STORE_PASSWORD}'",
    f"postgresql://hermes:{STORE_PASSWORD}@x@127.0.0.1:1/h",
    f"postgresql://hermes:{STORE_PASSWORD}/x:y@127.0.0.1:1/h",
]
# Accepted by the config check, refused by libpq, whose message quotes the password.
QUOTED_BY_LIBPQ = f"postgresql://hermes:{STORE_PASSWORD} x@127.0.0.1:1/h"


@pytest.mark.parametrize("url", REFUSED)
@pytest.mark.parametrize("source", ["environment", "config.yaml"])
def test_issue_20_defect_8_a_refused_store_url_is_a_problem_without_its_secret(
    tmp_path: Path, url: str, source: str
) -> None:
    if source == "environment":
        settings = load_settings(tmp_path, environ={"API_SERVER_STORE_URL": url})
    else:
        write_home(tmp_path, config={"api_server": {"store": {"url": url}}}, script=None)
        settings = load_settings(tmp_path, environ={})
    assert settings.store_url is None and settings.store_url_problem is not None
    assert "store" in settings.store_url_problem.lower() or "STORE_URL" in settings.store_url_problem
    assert STORE_PASSWORD not in "\n".join(settings.problems), settings.problems


async def test_issue_20_defect_8_a_libpq_error_quoting_the_url_is_masked() -> None:
    assert load_settings(Path("/nonexistent"), environ={"API_SERVER_STORE_URL": QUOTED_BY_LIBPQ}).store_url
    db = PostgresDatabase(QUOTED_BY_LIBPQ)
    with pytest.raises(StoreError) as caught:
        await db.open()
    assert "spaces" in str(caught.value)  # libpq's own words survive, its quote of the password does not
    assert STORE_PASSWORD not in str(caught.value) and STORE_PASSWORD not in repr(db), caught.value


def run_to_exit(home: Path) -> LiveGateway:
    live = spawn_gateway(home)
    try:
        live.proc.wait(30)
    except subprocess.TimeoutExpired:
        live.stop()
        pytest.fail(f"the gateway did not refuse to start:\n{live.output()}")
    live.stop()
    return live


@pytest.mark.parametrize("url", [*REFUSED, QUOTED_BY_LIBPQ])
def test_issue_20_defect_8_the_real_gateway_never_prints_the_secret_of_a_mistyped_url(tmp_path: Path, url: str) -> None:
    in_env = run_to_exit(write_home(tmp_path / "env", env={"API_SERVER_STORE_URL": url}))
    in_yaml = run_to_exit(write_home(tmp_path / "yaml", config={"api_server": {"store": {"url": url}}}))
    for live in (in_env, in_yaml):
        output = live.output()
        assert live.proc.returncode == 1, output
        assert "Refusing to start" in output or "Not starting" in output, output
        assert STORE_PASSWORD not in output, output
        assert "Traceback" not in output, output
