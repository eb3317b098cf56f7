"""Suspension records from event lists alone (WIRE.md §15.1, §15.4): which request a journal waits for, the run
events and session stream records of questions, the run object's `required_action`, and durable round trips."""

from __future__ import annotations

from hermes_api_plugin.core.events import (
    ApprovalRequested,
    ApprovalResponded,
    QuestionAnswered,
    QuestionAsked,
    StatusChanged,
    TextDelta,
    ToolCallAnswered,
    ToolCallRequested,
    TurnEvent,
    TurnFinished,
    TurnStatus,
    event_from_json,
    event_to_json,
    negative_answer,
    required_action,
    unanswered_requests,
)
from hermes_api_plugin.dialects.chat_completions import ChatRenderer
from hermes_api_plugin.dialects.runs import RunEventsRenderer, run_object
from hermes_api_plugin.dialects.sessions import SessionStreamRenderer
from tests.helpers import RUN

HELD = ApprovalRequested("rm -rf /tmp/x", "recursive delete", ("once", "deny"))  # §14.2: held, not suspended
SUSPENDED = ApprovalRequested("rm -rf build/", "recursive delete", ("once", "session", "deny"), suspended=True)
ASKED = QuestionAsked("Which branch?", ("main", "release"))
TURN: list[TurnEvent] = [
    StatusChanged(TurnStatus.RUNNING),
    ASKED,
    QuestionAnswered("main"),
    TextDelta("Deploying main."),
    TurnFinished(TurnStatus.COMPLETED),
]


def test_answers_pair_with_the_oldest_request_of_their_kind() -> None:
    events: list[TurnEvent] = [HELD, ASKED, SUSPENDED]
    assert unanswered_requests(events) == [HELD, ASKED, SUSPENDED]
    assert unanswered_requests([*events, QuestionAnswered(None)]) == [HELD, SUSPENDED]
    assert unanswered_requests([*events, ApprovalResponded("once")]) == [ASKED, SUSPENDED]
    assert (
        unanswered_requests([*events, QuestionAnswered("x"), ApprovalResponded("deny"), ApprovalResponded("x")]) == []
    )


def test_only_a_question_or_a_suspended_approval_is_a_required_action() -> None:
    assert required_action([HELD]) is None  # a held approval is `waiting_for_approval`, not a suspension
    assert required_action([HELD, SUSPENDED]) == SUSPENDED
    assert required_action([HELD, ASKED]) == ASKED
    assert required_action(TURN) is None
    assert negative_answer(SUSPENDED) == ApprovalResponded("deny")
    assert negative_answer(ASKED) == QuestionAnswered(None)


def test_new_events_round_trip_through_the_durable_form() -> None:
    for event in (SUSPENDED, HELD, ASKED, QuestionAsked("Why?"), QuestionAnswered("main"), QuestionAnswered(None)):
        assert event_from_json(event_to_json(event)) == event
    old = event_to_json(HELD)
    del old["suspended"]  # a journal written before suspensions existed still reads back
    assert event_from_json(old) == HELD


def test_run_events_and_the_run_object() -> None:
    renderer = RunEventsRenderer(RUN, [5.0] * len(TURN))
    payloads = [r.data for r in renderer.render(TURN[:2])]
    assert payloads[-1] == {
        "event": "question.request",
        "run_id": RUN,
        "timestamp": 5.0,
        "question": "Which branch?",
        "choices": ["main", "release"],
    }
    run = run_object(
        RUN,
        status="requires_action",
        created_at=1.0,
        updated_at=5.0,
        session_id="s1",
        model="hermes-agent",
        renderer=renderer,
        required_action=ASKED,
    )
    assert run["required_action"] == {"type": "question", "question": "Which branch?", "choices": ["main", "release"]}
    assert run["last_event"] == "question.request"
    payloads += [r.data for r in renderer.render(TURN[2:])]
    assert [p["event"] for p in payloads][-3:] == ["question.responded", "message.delta", "run.completed"]
    assert payloads[-3]["answer"] == "main"
    settled = run_object(
        RUN,
        status="completed",
        created_at=1.0,
        updated_at=5.0,
        session_id="s1",
        model="hermes-agent",
        renderer=renderer,
    )
    assert "required_action" not in settled and settled["output"] == "Deploying main."
    approval = RunEventsRenderer(RUN, [5.0]).render([SUSPENDED])[0].data
    assert approval["event"] == "approval.request" and approval["command"] == "rm -rf build/"


def test_session_streams_name_question_events_and_chat_is_unaffected() -> None:
    records = SessionStreamRenderer("s1", RUN, [5.0] * len(TURN)).render(TURN)
    named = [(r.event, r.data) for r in records if r.event and r.event.startswith("question.")]
    assert [n for n, _ in named] == ["question.request", "question.responded"]
    assert named[0][1]["question"] == "Which branch?" and named[1][1]["answer"] == "main"
    chat = ChatRenderer(completion_id="chatcmpl-x", created=1, model="hermes-agent")
    chat.render(TURN)  # §15.2: chat's delivery ends with the question as the assistant's message
    body = chat.completion()
    assert body["choices"][0]["message"]["content"] == "Which branch?\n\n1. main\n2. release"
    assert body["choices"][0]["finish_reason"] == "stop" and body["hermes"]["suspended"] == "question"


def test_client_tool_calls_render_on_run_events_and_session_streams() -> None:
    """§15.4: `tool_call.request` carries the call's own `name` (beside the event's name) and its `call_id` and
    `arguments`; `tool_call.responded` the output (null when none came); the run object's required_action says the
    same. Both renderers take a field called `name` (it once clashed with their own parameter)."""
    called = ToolCallRequested("call_1", "get_weather", '{"city":"Oslo"}')
    events: list[TurnEvent] = [StatusChanged(TurnStatus.RUNNING), called, ToolCallAnswered("call_1", None)]
    renderer = RunEventsRenderer(RUN, [5.0] * len(events))
    payloads = [r.data for r in renderer.render(events[:2])]
    assert payloads[-1] == {
        "event": "tool_call.request",
        "run_id": RUN,
        "timestamp": 5.0,
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city":"Oslo"}',
    }
    run = run_object(
        RUN,
        status="requires_action",
        created_at=1.0,
        updated_at=5.0,
        session_id="s1",
        model="hermes-agent",
        renderer=renderer,
        required_action=called,
    )
    assert run["required_action"] == {
        "type": "client_tool",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city":"Oslo"}',
    }
    answered = [r.data for r in renderer.render(events[2:])]
    assert answered[-1]["event"] == "tool_call.responded" and answered[-1]["output"] is None
    records = SessionStreamRenderer("s1", RUN, [5.0] * len(events)).render(events)
    named = [(r.event, r.data) for r in records if r.event and r.event.startswith("tool_call.")]
    assert [n for n, _ in named] == ["tool_call.request", "tool_call.responded"]
    assert named[0][1]["name"] == "get_weather" and named[1][1]["call_id"] == "call_1"
