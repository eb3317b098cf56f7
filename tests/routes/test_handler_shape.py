"""Route handlers read as parse → submit → deliver: the admission machinery is never driven from routes/.

Issue 11: the held turn is released or cancelled by `delivery.py` and `submit.py` only (through `HeldTurn`),
keys are decided and reserved by `submit.py` only; a route that called these itself would bring back the
four diverging copies of the admission flow and the turns stranded by a failed head.
"""

from __future__ import annotations

import ast
from pathlib import Path

import hermes_api_plugin.routes as routes

FORBIDDEN = {"release", "cancel", "start", "reserve", "reserve_turn", "decide", "admit", "check_capacity", "serialised"}


def test_no_route_drives_admissions_or_held_turns() -> None:
    found: list[str] = []
    for path in sorted(Path(routes.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FORBIDDEN:
                found.append(f"{path.name}:{node.lineno} .{node.func.attr}(")
    assert found == []
