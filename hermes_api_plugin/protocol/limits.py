"""The length limits of the short strings a request carries (issue 20, defect 5), one constant per kind, and the
schema nodes that enforce them — so `/openapi.json` states each limit as `maxLength` (WIRE.md §8.4).

A short string is one the gateway echoes, stores in an indexed column or looks up by: a model or provider name, an
id, a conversation name, a title, a metadata key. Without a limit a 1 MB `model` is echoed in every stream chunk
and stored with the turn. The limits are far past what real clients send (OpenAI and Open WebUI model ids are under
100 characters, OpenAI's ids under 100, its metadata limits are 16 pairs, 64-character keys, 512-character values).

Short strings are identifiers, not text: they also refuse NUL (issue 20, defect 7), which PostgreSQL cannot store in
a `text` column and which no identifier needs — the same 400 on every store, at parse time. Free text (message
content, instructions, tool output) has no limit of its own (the body limit, WIRE.md §1.8) and may hold NUL.
"""

from __future__ import annotations

from .schema import Str, StrMap

NAME_MAX = 256  # model, provider, tool and skill names, list filters (`source`), approval choices, schedules
ID_MAX = 512  # response, run, item and call ids, `previous_response_id`, `conversation`, cursors (`after`)
TITLE_MAX = 200  # session titles (Hermes' own limit)
END_REASON_MAX = 64  # Hermes writes short words: user_exit, compression, branched
METADATA_PAIRS_MAX = 16
METADATA_KEY_MAX = 64
METADATA_VALUE_MAX = 512
HEADER_MAX = 32_768  # any one header value (the middleware's 400); the headers of WIRE.md §1.6 have their own

# No NUL anywhere (a JSON Schema `pattern`, so generators and clients know it too).
NO_NUL = r"^[^\x00]*$"


def short(max_length: int, *, min_length: int = 0, description: str = "") -> Str:
    """A short string: at most `max_length` characters, no NUL; 400 `invalid_parameter` naming the field."""
    size = f"{min_length}-{max_length}" if min_length else f"at most {max_length}"
    return Str(
        min_length=min_length,
        max_length=max_length,
        pattern=NO_NUL,
        description=description,
        message=f"'{{param}}' must be a string of {size} characters without NUL",
    )


METADATA = StrMap(
    keys=short(METADATA_KEY_MAX),
    values=short(METADATA_VALUE_MAX),
    max_pairs=METADATA_PAIRS_MAX,
    key_message=f"Each key of '{{param}}' must be a string of at most {METADATA_KEY_MAX} characters without NUL",
    description=f"Up to {METADATA_PAIRS_MAX} string pairs (keys up to {METADATA_KEY_MAX} characters, values up to "
    f"{METADATA_VALUE_MAX}), as OpenAI takes them",
)
