"""Start-up migration of config.yaml: the obsolete `browser.extension_control` section (WIRE.md §11; W-11.2).

The line-based rewrite is checked on realistic files (comments, other sections, nested blocks, CRLF) by diffing
against the expected text; then the real gateway process (`python -m hermes_api_plugin gateway`, tests/live.py)
is started on such a file: the section is gone, the rest is byte-identical, one log line; a second start changes
nothing and logs nothing; a file without the section is untouched; a file that cannot be written logs a warning
and the gateway starts anyway.
"""

from __future__ import annotations

import difflib
import logging
import os
import resource
import signal
import stat
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hermes_api_plugin.config.migration import migrate_config, without_extension_control
from hermes_api_plugin.config.settings import load_settings
from tests.live import LiveGateway, spawn_gateway, start_gateway, write_home

MIGRATED = (
    "[API Server] Removed obsolete browser.extension_control from config.yaml (use browser.cdp_url / browser_exec)"
)
LISTENING = r"API server listening on http://(\S+):(\d+)"

# A config.yaml as a user keeps it: comments everywhere, several sections, the obsolete block in the middle of
# `browser:` with nested mappings, a list, an inner comment and a blank line inside it. {script} is filled in.
REALISTIC = """\
# ~/.hermes/config.yaml — Hermes Agent
# Edited by hand. Keep the comments!

model:
  provider: openrouter          # `hermes model` changes this
  default: anthropic/claude-sonnet-4.5

agent:
  runtime: scripted
  max_turns: 90
  script: {script}

terminal:
  backend: local
  timeout: 180   # seconds

browser:
  # Chrome started with --remote-debugging-port=9222
  cdp_url: http://127.0.0.1:9222
{block}  headless: false   # show the window
  # user data lives next to the profile
  user_data_dir: ~/.hermes/browser

display:
  show_reasoning: true
  platforms:
    api_server:
      interim_assistant_messages: true

api_server:
  sse_keepalive_seconds: 1
  cors_origins: []
"""
BLOCK = """\
  extension_control:
    enabled: true
    # token shared with the Hermes browser extension
    token: "4f1c-legacy"
    port: 9333

    allowed_origins:
      - chrome-extension://abcdefghijklmnopabcdefghijklmnop
      - moz-extension://0f9e8d7c-legacy
"""


def realistic(script: str = "/tmp/script.yaml", *, crlf: bool = False) -> tuple[str, str]:
    """(original, expected): the expected text is the original without exactly the block's lines."""
    original = REALISTIC.format(script=script, block=BLOCK)
    expected = REALISTIC.format(script=script, block="")
    if crlf:
        return original.replace("\n", "\r\n"), expected.replace("\n", "\r\n")
    return original, expected


def diff(actual: str | None, expected: str) -> str:
    return "".join(
        difflib.unified_diff(expected.splitlines(True), (actual or "").splitlines(True), "expected", "actual")
    )


# -- the rewrite --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
def test_realistic_file_loses_exactly_the_section(crlf: bool) -> None:
    """W-11.2, §11: the nested block (inner comment, blank line and list included) is removed; every other byte —
    comments, order, indentation, line endings — is kept."""
    original, expected = realistic(crlf=crlf)
    updated = without_extension_control(original)
    assert updated == expected, diff(updated, expected)
    assert without_extension_control(updated) is None, "a second pass finds nothing"


