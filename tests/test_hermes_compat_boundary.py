"""Only the modules of `hermes_api_plugin/hermes/compat/` touch hermes-agent's private names (issues 11 and 21).

Parsed with `ast`, no hermes-agent needed: outside compat no module of the package may import an underscore name
(or module) from a hermes-agent top-level module, reach an underscore attribute through a name it imported from
hermes-agent (`GatewayRunner._load_fallback_model`), or spell one of the private names compat declares
(`agent.context_compressor._previous_summary`, `getattr(x, "_mark_connected")`): those go through compat, where
each is declared, checked against the installed hermes-agent (tests/hermes/test_compat.py) and has its fallback.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

from hermes_api_plugin.hermes import compat
from hermes_api_plugin.hermes.compat import HermesName

# the boundary: the folder, whatever modules it holds
COMPAT = Path(compat.__file__).resolve().parent
PACKAGE = COMPAT.parents[1]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def declared_private_names() -> set[str]:
    names: set[str] = set()
    for declared in compat.HERMES_NAMES:
        names.update(part for part in (*declared.path.split("."), *declared.attrs, *declared.hooks) if _private(part))
    return names


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def violations(source: str, label: str) -> list[str]:
    tree = ast.parse(source, filename=label)
    hermes = compat.HERMES_TOP_LEVEL_MODULES
    declared = declared_private_names()
    imported: set[str] = set()  # local names bound to hermes-agent modules or objects
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] not in hermes:
                continue
            imported.update(alias.asname or alias.name for alias in node.names)
            bad = [p for p in node.module.split(".") if _private(p)] + [a.name for a in node.names if _private(a.name)]
            if bad:
                found.append(f"{label}:{node.lineno}: from {node.module} import {', '.join(bad)}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] not in hermes:
                    continue
                imported.add(alias.asname or parts[0])
                if any(_private(p) for p in parts):
                    found.append(f"{label}:{node.lineno}: import {alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            root = _root(node)
            if node.attr in declared or (isinstance(root, ast.Name) and root.id in imported):
                found.append(f"{label}:{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in declared:
            found.append(f"{label}:{node.lineno}: {node.value!r}")
        elif isinstance(node, ast.Name) and node.id in declared:
            found.append(f"{label}:{node.lineno}: {node.id}")
    return found


def test_no_module_but_compat_touches_hermes_agent_private_names() -> None:
    modules = [path for path in sorted(PACKAGE.rglob("*.py")) if not path.resolve().is_relative_to(COMPAT)]
    assert len(modules) > 20 and not any(path.name.startswith("compat") for path in modules)
    found = [
        v
        for path in modules
        for v in violations(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent)))
    ]
    assert found == [], "hermes-agent private names outside hermes/compat/ (add a compat function):\n" + "\n".join(
        found
    )


def test_the_check_catches_each_way_in() -> None:
    """The checker itself: each way of reaching a private hermes-agent name is reported, public ones are not."""
    cases = {
        "from gateway.run import _resolve_runtime_agent_kwargs": 1,
        "from gateway._private import thing": 1,
        "import gateway._private": 1,
        "from gateway.run import GatewayRunner\nGatewayRunner._load_fallback_model()": 1,
        "import gateway.run\ngateway.run._gateway_runner_ref()": 1,
        "summary = agent.context_compressor._previous_summary": 1,
        "getattr(adapter, '_mark_connected')()": 1,
        "from gateway.config import Platform\nPlatform.API_SERVER": 0,
        "from ..gateway.server import _private_helper_of_ours": 0,  # the plugin's own gateway package
        "self._registered = True": 0,
    }
    for source, expected in cases.items():
        assert len(violations(source, "case")) == expected, (source, violations(source, "case"))


def _compat_modules() -> list[str]:
    """Every module of the compat folder, by its dotted name (found on disk, not listed here)."""
    return [f"{compat.__name__}.{info.name}" for info in pkgutil.iter_modules([str(COMPAT)])]


def test_the_package_collects_every_declaration_of_its_folder() -> None:
    """A name declared in any module of hermes/compat/ is in HERMES_NAMES, so tests/hermes/test_compat.py checks it
    against the installed hermes-agent: a new feature module cannot be left out of the version check."""
    modules = _compat_modules()
    assert len(modules) >= 8
    declared = {
        value
        for module in modules
        for value in vars(importlib.import_module(module)).values()
        if isinstance(value, HermesName)
    }
    assert declared - set(compat.HERMES_NAMES) == set()
    assert len(declared) == len(compat.HERMES_NAMES) == len({name.qualname for name in compat.HERMES_NAMES})


def test_the_core_imports_none_of_its_siblings() -> None:
    """`_core.py` holds the declaration and the call/fallback machinery; every feature module builds on it, never
    the other way round (function-level imports included)."""
    tree = ast.parse((COMPAT / "_core.py").read_text(encoding="utf-8"))
    siblings = {name.rsplit(".", 1)[1] for name in _compat_modules()}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            found += [f"from {'.' * node.level}{node.module or ''} import {a.name}" for a in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(compat.__name__):
            found.append(f"from {node.module} import ...")
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith(compat.__name__) or a.name in siblings]
    assert found == []
