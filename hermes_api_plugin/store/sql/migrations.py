"""Schema migration files, as both backends keep them: numbered `NNNN_name.sql` files in the backend's
`migrations/` folder (`sqlite/migrations/`, `postgres/migrations/`, shipped in the wheel as package data), applied in
order and recorded in `schema_migrations` by the backend's `migrate.py`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path

_FILE_NAME = re.compile(r"^(\d{4})_[A-Za-z0-9_]+\.sql$")


@dataclass(frozen=True)
class Migration:
    """One migration file: its version (the number it starts with), file name and SQL text."""

    version: int
    name: str
    sql: str


def load_migrations(directory: Traversable | Path) -> list[Migration]:
    """Every `NNNN_name.sql` in `directory`, ascending; two files of one number are refused."""
    found: dict[int, Migration] = {}
    for entry in directory.iterdir():
        match = _FILE_NAME.match(entry.name)
        if match is None:
            continue
        version = int(match.group(1))
        if version in found:
            raise ValueError(f"two migrations numbered {version}: {found[version].name}, {entry.name}")
        found[version] = Migration(version, entry.name, entry.read_text(encoding="utf-8"))
    return [found[v] for v in sorted(found)]
