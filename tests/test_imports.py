"""No import cycles among the package's modules, counting imports inside functions (issue 21, part 4).

Parsed with `ast`, nothing imported: every `import` and `from … import` of every module under `hermes_api_plugin/`,
wherever it stands (module level, inside a function, under `if TYPE_CHECKING:`), relative imports resolved. An import
of a package module is an edge to that module; `from pkg import name` where `pkg.name` is a module is an edge to the
submodule (that is what it loads and binds), otherwise to `pkg`. Importing `a.b` also runs `a/__init__.py`, but that
is not counted as an edge: a package's `__init__` collecting its children would otherwise make every child that
imports a sibling part of a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import PACKAGE

ROOT = PACKAGE.name

# Imports that may close a cycle while a refactor is under way, each with the change that removes it: (importer,
# imported). The cycle test leaves these edges out, and fails when one no longer exists (then delete it here). None
# today: the last (turns.held <-> turns.registry) went when `Turn` moved to turns/turn.py.
ALLOWED_EDGES: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class Edge:
    """`importer` imports `imported` at `line`."""

    importer: str
    imported: str
    line: int

    def __str__(self) -> str:
        return f"{self.importer}:{self.line} -> {self.imported}"


def module_names(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, for its `__init__.py`)."""
    names: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _base(module: str, is_package: bool, level: int) -> str:
    """The package a relative import of `level` dots in `module` starts from."""
    parts = module.split(".")
    if not is_package:
        parts.pop()
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts)


def imports_of(module: str, source: str, known: Iterable[str], *, is_package: bool = False) -> list[Edge]:
    """The edges from `module` (whose text is `source`) to modules among `known`, in source order."""
    known = set(known)
    edges: list[Edge] = []

    def add(target: str, line: int) -> None:
        if target in known and target != module:
            edges.append(Edge(module, target, line))

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _base(module, is_package, node.level)
                source_module = f"{base}.{node.module}" if node.module else base
            else:
                source_module = node.module or ""
            for alias in node.names:
                submodule = f"{source_module}.{alias.name}"
                add(submodule if submodule in known else source_module, node.lineno)
    return sorted(edges, key=lambda edge: (edge.line, edge.imported))


def import_graph(modules: Mapping[str, Path]) -> dict[str, list[Edge]]:
    """Every module's edges to other modules of the package."""
    return {
        name: imports_of(name, path.read_text(encoding="utf-8"), modules, is_package=path.name == "__init__.py")
        for name, path in modules.items()
    }


def cycles(graph: Mapping[str, list[Edge]], leave_out: frozenset[tuple[str, str]] = frozenset()) -> list[list[Edge]]:
    """One cycle per strongly connected component of more than one module (Tarjan), as the edges that close it."""
    edges = {
        name: [edge for edge in out if (edge.importer, edge.imported) not in leave_out] for name, out in graph.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(start: str) -> None:
        # iterative Tarjan: the package's import chains are deeper than is comfortable for recursion
        work = [(start, 0)]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, position = work[-1]
            out = edges.get(node, [])
            if position < len(out):
                work[-1] = (node, position + 1)
                target = out[position].imported
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)

    for name in sorted(edges):
        if name not in index:
            visit(name)
    return [_one_cycle(component, edges) for component in sorted(components, key=min)]


def _one_cycle(component: set[str], edges: Mapping[str, list[Edge]]) -> list[Edge]:
    """A shortest cycle through the component's first module (breadth-first search back to it)."""
    start = min(component)
    came_by: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for edge in edges[node]:
                if edge.imported not in component:
                    continue
                if edge.imported == start:
                    path = [edge]
                    while path[0].importer != start:
                        path.insert(0, came_by[path[0].importer])
                    return path
                if edge.imported not in came_by:
                    came_by[edge.imported] = edge
                    following.append(edge.imported)
        frontier = following
    raise AssertionError(f"not a cycle: {sorted(component)}")


def _report(found: list[list[Edge]]) -> str:
    return "\n".join("cycle: " + "  ".join(str(edge) for edge in cycle) for cycle in found)


def test_no_import_cycles_in_the_package() -> None:
    modules = module_names()
    assert len(modules) > 100 and f"{ROOT}.hermes.compat" in modules  # the whole package, packages included
    found = cycles(import_graph(modules), ALLOWED_EDGES)
    assert found == [], "import cycles (function-level imports count too):\n" + _report(found)


