"""What the idempotency tests share with the store outage test (tests/store/test_postgres_outage.py): the check
of a keyed chat stream that was refused before anything was admitted (WIRE.md §3.5, §5.3)."""

from __future__ import annotations

from tests.helpers import COMPLETION_ID, Reply

REFUSAL_TYPES = {
    "admission_conflict": "invalid_request_error",
    "unknown_execution": "conflict_error",
    "admission_expired": "conflict_error",
    "storage_unavailable": "server_error",
}
ZERO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def check_refusal_stream(reply: Reply, code: str) -> None:
    """§3.5, §5.3: a keyed chat stream that admitted nothing: 200, the role chunk, one finish chunk carrying the
    admission outcome (finish_reason error, zero usage, root error, hermes block), then [DONE]."""
    assert reply.status == 200, reply.raw
    assert reply.is_stream
    assert reply.raw.endswith(b"data: [DONE]\n\n"), reply.raw[-200:]
    records = reply.records
    assert [r.event for r in records] == [None, None, None]
    assert records[-1].data == "[DONE]"
    role, finish = records[0].json(), records[1].json()
    assert COMPLETION_ID.match(role["id"])
    for chunk in (role, finish):
        assert chunk["id"] == role["id"] and chunk["created"] == role["created"]
        assert chunk["object"] == "chat.completion.chunk"
        assert chunk["model"] == role["model"]
    assert role["choices"] == [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]
    assert finish["choices"] == [{"index": 0, "delta": {}, "finish_reason": "error"}]
    assert finish["usage"] == ZERO_USAGE
    assert finish["error"] == {"message": code, "type": REFUSAL_TYPES[code], "param": None, "code": code}
    assert finish["hermes"] == {"completed": False, "partial": False, "failed": True, "error_code": code}
    assert set(finish) == {"id", "object", "created", "model", "choices", "usage", "error", "hermes"}
