"""Numbers as the wire writes them: ASCII digits only, and never more of them than the field can mean.

Pure: no aiohttp. `str.isdigit()` and `str.isdecimal()` accept Unicode digits — `int()` refuses `²` and reads
`٣` or `１` as a number the client never wrote in ASCII — and `int()` of more than 4 300 digits raises: a check
with either let a header through to a 500 after its turn was admitted (issue 20, defect 1). Every number read
from a header, a query value, a path or a store notification goes through `ascii_int` instead.
"""

from __future__ import annotations

# Record ids, offsets and byte counts fit in 18 digits (under 2**63); more is never a value this server issued.
MAX_DIGITS = 18


def ascii_int(text: str, max_digits: int = MAX_DIGITS) -> int | None:
    """The non-negative integer `text` spells in ASCII digits `0-9` — no sign, no space, no other script — or
    None: anything else, or more than `max_digits` digits (checked before `int()` sees the text)."""
    if not 0 < len(text) <= max_digits or not text.isascii() or not text.isdigit():
        return None  # on ASCII text isdigit() is exactly 0-9
    return int(text)
