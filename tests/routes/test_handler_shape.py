"""Route handlers read as parse → submit → deliver: the admission machinery is never driven from routes/, and
nothing of the request is parsed once its turn may be admitted.

Issue 11: the held turn is released or cancelled by `delivery.py` and `submit.py` only (through `HeldTurn`),
keys are decided and reserved by `submit.py` only; a route that called these itself would bring back the
four diverging copies of the admission flow and the turns stranded by a failed head.

Issue 20 (defect 1) and 21 (part 3): a header read after `submit` — a `Last-Event-ID` parsed in the session stream's
delivery — answered 500 after its turn was admitted, and the turn held its slot until a restart. Every header and
query value is parsed before `submit`: no handler, and nothing it calls in routes/ or delivery.py after `submit`,
reads `request.headers` or `request.query`; the surfaces (surfaces/) never see the request at all, only the frozen
value it was parsed into.

Issue 21 (parts 2 and 3): the four work-creating handlers read parse → submit → deliver in about ten lines each; what
a surface's turn is made of lives in its service (surfaces/), not in the handler.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import hermes_api_plugin.http.delivery as delivery
import hermes_api_plugin.routes as routes
import hermes_api_plugin.surfaces as surfaces

Function = ast.FunctionDef | ast.AsyncFunctionDef
REQUEST_PARTS = ("headers", "query")

FORBIDDEN = {"release", "cancel", "start", "reserve", "reserve_turn", "decide", "admit", "check_capacity", "serialised"}


def test_no_route_drives_admissions_or_held_turns() -> None:
    found: list[str] = []
    for path in sorted(Path(routes.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FORBIDDEN:
                found.append(f"{path.name}:{node.lineno} .{node.func.attr}(")
    assert found == []


def _reads_request(fn: Function) -> list[int]:
    """Lines where `fn` reads `request.headers`/`.query` (also through an object's `.request`)."""
    return [
        node.lineno
        for node in ast.walk(fn)
        if isinstance(node, ast.Attribute)
        and node.attr in REQUEST_PARTS
        and (
            (isinstance(node.value, ast.Name) and node.value.id == "request")
            or (isinstance(node.value, ast.Attribute) and node.value.attr == "request")
        )
    ]


def _calls(fn: Function) -> Iterator[tuple[str, int]]:
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name is not None:
                yield name, node.lineno


def late_request_reads(sources: dict[str, str]) -> list[str]:
    """Reads of the request's headers or query after a `.submit(` call, in the function that submits or in any
    function of `sources` it calls after that line (by name, transitively: an over-approximation on purpose)."""
    functions: dict[str, list[Function]] = {}
    for source in sources.values():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions.setdefault(node.name, []).append(node)

    def reads(name: str, seen: frozenset[str]) -> bool:
        return name not in seen and any(
            _reads_request(fn) or any(reads(callee, seen | {name}) for callee, _ in _calls(fn))
            for fn in functions.get(name, [])
        )

    found: list[str] = []
    for name, defined in functions.items():
        for fn in defined:
            submits = [line for callee, line in _calls(fn) if callee == "submit"]
            if not submits:
                continue
            after = min(submits)
            found += [f"{name}:{line} reads the request" for line in _reads_request(fn) if line > after]
            found += [
                f"{name}:{line} calls {callee}, which reads the request"
                for callee, line in _calls(fn)
                if line > after and reads(callee, frozenset())
            ]
    return found


def _package_files(package: object) -> list[Path]:
    return sorted(Path(str(getattr(package, "__file__", ""))).parent.glob("*.py"))


def test_no_handler_reads_headers_or_query_after_submitting() -> None:
    paths = [*_package_files(routes), Path(delivery.__file__), *_package_files(surfaces)]
    sources = {path.name: path.read_text(encoding="utf-8") for path in paths}
    assert late_request_reads(sources) == []


def test_the_check_finds_a_header_read_in_a_step_after_submit() -> None:
    """The shape of the defect issue 20 found: the session stream's delivery parsed `Last-Event-ID` after submit."""
    handler = """
async def session_chat(request):
    outcome = await submitter.submit(slot, plan)
    return await deliver_it(request, outcome)

async def deliver_it(request, outcome):
    after = last_event_id(request.headers)
"""
    assert late_request_reads({"sessions.py": handler}) == ["session_chat:4 calls deliver_it, which reads the request"]
    parsed_first = handler.replace("    outcome = await", "    after = request.headers\n    outcome = await")
    parsed_first = parsed_first.replace("    after = last_event_id(request.headers)", "    return after")
    assert late_request_reads({"sessions.py": parsed_first}) == []


def test_surfaces_never_see_the_request() -> None:
    """A surface reads the frozen value its request was parsed into (`Posted`), never aiohttp's request: nothing it
    does after `submit` can read a header."""
    found = [
        f"{path.name}:{node.lineno}"
        for path in _package_files(surfaces)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Import | ast.ImportFrom)
        and any(name.split(".")[0] == "aiohttp" for name in _imported(node))
    ]
    assert found == []


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""] if node.level == 0 else []
    return [alias.name for alias in node.names]


