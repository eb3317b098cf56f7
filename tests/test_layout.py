"""The layout rules the package keeps (DESIGN.md §3, issues 11 and 21): one job per module, pure layers stay pure.

A module is split by meaning, not by count (issue 21, part 8): no line limit cuts a module, but one over
`LONG_MODULE` lines must say why in its docstring, on a line that starts "Long because" (for example
"Long because the whole table of Hermes names is declared here, in one place."). A declaration table may be long;
a module that is long because it holds two jobs should be two modules instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import PACKAGE

LONG_MODULE = 500  # lines; a module over this says why in its docstring
LONG_REASON = "Long because"
# Layers that are tested from values alone and that the OpenAPI document and other hosts build on.
PURE = ("core", "dialects", "protocol", "turns/journal.py", "turns/tool_display.py")
FACE = {"__init__.py", "__main__.py", "plugin.py", "hookspecs.py"}  # all the package root holds (DESIGN.md §3)


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


def _unexplained_length(source: str) -> int | None:
    """The line count of a module over LONG_MODULE lines whose docstring gives no "Long because" line, else None."""
    lines = len(source.splitlines())
    if lines <= LONG_MODULE:
        return None
    docstring = ast.get_docstring(ast.parse(source)) or ""
    if any(line.strip().startswith(LONG_REASON) for line in docstring.splitlines()):
        return None
    return lines


def test_a_long_module_says_why_it_is_long() -> None:
    unexplained = {
        str(p.relative_to(PACKAGE)): n
        for p in _modules()
        if (n := _unexplained_length(p.read_text(encoding="utf-8"))) is not None
    }
    assert unexplained == {}


def test_the_length_rule_reads_the_docstring() -> None:
    body = "x = 1\n" * LONG_MODULE
    assert _unexplained_length('"""Short enough."""\n' + "x = 1\n" * (LONG_MODULE - 1)) is None
    assert _unexplained_length('"""One job."""\n' + body) == LONG_MODULE + 1
    assert _unexplained_length('"""One job.\n\nLong because it is one table.\n"""\n' + body) is None
    # the reason must be in the docstring, not in a comment or a string elsewhere
    assert _unexplained_length('"""One job."""\n# Long because of reasons\n' + body) == LONG_MODULE + 2


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


def test_the_package_root_holds_only_the_plugins_face() -> None:
    assert {p.name for p in PACKAGE.glob("*.py")} == FACE


def test_every_pure_layer_exists() -> None:
    assert [p for p in PURE if not (PACKAGE / p).exists()] == []
