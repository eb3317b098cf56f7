"""POST /v1/responses/compact (WIRE.md §16; Open Responses' `CompactResponseMethodPublicBody` and `CompactResource`):
the request — `model` required, `input` checked as POST /v1/responses checks it, `previous_response_id`,
`instructions` — and the compacted resource it returns. The item it carries forward: compaction_item.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import ApiError, invalid_request
from ..core.ids import random_hex
from .common import MODEL_SELECTION, ModelSelection, parse_model_selection
from .limits import ID_MAX, NAME_MAX, short
from .params import IntText
from .responses import INPUT
from .schema import Arr, Obj, Prop, Str

RESOURCE_OBJECT = "response.compaction"

COMPACT_BODY = Obj(
    name="CompactRequest",
    props=(
        Prop("model", short(NAME_MAX), True, description="Required by the specification"),
        *(p for p in MODEL_SELECTION if p.name != "model"),
        Prop("input", INPUT, description="The conversation (or its newest part) to compact"),
        Prop("previous_response_id", short(ID_MAX), description="Compact a stored response's chain (§4.7), then input"),
        Prop("instructions", Str(), description="The conversation's system prompt, given to the summariser"),
    ),
    any_of=("input", "previous_response_id"),
    description="`input`, `previous_response_id` or both",
)
_USAGE = Obj(
    (
        Prop("input_tokens", IntText(0), True),
        Prop("output_tokens", IntText(0), True),
        Prop("total_tokens", IntText(0), True),
    )
)
COMPACTED = Obj(
    name="CompactResource",
    props=(
        Prop("id", Str(), True),
        Prop("object", Str(enum=(RESOURCE_OBJECT,)), True),
        Prop(
            "output",
            Arr(Obj((Prop("type", Str(), True),))),
            True,
            description="The items to carry forward (a `compaction` item): the next response's `input`, with what "
            "the user says next",
        ),
        Prop("created_at", IntText(0), True),
        Prop("usage", _USAGE, True),
    ),
    description="WIRE.md §16: the compacted conversation",
)


@dataclass(frozen=True)
class CompactRequest:
    """A validated POST /v1/responses/compact body (input items not yet resolved)."""

    input: list[Any]
    previous_response_id: str | None
    instructions: str | None
    selection: ModelSelection


def parse_compact_request(raw: dict[str, Any], providers: frozenset[str]) -> CompactRequest:
    body = COMPACT_BODY.check(raw, "")
    value = raw.get("input")
    items: list[Any] = [] if value is None else [value] if isinstance(value, str) else list(value)
    previous = body.get("previous_response_id")
    if not items and previous is None:
        raise nothing_to_compact()
    return CompactRequest(items, previous, body.get("instructions"), parse_model_selection(body, providers))


def nothing_to_compact() -> ApiError:
    return invalid_request("nothing_to_compact", "The conversation to compact has no messages", "input")


def new_compaction_id() -> str:
    return "cmp_" + random_hex(16)


def compacted_resource(
    resource_id: str, created_at: int, output: list[dict[str, Any]], input_tokens: int, output_tokens: int
) -> dict[str, Any]:
    """The spec's `CompactResource`, its usage in the Response object's shape."""
    return {
        "id": resource_id,
        "object": RESOURCE_OBJECT,
        "output": output,
        "created_at": created_at,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }
