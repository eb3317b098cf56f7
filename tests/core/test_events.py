"""TurnTranscript: the fold every surface shares (bursts, final answer, partial)."""

from __future__ import annotations

import random

from hermes_api_plugin.core.events import (
    ApprovalRequested,
    ApprovalResponded,
    ApprovalTally,
    Commentary,
    QuestionAsked,
    ReasoningDelta,
    StatusChanged,
    TextDelta,
    ToolCallAnswered,
    ToolCallRequested,
    ToolCompleted,
    ToolStarted,
    TurnEvent,
    TurnFinished,
    TurnStatus,
    TurnTranscript,
    Usage,
    event_from_json,
    event_to_json,
    negative_answer,
    required_action,
    resume_position,
    suspends,
    unanswered_approvals,
    unanswered_requests,
    waiting_calls,
)

START = ToolStarted("call_1", "terminal", "{}", "ls", "💻", 0.0)
END = ToolCompleted("call_1", "terminal", "ok", False, 5)


def test_reasoning_bursts_after_the_first_start_with_blank_line() -> None:
    """W-3.14: a burst ends at text, a tool or commentary; later bursts are prefixed with \\n\\n."""
    t = TurnTranscript()
    emitted = [
        t.feed(e)
        for e in [
            ReasoningDelta("a"),
            ReasoningDelta("b"),
            Commentary("c"),
            ReasoningDelta("d"),
            START,
            ReasoningDelta("e"),
            TextDelta("x"),
            ReasoningDelta("f"),
        ]
    ]
    assert [e for e in emitted if e is not None] == ["a", "b", "\n\nd", "\n\ne", "\n\nf"]
    assert t.reasoning == "ab\n\nd\n\ne\n\nf"


def test_status_changes_do_not_split_a_burst() -> None:
    t = TurnTranscript().feed_all([ReasoningDelta("a"), StatusChanged(TurnStatus.RUNNING), ReasoningDelta("b")])
    assert t.reasoning == "ab"


def test_answer_is_text_after_the_last_tool_event() -> None:
    t = TurnTranscript().feed_all(
        [TextDelta("before "), START, TextDelta("during"), END, TextDelta("after"), TextDelta(" more")]
    )
    assert t.answer == "after more"
    assert t.any_text


def test_no_reasoning_is_none_and_no_text_is_not_partial() -> None:
    t = TurnTranscript().feed_all([START, END, TurnFinished(TurnStatus.CANCELLED)])
    assert t.reasoning is None
    assert t.answer == ""
    assert not t.any_text
    assert t.finished == TurnFinished(TurnStatus.CANCELLED)


def test_usage_total_is_the_sum() -> None:
    assert Usage(3, 4).total_tokens == 7


def test_terminal_statuses() -> None:
    assert {s for s in TurnStatus if s.terminal} == {
        TurnStatus.COMPLETED,
        TurnStatus.INCOMPLETE,
        TurnStatus.FAILED,
        TurnStatus.CANCELLED,
    }


def test_tools_stopped_by_the_end_of_the_turn_do_not_reset_the_answer() -> None:
    t = TurnTranscript().feed_all(
        [START, TextDelta("summary"), ToolCompleted("call_1", "terminal", "[interrupted]", True, 3, stopped=True)]
    )
    assert t.answer == "summary"


def test_client_tool_calls_pair_with_their_outputs_by_call_id_and_suspend() -> None:
    """§15.1: a tool call's output answers that call, whatever the order; an unanswered call suspends the turn and
    resolves to no output; a held approval (§14.2) does not suspend."""
    first, second = ToolCallRequested("c1", "f", "{}"), ToolCallRequested("c2", "g", "{}")
    held = ApprovalRequested("rm x", "", ("once",))
    assert unanswered_requests([first, second, ToolCallAnswered("c2", "ok")]) == [first]
    assert required_action([held, first]) is first and required_action([held]) is None
    assert suspends(first) and suspends(QuestionAsked("q")) and not suspends(held)
    assert suspends(ApprovalRequested("rm x", "", (), suspended=True)) and not suspends(TextDelta("x"))
    assert negative_answer(first) == ToolCallAnswered("c1", None)
    assert event_from_json(event_to_json(first)) == first
    assert event_from_json(event_to_json(ToolCallAnswered("c1", None))) == ToolCallAnswered("c1", None)


def test_a_client_tool_call_ends_the_answer_as_a_tool_does() -> None:
    transcript = TurnTranscript().feed_all([TextDelta("Let me check."), ToolCallRequested("c1", "f", "{}")])
    assert transcript.answer == "" and transcript.any_text


def test_a_resumed_delivery_begins_after_the_request_and_the_calls_made_with_it() -> None:
    """WIRE.md §15.1: where a delivery resuming a suspended turn begins — one function for this gateway's turns and
    another gateway's followed journal (W-15.4)."""
    calls = [ToolCallRequested("c1", "f", "{}"), ToolCallRequested("c2", "f", "{}")]
    events = [TextDelta("a"), *calls, TextDelta("b")]
    assert resume_position(events) == 3 and waiting_calls(events) == ("c1", "c2")
    answered = [*events, ToolCallAnswered("c1", "x")]
    assert resume_position(answered) == 3 and waiting_calls(answered) == ("c2",)
    asked = [TextDelta("a"), QuestionAsked("Which?"), TextDelta("b")]
    assert resume_position(asked) == 2 and waiting_calls(asked) == ()
    assert resume_position([TextDelta("a")]) == 1  # waits for nothing: the end


def test_the_approval_tally_counts_what_unanswered_approvals_lists_as_the_journal_grows() -> None:
    """Issue 25: a metrics scrape asks every running turn whether it awaits an approval; the tally reads only what was
    appended since it last looked and always agrees with the whole-journal scan (FIFO decisions, a decision with no
    request waiting changes nothing, other requests and answers do not count)."""
    kinds = [
        ApprovalRequested("rm -rf x", "recursive delete", ("once", "deny")),
        ApprovalResponded("once"),
        ApprovalResponded("deny"),
        QuestionAsked("Which branch?"),
        ToolCallRequested("call_9", "get_weather", "{}"),
        ToolCallAnswered("call_9", "sunny"),
        TextDelta("t"),
        ReasoningDelta("r"),
        START,
        END,
    ]
    rng = random.Random(25)
    for _ in range(50):
        events: list[TurnEvent] = []
        tally = ApprovalTally()
        while len(events) < 200:
            events.extend(rng.choice(kinds) for _ in range(rng.randint(0, 7)))
            assert tally.update(events) == len(unanswered_approvals(events)), events
        assert tally.update(events) == tally.waiting  # asked again with nothing new: the same count
