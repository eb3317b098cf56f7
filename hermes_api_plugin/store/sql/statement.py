"""One SQL statement written once for both backends: `sql()` takes the text in SQLite's placeholder style (`?`
positional, `:name` named) and makes PostgreSQL's (psycopg's `%s`, `%(name)s`, a literal `%` doubled) once, when the
statement is defined — never per call, so a statement costs the same as a literal in either backend.

`insert()` and `upsert()` spell the INSERT of a row by column name, the same text on both (SQLite has taken
`ON CONFLICT (…) DO UPDATE SET … = excluded.…` since 3.24).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# A quoted literal (left alone but for `%`), a `?`, a `:name` (not the second colon of a `::cast`), or a bare `%`.
_TOKEN = re.compile(r"'(?:[^']|'')*'|\?|(?<![:\w]):([A-Za-z_]\w*)|%")


@dataclass(frozen=True)
class Statement:
    """A statement in each backend's placeholder style."""

    sqlite: str
    postgres: str


def pyformat(text: str) -> str:
    """`text` with SQLite's placeholders as psycopg's, and every `%` (in a literal too: psycopg reads them all
    when parameters are passed) doubled."""

    def swap(match: re.Match[str]) -> str:
        token = match.group(0)
        if token.startswith("'"):
            return token.replace("%", "%%")
        if token == "?":
            return "%s"
        if token == "%":
            return "%%"
        return f"%({match.group(1)})s"

    return _TOKEN.sub(swap, text)


def sql(text: str) -> Statement:
    """The statement `text` (SQLite's style) for both backends."""
    return Statement(text, pyformat(text))


def insert(table: str, columns: Sequence[str], verb: str = "INSERT") -> str:
    """`INSERT INTO table (cols) VALUES (:cols)`: a row by column name (`verb`: SQLite's `INSERT OR REPLACE`)."""
    return f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({', '.join(':' + c for c in columns)})"


def upsert(table: str, columns: Sequence[str], key: Sequence[str]) -> str:
    """`insert()` that overwrites every other column of the row holding `key`."""
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in key)
    return f"{insert(table, columns)} ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}"
