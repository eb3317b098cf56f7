"""The plain copy of hermes-agent's cached config (`hermes/compat/config_copies.py`, issue 25).

`load_config()` hands every caller a deep copy of the cached config.yaml, because callers change what they get. What
must hold with the stand-in: the copy is the one `copy.deepcopy` makes — equal, new containers all the way down, a
container reached twice shared in the copy as in the original, types it does not know copied as `copy.deepcopy`
copies them — so changing a loaded config never reaches the cache; and a `hermes_cli.config` whose `copy` is not the
copy module is left alone, with one warning.
"""

from __future__ import annotations

import copy
import logging
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest

from hermes_api_plugin.hermes import compat
from hermes_api_plugin.hermes.compat import _core, config_copies
from hermes_api_plugin.hermes.compat._core import Installation
from hermes_api_plugin.hermes.compat.config_copies import plain_deepcopy

CONFIG_YAML = """\
model: {default: m, base_url: "http://127.0.0.1:1/v1"}
x_rules: &rules {deny: ["rm -rf /"]}
x_rules_alias: *rules
"""


class Marker:
    """A type neither copier knows: `copy.deepcopy` copies its __dict__."""

    def __init__(self, items: list[int]) -> None:
        self.items = items

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Marker) and other.items == self.items


def _containers(value: Any) -> list[Any]:
    """Every dict, list, tuple, set and Marker reachable from `value` (depth first, each occurrence)."""
    found = [value] if isinstance(value, (dict, list, tuple, set, Marker)) else []
    if isinstance(value, dict):
        children = [*value.keys(), *value.values()]
    elif isinstance(value, (list, tuple, set)):
        children = list(value)
    elif isinstance(value, Marker):
        children = [value.items]
    else:
        children = []
    for child in children:
        found += _containers(child)
    return found


def _tree() -> dict[str, Any]:
    shared = {"deny": ["rm -rf /"], "level": 3}
    return {
        "model": {"default": "m", "base_url": "http://127.0.0.1:1/v1", "context_length": 131072, "temperature": 0.2},
        "flags": [True, False, None, 1.5, b"raw", ""],
        "approvals": shared,
        "approvals_alias": shared,  # a YAML alias: one object reached twice
        "nested": [[{"a": [1, 2, [3]]}], []],
        "numbers": {1: "one", 2.5: "two and a half", None: "none", ("k", 1): "tuple key"},
        "tuple": ([1, 2], "x"),
        "set": {1, 2, 3},
        "ordered": OrderedDict(a=[1], b={"c": 2}),
        "marker": Marker([7, 8]),
    }


def test_the_plain_copy_is_the_copy_deepcopy_makes() -> None:
    original = _tree()
    copied = plain_deepcopy(original)
    expected = copy.deepcopy(original)
    assert copied == expected == original
    assert type(copied["ordered"]) is OrderedDict and type(copied["numbers"]) is dict
    # the alias is one object in the copy too, and not the original's
    assert copied["approvals"] is copied["approvals_alias"] and copied["approvals"] is not original["approvals"]
    # no container of the copy is one of the original's (immutable tuples of immutables may be: deepcopy's rule)
    originals = {id(c) for c in _containers(original)}
    mutable = [c for c in _containers(copied) if not isinstance(c, tuple)]
    assert mutable and not [c for c in mutable if id(c) in originals]
    copied["approvals"]["deny"].append("shutdown")
    copied["nested"][0][0]["a"][2].append(4)
    copied["marker"].items.append(9)
    assert original == _tree() and copied["approvals_alias"]["deny"] == ["rm -rf /", "shutdown"]


def test_a_memo_goes_to_copy_deepcopy() -> None:
    stand_in = config_copies._PlainCopy()
    value = {"a": [1]}
    memo: dict[int, Any] = {id(value): "already copied"}
    assert stand_in.deepcopy(value, memo) == "already copied"
    assert stand_in.copy is copy.copy and stand_in.Error is copy.Error  # the rest is the real module


def test_a_loaded_config_is_a_copy_the_cache_never_sees_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config.yaml").write_text(CONFIG_YAML, encoding="utf-8")
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    compat.config_copies.copy_config_plainly()
    assert compat.config_copies.config_copies_plain()
    import hermes_cli.config as hermes_config

    assert isinstance(hermes_config.copy, config_copies._PlainCopy)
    cached = hermes_config.load_config_readonly()
    assert cached["model"]["default"] == "m" and cached["x_rules"]["deny"] == ["rm -rf /"]
    loaded = hermes_config.load_config()
    assert loaded == cached and loaded is not cached and loaded["model"] is not cached["model"]
    # the YAML alias, shared in the copy exactly when it is in the cache (copy.deepcopy's rule)
    assert (loaded["x_rules"] is loaded["x_rules_alias"]) is (cached["x_rules"] is cached["x_rules_alias"])
    before = copy.deepcopy(cached)
    loaded["model"]["default"] = "changed by a caller"
    loaded["x_rules"]["deny"].append("shutdown")
    assert hermes_config.load_config_readonly() == before
    assert hermes_config.load_config() == before


def test_a_config_module_with_another_copy_is_left_alone(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import hermes_cli.config as hermes_config

    theirs = object()
    monkeypatch.setattr(hermes_config, "copy", theirs)
    monkeypatch.setattr(config_copies, "_installation", Installation())
    monkeypatch.setattr(_core, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="hermes_api_plugin"):
        config_copies.copy_config_plainly()
        config_copies.copy_config_plainly()
    assert hermes_config.copy is theirs and not config_copies.config_copies_plain()
    warnings = [r.getMessage() for r in caplog.records if "hermes_cli.config.copy" in r.getMessage()]
    assert len(warnings) == 1 and "as hermes-agent ships" in warnings[0]