def test_every_allowed_edge_still_exists() -> None:
    """An allow-list entry whose import is gone would hide the next cycle through it: delete it."""
    graph = import_graph(module_names())
    present = {(edge.importer, edge.imported) for out in graph.values() for edge in out}
    assert sorted(ALLOWED_EDGES - present) == []


def test_the_graph_sees_every_way_to_import(tmp_path: Path) -> None:
    """The parser itself: function-level, relative (one and two dots), `from pkg import submodule`, a package's
    `__init__`, and a name that is not a module (an edge to the module defining it)."""
    files = {
        "pkg/__init__.py": "from . import a\n",
        "pkg/a.py": "def f():\n    from .sub import b\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/b.py": "from ..c import value\nimport pkg.d\n",
        "pkg/c.py": "value = 1\nfrom pkg.sub import thing\n",
        "pkg/d.py": "def g():\n    import pkg.a\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    modules = module_names(tmp_path / "pkg")
    graph = import_graph(modules)
    assert {name: [e.imported for e in out] for name, out in graph.items()} == {
        "pkg": ["pkg.a"],
        "pkg.a": ["pkg.sub.b"],
        "pkg.c": ["pkg.sub"],
        "pkg.d": ["pkg.a"],
        "pkg.sub": [],
        "pkg.sub.b": ["pkg.c", "pkg.d"],
    }
    found = cycles(graph)
    assert [[str(edge) for edge in cycle] for cycle in found] == [
        ["pkg.a:2 -> pkg.sub.b", "pkg.sub.b:2 -> pkg.d", "pkg.d:2 -> pkg.a"]
    ]
    assert cycles(graph, frozenset({("pkg.d", "pkg.a")})) == []


# The layers of DESIGN.md §3, lowest first: a module imports only from its own layer or a lower one. The longest
# matching prefix decides; `hermes` is split because its compat boundary and session store serve the runtimes while
# its adapter boots the whole app inside `hermes gateway`; `http` because the SSE writer, delivery and the JSON body
# serve the routes while the application object mounts them.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("config", "telemetry"),
    ("protocol", "dialects", "store", "hermes.compat"),
    ("hermes.sessions", "hermes.approvals", "hermes.clarify", "hermes.client_tools", "hermes.jobs", "hermes.host"),
    ("runtimes",),
    ("turns",),
    ("cluster",),
    ("submission",),
    ("surfaces",),
    ("http",),
    ("routes",),
    ("http.app",),
    ("hookspecs",),
    ("gateway", "hermes", "plugin", "__main__", ""),
)


def layer_of(module: str) -> int:
    """The index in LAYERS of a module's layer (its dotted name below the package root)."""
    inner = module.removeprefix(ROOT).removeprefix(".")
    best, rank = -1, len(LAYERS) - 1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (inner == prefix or inner.startswith(prefix + ".") or not prefix) and len(prefix) > best:
                best, rank = len(prefix), index
    return rank


def upward_imports(graph: Mapping[str, list[Edge]]) -> list[Edge]:
    """Every import of a module in a higher layer than the importer's (the package root's `__init__` aside: importing
    `hermes_api_plugin` for `__version__` is an import of the package's face, not of a layer)."""
    return [
        e
        for edges in graph.values()
        for e in edges
        if e.imported != ROOT and layer_of(e.imported) > layer_of(e.importer)
    ]


def test_imports_point_down_the_layers() -> None:
    graph = import_graph(module_names())
    assert [str(e) for e in upward_imports(graph)] == []


def test_the_layer_table_places_every_module_and_sees_an_upward_import() -> None:
    modules = module_names()
    assert layer_of(f"{ROOT}.core.events") == 0
    assert (
        layer_of(f"{ROOT}.hermes.compat.agent")
        < layer_of(f"{ROOT}.runtimes.hermes")
        < layer_of(f"{ROOT}.hermes.bridge")
    )
    assert layer_of(f"{ROOT}.http.sse") < layer_of(f"{ROOT}.routes.chat") < layer_of(f"{ROOT}.http.app")
    assert {layer_of(m) for m in modules} - set(range(len(LAYERS))) == set()
    core_imports_routes = {f"{ROOT}.core.events": [Edge(f"{ROOT}.core.events", f"{ROOT}.routes.chat", 1)]}
    assert upward_imports(core_imports_routes) == core_imports_routes[f"{ROOT}.core.events"]
