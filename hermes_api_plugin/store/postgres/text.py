"""How free text is held in a PostgreSQL `text` column (issue 20, defect 7): as a JSON string literal.

A PostgreSQL `text` (or `jsonb`) value cannot hold NUL, and free text may: a client's instructions, the agent's
reasoning (a model may emit NUL too). The columns that hold JSON already escape it (`\\u0000`); the two columns of
free text — `responses.instructions` and `messages.reasoning` — hold their value as a JSON string literal as well
(migration 0003 rewrote the rows stored before), so every value round-trips on both stores. SQLite keeps text with
NUL as it is: this is PostgreSQL's encoding only. Short strings (ids, names, titles) refuse NUL at parse time
(protocol/limits.py) and are stored as they are.
"""

from __future__ import annotations

import json


def text_out(value: str | None) -> str | None:
    """The column value of free text (None stays NULL)."""
    return None if value is None else json.dumps(value, ensure_ascii=False)


def text_in(value: str | None) -> str | None:
    """The free text of a column value written by `text_out`."""
    if value is None:
        return None
    text: str = json.loads(value)
    return text
