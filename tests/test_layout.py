"""The layout rules the package keeps (DESIGN.md §3, issue 11): one job per module, pure layers stay pure."""

from __future__ import annotations

import ast
from pathlib import Path

import hermes_api_plugin

PACKAGE = Path(hermes_api_plugin.__file__).parent
MAX_LINES = 400
# Layers that are tested from values alone and that the OpenAPI document and other hosts build on.
PURE = ("dialects", "protocol", "events.py", "turns/journal.py", "turns/tool_display.py")


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_no_module_is_over_400_lines() -> None:
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in _modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_pure_layers_never_import_aiohttp() -> None:
    pure = [p for p in _modules() if any(str(p.relative_to(PACKAGE)).startswith(prefix) for prefix in PURE)]
    assert len(pure) > 10
    assert [str(p.relative_to(PACKAGE)) for p in pure if "aiohttp" in _imports(p)] == []


def test_every_module_says_what_it_owns() -> None:
    missing = [
        str(p.relative_to(PACKAGE))
        for p in _modules()
        if p.stat().st_size and ast.get_docstring(ast.parse(p.read_text(encoding="utf-8"))) is None
    ]
    assert missing == []
