"""What the Responses dialect tests share: a head, tool events, a render of created + events, and readers of the
records it gives (tests/dialects/test_responses*.py)."""

from __future__ import annotations

from typing import Any

from hermes_api_plugin.core.events import (
    StatusChanged,
    ToolCompleted,
    ToolStarted,
    TurnEvent,
    TurnFinished,
    TurnStatus,
    Usage,
)
from hermes_api_plugin.dialects.responses import ResponseHead, ResponsesRenderer
from tests.helpers import RESPONSE_TERMINALS

RESPONSE_ID = "resp_" + "0123456789abcdef" * 2
RUNNING = StatusChanged(TurnStatus.RUNNING)


def start(call_id: str = "call_1", name: str = "terminal", arguments: str = '{"command":"ls"}') -> ToolStarted:
    return ToolStarted(call_id, name, arguments, "ls", "💻", 0.0)


def complete(call_id: str = "call_1", result: str = "README.md", *, stopped: bool = False) -> ToolCompleted:
    return ToolCompleted(call_id, "terminal", result, False, 5, stopped=stopped)


def finished(
    status: TurnStatus = TurnStatus.COMPLETED,
    usage: Usage | None = None,
    code: str | None = None,
    message: str | None = None,
) -> TurnFinished:
    return TurnFinished(status, usage or Usage(), code, message)


def head(response_id: str = RESPONSE_ID, **fields: Any) -> ResponseHead:
    return ResponseHead(id=response_id, created_at=1700000000, model="hermes-agent", **fields)


def render(
    events: list[TurnEvent], *, queued: bool = False, response_id: str = RESPONSE_ID, **options: Any
) -> list[tuple[str, dict[str, Any]]]:
    """created + every event of the turn, as (event name, payload) records."""
    renderer = ResponsesRenderer(head(response_id), **options)
    return renderer.created(queued) + renderer.render(events)


def names(records: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [name for name, _, _ in records]


def item_events(records: list[tuple[str, dict[str, Any]]], kind: str) -> list[dict[str, Any]]:
    return [payload for name, payload, _ in records if name == kind]


def done_items(records: list[tuple[str, dict[str, Any]]]) -> dict[int, dict[str, Any]]:
    return {p["output_index"]: p["item"] for p in item_events(records, "response.output_item.done")}


def terminal(records: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    name, payload, _ = records[-1]
    assert name in RESPONSE_TERMINALS
    return payload["response"]
