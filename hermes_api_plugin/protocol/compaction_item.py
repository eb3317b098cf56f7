"""The `compaction` item (WIRE.md §16, Open Responses' `CompactionBody` / `CompactionSummaryItemParam`): what
POST /v1/responses/compact returns, and what it is to the agent when a later request sends it back as `input` — a
history message stating the summary.

`encrypted_content` is this server's own versioned encoding, not encryption: `hcmp1.` then the base64url (no padding)
of the JSON `{"v":1,"summary":…}`. It is opaque by contract — clients carry it forward, never parse it — and a value
that does not decode is the client's 400 naming the item, never a 500.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from ..core.content import Message, text_message
from ..core.errors import ApiError, invalid_request
from ..core.ids import random_hex
from .limits import ID_MAX, short
from .schema import Obj, Prop, Str

ENCODING_PREFIX = "hcmp1."
ENCODING_VERSION = 1
# What tells the agent what the message is: it leads the summary in the agent's history.
SUMMARY_LEAD = "Summary of the earlier conversation (context compaction):\n"

COMPACTION_ITEM = Obj(
    name="CompactionItem",
    props=(
        Prop("type", Str(enum=("compaction",)), True),
        Prop("encrypted_content", Str(), True, description="Opaque: as POST /v1/responses/compact returned it"),
        Prop("id", short(ID_MAX)),
    ),
    description="A compacted conversation (§16): the agent continues with its summary as context",
)


def encode_summary(summary: str) -> str:
    """The summary as a compaction item's opaque `encrypted_content`."""
    payload = json.dumps({"v": ENCODING_VERSION, "summary": summary}, ensure_ascii=False, separators=(",", ":"))
    return ENCODING_PREFIX + base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def decode_summary(value: Any, param: str) -> str:
    """The summary in a compaction item's `encrypted_content`; 400 naming `param` when it is not one of ours."""
    if not isinstance(value, str) or not value.startswith(ENCODING_PREFIX):
        raise _malformed(param)
    data = value[len(ENCODING_PREFIX) :]
    try:
        decoded = json.loads(base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)).decode())
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise _malformed(param) from None
    summary = decoded.get("summary") if isinstance(decoded, dict) else None
    if not isinstance(decoded, dict) or decoded.get("v") != ENCODING_VERSION or not isinstance(summary, str):
        raise _malformed(param)
    return summary


def _malformed(param: str) -> ApiError:
    return invalid_request(
        "invalid_encrypted_content",
        f"'{param}' is not a compaction of this server (send the item POST /v1/responses/compact returned)",
        param,
    )


def compaction_item(summary: str) -> dict[str, Any]:
    """A new output item carrying `summary`."""
    return {"type": "compaction", "id": "ci_" + random_hex(16), "encrypted_content": encode_summary(summary)}


def summary_message(summary: str) -> Message:
    """What a compaction item is to the agent: a message of its history stating the summary."""
    return text_message("user", SUMMARY_LEAD + summary)