@pytest.mark.parametrize(
    ("original", "expected"),
    [
        pytest.param(
            "browser:\n  cdp_url: ws://127.0.0.1:9222/devtools/browser/abc\n  extension_control:\n"
            "    enabled: false\n\n# Display settings\ndisplay:\n  show_reasoning: true\n",
            "browser:\n  cdp_url: ws://127.0.0.1:9222/devtools/browser/abc\n\n# Display settings\n"
            "display:\n  show_reasoning: true\n",
            id="last-key-before-a-commented-section",
        ),
        pytest.param(
            "browser:\n  extension_control: true\n  cdp_url: http://127.0.0.1:9222\n",
            "browser:\n  cdp_url: http://127.0.0.1:9222\n",
            id="inline-scalar",
        ),
        pytest.param(
            "browser:\n  extension_control:\n    enabled: true\nother: 1\n",
            "browser:\nother: 1\n",
            id="emptied-mapping-is-kept",
        ),
        pytest.param(
            "model:\n  default: x\nbrowser:\n  extension_control:\n    enabled: true",
            "model:\n  default: x\nbrowser:\n",
            id="end-of-file-without-newline",
        ),
        pytest.param(
            "browser:   # browser automation\n  extension_control: {enabled: true, port: 9333}\n"
            "  cdp_url: http://127.0.0.1:9222\n",
            "browser:   # browser automation\n  cdp_url: http://127.0.0.1:9222\n",
            id="comment-on-browser-line-and-flow-value",
        ),
        pytest.param(
            "browser:\n    cdp_url: http://127.0.0.1:9222\n    extension_control:\n        enabled: true\n"
            "        port: 9333\n    headless: true\n",
            "browser:\n    cdp_url: http://127.0.0.1:9222\n    headless: true\n",
            id="four-space-indent",
        ),
        pytest.param(
            "browser:\n  extension_control:\n    enabled: true\n  # DevTools endpoint of Chrome\n"
            "  cdp_url: http://127.0.0.1:9222\n",
            "browser:\n  # DevTools endpoint of Chrome\n  cdp_url: http://127.0.0.1:9222\n",
            id="comment-of-the-next-key-is-kept",
        ),
    ],
)
def test_section_variants_are_removed_exactly(original: str, expected: str) -> None:
    """W-11.2, §11: wherever the section sits in `browser:` and however it is written, only its lines go."""
    updated = without_extension_control(original)
    assert updated == expected, diff(updated, expected)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("model:\n  default: x\n", id="no-browser"),
        pytest.param("browser:\n  cdp_url: http://127.0.0.1:9222\n  headless: true\n", id="browser-without-it"),
        pytest.param(
            "plugins:\n  extension_control:\n    enabled: true\nbrowser:\n  cdp_url: x\n", id="other-top-level-key"
        ),
        pytest.param("browser:\n  # extension_control:\n  #   enabled: true\n  cdp_url: x\n", id="commented-out"),
        pytest.param("browser:\n  extension_control_port: 9333\n  cdp_url: x\n", id="longer-key-name"),
        pytest.param(
            "browser:\n  profiles:\n    work:\n      extension_control: true\n  cdp_url: x\n",
            id="deeper-key-is-not-the-section",
        ),
        pytest.param("browser:\n  cdp_url: x\nextension_control:\n  enabled: true\n", id="top-level-key"),
        pytest.param("", id="empty-file"),
    ],
)
def test_file_without_the_section_is_left_alone(text: str) -> None:
    """W-11.2, §11: without a `browser.extension_control` section nothing is rewritten (None: untouched)."""
    assert without_extension_control(text) is None


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
def test_migrate_config_rewrites_once_keeps_mode_and_logs_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, crlf: bool
) -> None:
    """W-11.2, §11: migrate_config writes the expected bytes (line endings included), keeps the file mode, logs the
    exact line once; a second call changes nothing and logs nothing; a missing file is no error."""
    path = tmp_path / "config.yaml"
    original, expected = realistic(crlf=crlf)
    path.write_bytes(original.encode())
    path.chmod(0o640)
    with caplog.at_level(logging.INFO, logger="hermes_api_plugin"):
        assert migrate_config(path) is True
        actual = path.read_bytes()
        assert actual == expected.encode(), diff(actual.decode(), expected)
        assert stat.S_IMODE(path.stat().st_mode) == 0o640
        before = path.stat()
        assert migrate_config(path) is False
        assert migrate_config(tmp_path / "missing.yaml") is False
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert [r.getMessage() for r in caplog.records] == [MIGRATED]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml"], "no temporary file is left behind"


# -- the real gateway process -------------------------------------------------------------------------------------------


@pytest.fixture
def gateways() -> Iterator[list[LiveGateway]]:
    started: list[LiveGateway] = []
    yield started
    for gateway in started:
        gateway.stop()


