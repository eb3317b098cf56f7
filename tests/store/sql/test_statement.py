"""One statement text for both backends: the placeholder adapter, and no SQL statement written twice in store/."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import hermes_api_plugin.store
from hermes_api_plugin.store.sql import sessions, statements
from hermes_api_plugin.store.sql.statement import Statement, pyformat, sql

STORE = Path(hermes_api_plugin.store.__file__).parent
_VERBS = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"%\(\w+\)s|%s|(?<![:\w]):\w+|\?")


def test_placeholders_become_psycopg_ones_and_literals_keep_their_text() -> None:
    assert pyformat("SELECT a FROM t WHERE b = ? AND c = :c") == "SELECT a FROM t WHERE b = %s AND c = %(c)s"
    assert (
        pyformat("SELECT x::text[] FROM t WHERE n LIKE '%a?:b%'") == "SELECT x::text[] FROM t WHERE n LIKE '%%a?:b%%'"
    )
    assert pyformat("SELECT 'it''s :x' || :y") == "SELECT 'it''s :x' || %(y)s"


def test_a_statement_is_adapted_once_when_defined() -> None:
    statement = sql("DELETE FROM leases WHERE owner = ?")
    assert statement == Statement("DELETE FROM leases WHERE owner = ?", "DELETE FROM leases WHERE owner = %s")


def test_every_shared_statement_has_as_many_placeholders_in_each_style() -> None:
    shared = [v for module in (statements, sessions) for v in vars(module).values() if isinstance(v, Statement)]
    shared += [v for v in sessions.SESSION_ASSIGNMENTS.values()] + list(sessions.MESSAGE_PAGES.values())
    assert len(shared) > 40
    for statement in shared:
        unquoted = re.sub(r"'(?:[^']|'')*'", "''", statement.postgres)
        assert "?" not in unquoted and not re.search(r"(?<![:\w]):\w", unquoted), statement.postgres
        assert len(_PLACEHOLDER.findall(re.sub(r"'(?:[^']|'')*'", "''", statement.sqlite))) == len(
            re.findall(r"%\(\w+\)s|%s", unquoted)
        ), statement.sqlite


def sql_literals(path: Path) -> list[tuple[str, int]]:
    """Every string literal (an f-string with `{}` for its fields) that starts like a statement, and its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inside_fstrings = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inside_fstrings:
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(p.value if isinstance(p, ast.Constant) else "{}" for p in node.values)
        else:
            continue
        if _VERBS.match(text):
            found.append((text, node.lineno))
    return found


def normalised(text: str) -> str:
    """The statement as both backends would say it: one placeholder, one space, one case, `%%` as `%`."""
    text = _PLACEHOLDER.sub("?", text.replace("%%", "%"))
    text = re.sub(r"\s+", " ", text).strip().lower()
    return re.sub(r"\s*([(),=])\s*", r"\1", text)


def test_no_sql_statement_is_written_twice_in_the_store() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(STORE.rglob("*.py")):
        for text, line in sql_literals(path):
            where[normalised(text)].append(f"{path.relative_to(STORE)}:{line}")
    assert len(where) > 40  # the collector sees the statements
    twice = {text: places for text, places in where.items() if len(places) > 1}
    assert twice == {}
