"""Approval records of every dialect from event lists alone (WIRE.md §14.2, W-14.3)."""

from __future__ import annotations

from hermes_api_plugin.core.events import (
    ApprovalRequested,
    ApprovalResponded,
    StatusChanged,
    TextDelta,
    ToolCompleted,
    ToolStarted,
    TurnEvent,
    TurnFinished,
    TurnStatus,
    event_from_json,
    event_to_json,
    unanswered_approvals,
)
from hermes_api_plugin.dialects.chat_completions import ChatRenderer
from hermes_api_plugin.dialects.runs import RunEventsRenderer
from hermes_api_plugin.dialects.sessions import SessionStreamRenderer
from tests.helpers import RUN

ASK = ApprovalRequested("rm -rf /tmp/x", "recursive delete", ("once", "session", "always", "deny"))
ASK2 = ApprovalRequested("chmod 777 /srv", "world-writable", ("once", "session", "deny"))
TURN: list[TurnEvent] = [
    StatusChanged(TurnStatus.RUNNING),
    ASK,
    ASK2,
    ApprovalResponded("once"),
    ApprovalResponded("deny"),
    TextDelta("Done."),
    TurnFinished(TurnStatus.COMPLETED),
]


def test_chat_records_are_chunk_shaped_with_the_open_webui_status() -> None:
    renderer = ChatRenderer(completion_id="chatcmpl-x", created=1, model="hermes-agent")
    renderer.run_id = RUN
    records = [r for r in renderer.render(TURN) if r.event is not None]
    assert [r.event for r in records] == [
        "hermes.approval.request",
        "hermes.approval.request",
        "hermes.approval.responded",
        "hermes.approval.responded",
    ]
    asked = records[0].data
    assert asked["object"] == "chat.completion.chunk" and asked["id"] == "chatcmpl-x"
    assert asked["choices"] == [{"index": 0, "delta": {"content": ""}, "finish_reason": None}]
    assert asked["run_id"] == RUN and asked["command"] == "rm -rf /tmp/x"
    assert asked["description"] == "recursive delete" and asked["approval_choices"] == list(ASK.choices)
    assert asked["event"] == {
        "type": "status",
        "data": {"description": "Waiting for approval: rm -rf /tmp/x", "done": False},
    }
    # decisions pair with requests oldest first, as Hermes resolves them
    assert records[2].data["event"]["data"] == {"description": "Approved: rm -rf /tmp/x", "done": True}
    assert records[2].data["choice"] == "once"
    assert records[3].data["event"]["data"] == {"description": "Denied: chmod 777 /srv", "done": True}
    assert renderer.completion()["choices"][0]["message"]["content"] == "Done."  # the answer is unaffected


def test_an_approved_command_shows_as_running_again_after_the_decision() -> None:
    """Open WebUI shows the newest status line: after "Approved: …" (done) the chat stream says again that the tool
    runs, until its completion record; a denial leaves the line at "Denied: …" until the tool's failure."""
    started = ToolStarted("call_1", "terminal", '{"command":"rm -rf /tmp/x"}', "rm -rf /tmp/x", "💻", 0.0)
    for choice, expected in (
        ("once", ["running", "waiting", "decided", "running", "completed"]),
        ("deny", ["running", "waiting", "decided", "completed"]),
    ):
        renderer = ChatRenderer(completion_id="chatcmpl-x", created=1, model="hermes-agent", tool_progress=True)
        events: list[TurnEvent] = [
            started,
            ASK,
            ApprovalResponded(choice),
            ToolCompleted("call_1", "terminal", "ok", is_error=choice == "deny", duration_ms=5),
        ]
        records = [r for r in renderer.render(events) if r.event is not None]
        kinds = [
            {"hermes.approval.request": "waiting", "hermes.approval.responded": "decided"}.get(
                r.event or "", "completed" if r.data["event"]["data"]["done"] else "running"
            )
            for r in records
        ]
        assert kinds == expected, (choice, kinds)


def test_run_events_carry_request_and_decision() -> None:
    renderer = RunEventsRenderer(RUN, [10.0] * len(TURN))
    records = renderer.render(TURN)
    payloads = [r.data for r in records]
    assert payloads[0] == {
        "event": "approval.request",
        "run_id": RUN,
        "timestamp": 10.0,
        "command": "rm -rf /tmp/x",
        "description": "recursive delete",
        "choices": ["once", "session", "always", "deny"],
    }
    assert [p["choice"] for p in payloads if p["event"] == "approval.responded"] == ["once", "deny"]
    assert [r.id for r in records] == list(range(1, len(records) + 1))


def test_session_stream_named_events() -> None:
    renderer = SessionStreamRenderer("s1", RUN, [5.0] * len(TURN))
    records = renderer.render(TURN)
    named = [(r.event, r.data) for r in records if r.event and r.event.startswith("approval.")]
    assert [n for n, _ in named] == ["approval.request", "approval.request", "approval.responded", "approval.responded"]
    assert named[1][1]["choices"] == ["once", "session", "deny"] and named[1][1]["session_id"] == "s1"
    assert named[2][1]["choice"] == "once" and named[2][1]["run_id"] == RUN


def test_unanswered_and_durable_round_trip() -> None:
    assert unanswered_approvals(TURN[:3]) == [ASK, ASK2]
    assert unanswered_approvals(TURN[:4]) == [ASK2]
    assert unanswered_approvals(TURN) == []
    for event in (ASK, ApprovalResponded("deny")):
        assert event_from_json(event_to_json(event)) == event
