"""`runtimes/resolved_settings.py`: Hermes' per-turn resolution answered from memory only while it cannot differ."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from hermes_api_plugin.runtimes.resolved_settings import TTL_S, ResolvedSettings, files_stamp


class Resolver:
    """Counts calls; each answer names its call number and holds a list the caller might edit."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> dict[str, Any]:
        self.calls += 1
        return {"api_key": f"key-{self.calls}", "enabled_toolsets": ["terminal"], "credential_pool": None}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "config.yaml").write_text("model: {default: a}\n")
    (tmp_path / ".env").write_text("OPENAI_API_KEY=one\n")
    return tmp_path


def test_a_repeated_question_is_answered_from_memory_within_the_ttl(home: Path) -> None:
    now = [100.0]
    memo, resolve = ResolvedSettings(clock=lambda: now[0]), Resolver()
    first = memo.get("q", home, resolve)
    now[0] += TTL_S - 0.01
    assert memo.get("q", home, resolve) == first and resolve.calls == 1
    now[0] += 0.02
    assert memo.get("q", home, resolve)["api_key"] == "key-2", "older than the TTL: resolved again"
    assert (memo.hits, memo.misses) == (1, 2)


@pytest.mark.parametrize("name", ["config.yaml", ".env", "auth.json"])
def test_a_changed_or_new_file_of_the_home_resolves_again(home: Path, name: str) -> None:
    memo, resolve = ResolvedSettings(clock=lambda: 0.0), Resolver()
    memo.get("q", home, resolve)
    path = home / name
    path.write_text((path.read_text() if path.exists() else "") + "# changed by hermes model / a login\n")
    assert memo.get("q", home, resolve)["api_key"] == "key-2"
    assert memo.get("q", home, resolve)["api_key"] == "key-2"


def test_a_file_rewritten_with_the_same_size_resolves_again_by_its_mtime(home: Path) -> None:
    memo, resolve = ResolvedSettings(clock=lambda: 0.0), Resolver()
    memo.get("q", home, resolve)
    stat = (home / ".env").stat()
    (home / ".env").write_text("OPENAI_API_KEY=two\n")  # same length
    os.utime(home / ".env", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert memo.get("q", home, resolve)["api_key"] == "key-2"


def test_another_question_or_home_is_resolved_on_its_own(home: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    memo, resolve = ResolvedSettings(clock=lambda: 0.0), Resolver()
    memo.get(("openrouter", None), home, resolve)
    assert memo.get(("anthropic", None), home, resolve)["api_key"] == "key-2"
    other = tmp_path_factory.mktemp("profile")
    assert memo.get(("openrouter", None), other, resolve)["api_key"] == "key-3", "another home's files"


def test_every_answer_is_a_copy_the_caller_may_edit(home: Path) -> None:
    memo, resolve = ResolvedSettings(clock=lambda: 0.0), Resolver()
    memo.get("q", home, resolve)["enabled_toolsets"].append("browser")
    answer = memo.get("q", home, resolve)
    answer["enabled_toolsets"].append("web")
    answer.pop("api_key")
    assert memo.get("q", home, resolve) == {
        "api_key": "key-1",
        "enabled_toolsets": ["terminal"],
        "credential_pool": None,
    }


def test_an_answer_the_caller_does_not_keep_is_resolved_every_time(home: Path) -> None:
    memo, resolve = ResolvedSettings(clock=lambda: 0.0), Resolver()
    for n in range(1, 4):
        assert memo.get("q", home, resolve, keep=lambda value: False)["api_key"] == f"key-{n}"


def test_a_failed_resolution_is_not_remembered(home: Path) -> None:
    memo = ResolvedSettings(clock=lambda: 0.0)

    def failing() -> dict[str, Any]:
        raise RuntimeError("no provider configured")

    with pytest.raises(RuntimeError):
        memo.get("q", home, failing)
    assert memo.get("q", home, Resolver())["api_key"] == "key-1"


def test_the_stamp_tells_a_missing_file_from_an_empty_one(home: Path) -> None:
    missing = files_stamp(home)
    (home / "auth.json").write_text("")
    assert files_stamp(home) != missing and files_stamp(home)[2] == (0, (home / "auth.json").stat().st_mtime_ns)