# The work-creating POSTs (issue 21, part 3): module of routes/ → its handler (session chat's JSON and stream
# handlers are one line each around `_session_chat`).
WORK_HANDLERS = {
    "chat.py": "chat_completions",
    "responses.py": "create_response",
    "runs.py": "create_run",
    "sessions.py": "_session_chat",
}
MAX_HANDLER_LINES = 12  # "about ten": parse, build the surface, submit, a refusal, deliver
PARSE_STEPS = frozenset({"posted", "_posted_chat"})  # the body and every header, into a frozen `Posted`
DELIVERY_STEPS = frozenset({"deliver_outcome", "start_detached"})  # the journal delivered; runs: 202, started at once


def handler_shape(fn: Function) -> list[str]:
    """What keeps a work-creating handler from reading as parse → submit → deliver in about ten lines."""
    found: list[str] = []
    lines = (fn.end_lineno or fn.lineno) - fn.body[0].lineno + 1
    if lines > MAX_HANDLER_LINES:
        found.append(f"{fn.name}: {lines} lines (at most {MAX_HANDLER_LINES})")
    calls = list(_calls(fn))
    submits = [line for name, line in calls if name == "submit"]
    if len(submits) != 1:
        return [*found, f"{fn.name}: {len(submits)} submit calls (one)"]
    if not any(name in PARSE_STEPS and line < submits[0] for name, line in calls):
        found.append(f"{fn.name}: nothing parsed before submit")
    if not any(name in DELIVERY_STEPS and line > submits[0] for name, line in calls):
        found.append(f"{fn.name}: nothing delivered after submit")
    return found


def _handler(source: str, name: str) -> Function:
    return next(
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name
    )


def test_work_creating_handlers_read_parse_submit_deliver() -> None:
    folder = Path(routes.__file__).parent
    found = [
        problem
        for module, name in WORK_HANDLERS.items()
        for problem in handler_shape(_handler((folder / module).read_text(encoding="utf-8"), name))
    ]
    assert found == []


def test_the_shape_check_finds_a_handler_that_plans_its_turn_itself() -> None:
    """The shape these handlers had before their services: the plan built inline, in the handler, after parsing."""
    inline = "async def create_run(request):\n    run = await posted(request, parse)\n" + "    step()\n" * 12
    inline += "    outcome = await submitter.submit(plan)\n    return await deliver_outcome(request, outcome, run)\n"
    assert handler_shape(_handler(inline, "create_run")) == ["create_run: 15 lines (at most 12)"]
    unparsed = "async def create_run(request):\n    outcome = await submitter.submit(plan)\n    return outcome\n"
    assert handler_shape(_handler(unparsed, "create_run")) == [
        "create_run: nothing parsed before submit",
        "create_run: nothing delivered after submit",
    ]
