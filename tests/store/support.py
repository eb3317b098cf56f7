"""Values the store contract suites build (tests/store/test_contract_*.py): a stored Response, an idempotency record,
a message, and the scopes and clock they use."""

from __future__ import annotations

import asyncio
from typing import Any

from hermes_api_plugin.core.content import Message, TextPart
from hermes_api_plugin.store import IdempotencyRecord, StoredResponse

SCOPE, OTHER = "scope-a", "scope-b"
NOW = 5000.0


def text(role: str, value: str) -> Message:
    return Message(role, (TextPart(value),))


def response(
    rid: str,
    *,
    scope: str = SCOPE,
    status: str = "completed",
    previous: str | None = None,
    conversation: str | None = None,
    **kw: Any,
) -> StoredResponse:
    return StoredResponse(
        id=rid,
        scope=scope,
        turn_id=f"run_{rid}",
        session_id=f"api-{rid}",
        status=status,
        snapshot={"id": rid, "status": status},
        previous_response_id=previous,
        conversation=conversation,
        messages=[text("user", f"q {rid}"), text("assistant", f"a {rid}")],
        **kw,
    )


def idempotency_record(
    key: str = "k1",
    *,
    scope: str = SCOPE,
    surface: str = "chat",
    turn: str = "run_1",
    state: str = "running",
    owner: str | None = "boot-a",
    identity: str = "id-1",
) -> IdempotencyRecord:
    return IdempotencyRecord(
        scope=scope,
        surface=surface,
        key=key,
        identity=identity,
        target="[null,null]",
        state=state,
        turn_id=turn,
        reply={"session_id": "s", "model": "m"},
        owner=owner,
        created_at=1000.0,
    )


async def tick() -> None:
    """Let the clock move, so 'least recently accessed' is never a tie."""
    await asyncio.sleep(0.002)