def home_with_config(root: Path, text_for: Callable[[str], tuple[str, str]]) -> tuple[Path, str, str]:
    """A Hermes home (test script, .env) whose config.yaml is replaced by a realistic file: (home, original,
    expected), `text_for(script path)` giving the original and expected texts."""
    home = write_home(root)
    original, expected = text_for(str(home / "script.yaml"))
    (home / "config.yaml").write_bytes(original.encode())
    return home, original, expected


def health(live: LiveGateway) -> int:
    with urllib.request.urlopen(f"{live.url}/health", timeout=10) as resp:
        return resp.status  # type: ignore[no-any-return]


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
def test_gateway_start_migrates_once_and_a_second_start_changes_nothing(
    tmp_path: Path, gateways: list[LiveGateway], crlf: bool
) -> None:
    """W-11.2, §11: the first start of the real gateway removes the section (the rest byte-identical to the expected
    text), logs the line exactly once before listening, and serves; a second start leaves the file alone (same
    bytes, not rewritten) and logs nothing about it."""
    home, _, expected = home_with_config(tmp_path / "home", lambda s: realistic(s, crlf=crlf))
    config = home / "config.yaml"
    first = start_gateway(home)
    gateways.append(first)
    actual = config.read_bytes()
    assert actual == expected.encode(), diff(actual.decode(), expected)
    lines = first.lines
    assert lines.count(MIGRATED) == 1, first.output()
    assert next(i for i, line in enumerate(lines) if "listening" in line) > lines.index(MIGRATED)
    assert not [line for line in lines if "extension_control" in line and line != MIGRATED], first.output()
    assert health(first) == 200
    assert load_settings(home, environ={"HERMES_HOME": str(home)}).problems == ()
    first.stop()
    before = config.stat()
    second = start_gateway(home)
    gateways.append(second)
    assert health(second) == 200
    assert config.read_bytes() == expected.encode()
    after = config.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not [line for line in second.lines if "extension_control" in line], second.output()


def test_gateway_start_leaves_a_file_without_the_section_untouched(tmp_path: Path, gateways: list[LiveGateway]) -> None:
    """W-11.2, §11: without the section the file is not touched (same bytes, inode and mtime) and nothing is logged."""
    home, original, _ = home_with_config(tmp_path / "home", lambda s: (realistic(s)[1],) * 2)
    config = home / "config.yaml"
    before = config.stat()
    live = start_gateway(home)
    gateways.append(live)
    assert health(live) == 200
    assert config.read_bytes() == original.encode()
    after = config.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not [line for line in live.lines if "extension_control" in line], live.output()
    assert sorted(p.name for p in home.iterdir() if p.name.startswith(".config")) == []


def test_unwritable_config_logs_a_warning_and_the_gateway_starts_anyway(
    tmp_path: Path, gateways: list[LiveGateway]
) -> None:
    """W-11.2, §11: when the rewritten file cannot be written, the gateway logs a warning, leaves the file as it was,
    does not claim the migration, and starts anyway.

    Root ignores file modes, so the write is made to fail with a file-size limit (RLIMIT_FSIZE, inherited by the
    gateway process) below the size of the rewritten file: a padded ~600 KB config, a 256 KB limit.
    """
    padding = "".join(
        f"# note {i:06d}: kept as the user wrote it, long comment line for padding\n" for i in range(8000)
    )

    def padded(script: str) -> tuple[str, str]:
        original, expected = realistic(script)
        return original + padding, expected + padding

    home, original, _ = home_with_config(tmp_path / "home", padded)
    config = home / "config.yaml"
    limit = 256 * 1024
    assert len(original) > 2 * limit
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    if hard != resource.RLIM_INFINITY and hard < limit:
        pytest.skip("the hard file-size limit is already below the test's limit")
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        live = spawn_gateway(home)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    gateways.append(live)
    match = live.wait_for_line(LISTENING, 30)
    if match is None:
        live.stop(signal.SIGKILL)
        pytest.fail(f"the gateway did not start:\n{live.output()}")
    live.host, live.port = match.group(1), int(match.group(2))
    assert health(live) == 200
    assert config.read_bytes() == original.encode(), "the file is left as it was"
    warnings = [line for line in live.lines if "extension_control" in line]
    assert len(warnings) == 1 and "Could not rewrite" in warnings[0], live.output()
    assert MIGRATED not in live.lines
    assert os.path.getsize(config) == len(original.encode())
