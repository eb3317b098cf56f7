"""The layout rules the package keeps (DESIGN.md §3, issues 11 and 21): one job per module, pure layers stay pure.

The test suite keeps one rule of its own: no module of it imports a test module (a test module is what pytest
collects, not a library; importing one ties two test files together and can collect its tests twice). What tests
share lives in tests/helpers.py or a `support.py` next to them, shared fixtures in a conftest.py.

A module is split by meaning, not by count (issue 21, part 8): no line limit cuts a module, but one over
`LONG_MODULE` lines must say why in its docstring, on a line that starts "Long because" (for example
"Long because the whole table of Hermes names is declared here, in one place."). A declaration table may be long;
a module that is long because it holds two jobs should be two modules instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import PACKAGE, ROOT

LONG_MODULE = 500  # lines; a module over this says why in its docstring
LONG_REASON = "Long because"
# Layers that are tested from values alone and that the OpenAPI document and other hosts build on.
PURE = ("core", "dialects", "protocol", "turns/journal.py", "turns/tool_display.py")
FACE = {"__init__.py", "__main__.py", "plugin.py", "hookspecs.py"}  # all the package root holds (DESIGN.md §3)
TESTS = ROOT / "tests"
# (importing test module, imported test module) pairs that are meant. The Hermes suite runs the SessionStore contract
# tests on Hermes' SessionDB by importing them: the same contract, collected again on another backend.
TEST_IMPORTS_ON_PURPOSE = {
    ("tests.hermes.test_session_store_contract", "tests.store.test_contract_sessions"),
}


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


def _suite_modules() -> list[Path]:
    """Every module of the test suite: test modules, support modules, conftest.py files, packages."""
    # not the clients' installed packages (tests/clients/node/node_modules, the Python 3.13 venv tests/clients/.venv313)
    return sorted(
        p
        for p in TESTS.rglob("*.py")
        if not any(part == "node_modules" or part.startswith(".") for part in p.relative_to(TESTS).parts)
    )


def _dotted(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_test_modules(module: str, source: str, *, is_package: bool = False) -> set[str]:
    """The `test_*` modules of the tests package that `source` (the module named `module`) imports, at any depth
    (function-level imports count), absolute or relative."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from tests.x.test_y import name` imports from a test module; `from tests.x import test_y` imports one
            is_test_module = base.rpartition(".")[2].startswith("test_")
            targets = [base] if is_test_module else [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(t for t in targets if t.split(".")[0] == "tests" and t.rpartition(".")[2].startswith("test_"))
    return found


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


def test_no_test_module_imports_another_test_module() -> None:
    """Nor does a support module, a conftest.py or a helper: what tests share is never in a test module."""
    imports = {
        (_dotted(p), imported)
        for p in _suite_modules()
        for imported in imported_test_modules(
            _dotted(p), p.read_text(encoding="utf-8"), is_package=p.name == "__init__.py"
        )
    }
    assert len(_suite_modules()) > 100
    assert imports - TEST_IMPORTS_ON_PURPOSE == set()
    # an exception no longer needed goes from the list
    assert imports >= TEST_IMPORTS_ON_PURPOSE


def test_the_test_import_rule_reads_every_kind_of_import() -> None:
    module = "tests.routes.test_a"
    assert imported_test_modules(module, "from .test_b import helper\n") == {"tests.routes.test_b"}
    assert imported_test_modules(module, "from . import test_b\n") == {"tests.routes.test_b"}
    assert imported_test_modules(module, "from ..store.test_c import x\n") == {"tests.store.test_c"}
    assert imported_test_modules(module, "import tests.store.test_c as c\n") == {"tests.store.test_c"}
    assert imported_test_modules(module, "from tests.store.test_c import test_d\n") == {"tests.store.test_c"}
    assert imported_test_modules(module, "def f():\n    from tests.store import test_c\n") == {"tests.store.test_c"}
    # support modules, conftest and other packages' test_* modules are not test modules of this suite
    assert (
        imported_test_modules(module, "from .support import call\nfrom aiohttp.test_utils import TestClient\n") == set()
    )
    assert (
        imported_test_modules(module, "from .conftest import HomeFactory\nfrom tests.helpers import fetch\n") == set()
    )
