"""README.md's client compatibility table is exactly what tests/clients/compat.py renders — versions from the
pins the suite installs, and the cells each client's tests assert against (`ROWS[...]`)."""

from __future__ import annotations

import json
from importlib.metadata import version

from .compat import NODE_DIR, ROWS, npm_pin, pyproject_pin, readme_table, render_table


def test_readme_table_matches_the_suite() -> None:
    assert readme_table() == render_table(), "README.md is stale: paste `python -m tests.clients.compat`"


def test_openai_python_pin_is_the_installed_version() -> None:
    assert version("openai") == pyproject_pin("openai")


def test_node_pins_are_exact_and_locked() -> None:
    """package.json pins exact versions and package-lock.json (what `npm ci` installs) locks the same ones."""
    manifest = json.loads((NODE_DIR / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((NODE_DIR / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"][""]["dependencies"] == manifest["dependencies"]
    for name in manifest["dependencies"]:
        assert lock["packages"][f"node_modules/{name}"]["version"] == npm_pin(name)
    for row in ROWS.values():
        for ecosystem, name in row.packages:
            if ecosystem == "npm":
                assert name in manifest["dependencies"]
