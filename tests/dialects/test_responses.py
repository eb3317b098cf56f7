"""The Responses dialect from event lists alone (no server): WIRE.md §4.2–§4.5, checklist W-4.x."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_api_plugin.core.events import (
    Commentary,
    ReasoningDelta,
    TextDelta,
    TurnEvent,
    TurnStatus,
    Usage,
)
from hermes_api_plugin.dialects.responses import ResponsesRenderer, without_tool_items
from tests.helpers import ITEM_ID, RESPONSE_KEYS, RESPONSE_TERMINALS, TOOL_TYPES, USAGE_KEYS

from .support import (
    RESPONSE_ID,
    RUNNING,
    complete,
    done_items,
    finished,
    head,
    item_events,
    names,
    render,
    start,
    terminal,
)

REASONING_BURST = [
    "response.output_item.added",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "response.reasoning_summary_part.done",
    "response.output_item.done",
]

TOOL_TURN: list[TurnEvent] = [
    RUNNING,
    ReasoningDelta("I should look "),
    ReasoningDelta("at the files."),
    start(),
    complete(),
    Commentary("Listed the files."),
    ReasoningDelta("Two entries."),
    TextDelta("Your project "),
    TextDelta("has README.md."),
    finished(usage=Usage(42, 17)),
]


# -- W-4.1, W-4.2, W-4.3: lifecycle objects, sequence numbers, output indexes -------------------------


def test_created_and_in_progress_carry_every_response_key() -> None:
    """W-4.1, §4.5: created is seq 0, in_progress seq 1; both are full Response objects, output [], usage null."""
    records = render([RUNNING])
    assert names(records) == ["response.created", "response.in_progress"]
    for seq, (name, payload, _) in enumerate(records):
        assert payload["type"] == name
        assert payload["sequence_number"] == seq
        response = payload["response"]
        assert set(response) == RESPONSE_KEYS
        assert response["id"] == RESPONSE_ID
        assert response["object"] == "response"
        assert response["created_at"] == 1700000000
        assert response["status"] == "in_progress"
        assert response["output"] == []
        assert response["usage"] is None
        assert response["error"] is None and response["incomplete_details"] is None
        assert response["background"] is False and response["store"] is True
        assert response["model"] == "hermes-agent"
        assert (response["parallel_tool_calls"], response["tool_choice"], response["tools"]) == (True, "auto", [])
        assert response["instructions"] is None and response["metadata"] == {}
        assert response["previous_response_id"] is None


def test_created_is_queued_while_waiting_then_in_progress_when_started() -> None:
    """W-4.1: a queued turn's created says `queued`; in_progress comes with the RUNNING status change."""
    renderer = ResponsesRenderer(head())
    (created,) = renderer.created(queued=True)
    assert created[1]["response"]["status"] == "queued"
    assert renderer.snapshot()["status"] == "queued"
    assert renderer.render([TextDelta("x")])[0][0] != "response.in_progress"
    renderer = ResponsesRenderer(head())
    renderer.created(queued=True)
    (in_progress,) = renderer.render([RUNNING])
    assert in_progress[0] == "response.in_progress"
    assert in_progress[1]["sequence_number"] == 1
    assert in_progress[1]["response"]["status"] == "in_progress"


def test_head_fields_are_echoed_in_every_lifecycle_object() -> None:
    """§4.5: request-derived fields (background, store, instructions, metadata, tools, chain) are echoed."""
    tools = [{"type": "function", "name": "get_weather"}]
    renderer = ResponsesRenderer(
        head(
            background=True,
            store=True,
            instructions="Be terse.",
            metadata={"k": "v"},
            tools=tools,
            tool_choice="required",
            parallel_tool_calls=False,
            previous_response_id="resp_" + "1" * 32,
        )
    )
    records = renderer.created() + renderer.render([RUNNING, TextDelta("hi"), finished()])
    lifecycle = [(name, payload["response"]) for name, payload, _ in records if "response" in payload]
    assert [name for name, _ in lifecycle] == ["response.created", "response.in_progress", "response.completed"]
    for _, response in lifecycle:
        assert response["background"] is True
        assert response["instructions"] == "Be terse."
        assert response["metadata"] == {"k": "v"}
        assert response["tools"] == tools
        assert response["tool_choice"] == "required"
        assert response["parallel_tool_calls"] is False
        assert response["previous_response_id"] == "resp_" + "1" * 32


def test_sequence_numbers_run_from_zero_without_gap_across_batches() -> None:
    """W-4.2: one counter over lifecycle, reasoning, text and tool events, also when fed in several batches."""
    renderer = ResponsesRenderer(head())
    records = renderer.created()
    for event in TOOL_TURN:
        records += renderer.render([event])
    assert [p["sequence_number"] for _, p, _ in records] == list(range(len(records)))
    assert all(p["type"] == name for name, p, _ in records)
    assert records == render(TOOL_TURN), "batching does not change the rendering"


def test_output_index_dense_and_added_precedes_every_reference() -> None:
    """W-4.3: each item's output_item.added precedes every event naming it; indexes are 0..n-1 in added order."""
    records = render(TOOL_TURN)
    added_order: list[int] = []
    added_ids: dict[int, str] = {}
    for name, payload, _ in records:
        if "output_index" not in payload:
            continue
        index = payload["output_index"]
        if name == "response.output_item.added":
            assert index not in added_ids, "one added per item"
            added_order.append(index)
            added_ids[index] = payload["item"]["id"]
        else:
            assert index in added_ids, f"{name} before its item was added"
            if "item_id" in payload:
                assert payload["item_id"] == added_ids[index]
            if "item" in payload:
                assert payload["item"]["id"] == added_ids[index]
    assert added_order == list(range(len(added_order)))
    assert set(done_items(records)) == set(added_order), "every added item is done"
    ids = {p["response"]["id"] for _, p, _ in records if "response" in p}
    assert ids == {RESPONSE_ID}


# -- W-4.4: reasoning bursts ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("closer", "opened"),
    [
        (TextDelta("answer"), "message"),
        (start(), "function_call"),
        (Commentary("Checking."), "message"),
    ],
)
def test_reasoning_burst_is_six_steps_and_done_before_next_item(closer: TurnEvent, opened: str) -> None:
    """W-4.4: added → part.added → delta+ → text.done → part.done → item.done, before the next item is added."""
    records = render([RUNNING, ReasoningDelta("Think "), ReasoningDelta("hard."), closer])
    body = records[2:]
    assert names(body)[:7] == REASONING_BURST[:3] + ["response.reasoning_summary_text.delta"] + REASONING_BURST[3:]
    added = body[0][1]
    assert added["output_index"] == 0
    assert added["item"] == {"id": added["item"]["id"], "type": "reasoning", "status": "in_progress", "summary": []}
    assert body[1][1]["part"] == {"type": "summary_text", "text": ""}
    assert body[1][1]["summary_index"] == 0
    assert [p["delta"] for _, p, _ in body[2:4]] == ["Think ", "hard."]
    assert all(p["summary_index"] == 0 and p["item_id"] == added["item"]["id"] for _, p, _ in body[1:6])
    assert body[4][1]["text"] == "Think hard."
    assert body[5][1]["part"] == {"type": "summary_text", "text": "Think hard."}
    assert body[6][1]["item"] == {
        "id": added["item"]["id"],
        "type": "reasoning",
        "status": "completed",
        "summary": [{"type": "summary_text", "text": "Think hard."}],
    }
    next_added = body[7]
    assert next_added[0] == "response.output_item.added"
    assert next_added[1]["output_index"] == 1
    assert next_added[1]["item"]["type"] == opened


def test_each_reasoning_burst_is_its_own_item() -> None:
    """W-4.4, §4.2: reasoning interrupted by text opens a new reasoning item (one item per burst)."""
    records = render(
        [RUNNING, ReasoningDelta("one"), TextDelta("a"), ReasoningDelta("two"), TextDelta("b"), finished()]
    )
    output = terminal(records)["output"]
    assert [(i["type"], i.get("summary") or i.get("content")) for i in output] == [
        ("reasoning", [{"type": "summary_text", "text": "one"}]),
        ("message", [{"type": "output_text", "text": "a", "annotations": [], "logprobs": []}]),
        ("reasoning", [{"type": "summary_text", "text": "two"}]),
        ("message", [{"type": "output_text", "text": "b", "annotations": [], "logprobs": []}]),
    ]


def test_reasoning_burst_is_closed_before_the_terminal_event() -> None:
    """W-4.4: an open burst is done before the terminal event; in a completed turn it ends `completed`."""
    records = render([RUNNING, ReasoningDelta("only thinking"), finished()])
    reasoning_done = next(
        i
        for i, (n, p, _) in enumerate(records)
        if n == "response.output_item.done" and p["item"]["type"] == "reasoning"
    )
    assert reasoning_done < len(records) - 1
    assert records[reasoning_done][1]["item"]["status"] == "completed"


# -- W-4.5: message items -------------------------------------------------------------------------------


def test_message_content_part_added_precedes_text_deltas() -> None:
    """W-4.5: output_item.added → content_part.added (empty output_text) → deltas (content_index 0, logprobs [])."""
    records = render([RUNNING, TextDelta("Hel"), TextDelta("lo"), finished()])
    body = records[2:]
    assert names(body) == [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    added = body[0][1]
    message_id = added["item"]["id"]
    assert added["item"] == {
        "id": message_id,
        "type": "message",
        "status": "in_progress",
        "role": "assistant",
        "content": [],
    }
    part_added = body[1][1]
    assert (part_added["item_id"], part_added["output_index"], part_added["content_index"]) == (message_id, 0, 0)
    assert part_added["part"] == {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    for _, delta, _ in body[2:4]:
        assert delta["item_id"] == message_id
        assert delta["output_index"] == 0
        assert delta["content_index"] == 0
        assert delta["logprobs"] == []
    assert [p["delta"] for _, p, _ in body[2:4]] == ["Hel", "lo"]
    assert body[4][1]["text"] == "Hello" and body[4][1]["logprobs"] == [] and body[4][1]["content_index"] == 0
    assert body[5][1]["part"] == {"type": "output_text", "text": "Hello", "annotations": [], "logprobs": []}
    assert body[6][1]["item"] == {
        "id": message_id,
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "phase": "final_answer",
        "content": [{"type": "output_text", "text": "Hello", "annotations": [], "logprobs": []}],
    }


def test_text_after_a_tool_opens_a_new_message_item() -> None:
    """§4.2: a tool call closes the open message; later text opens a new one."""
    records = render([RUNNING, TextDelta("Let me look."), start(), complete(), TextDelta("Found it."), finished()])
    output = terminal(records)["output"]
    assert [i["type"] for i in output] == ["message", "function_call", "function_call_output", "message"]
    assert output[0]["content"][0]["text"] == "Let me look."
    assert output[3]["content"][0]["text"] == "Found it."


# -- W-4.6: server-executed tools -------------------------------------------------------------------------


def test_tool_pair_shape_and_immediate_output_item() -> None:
    """W-4.6: function_call added (in_progress) → arguments.done; on completion fc done then fco added+done."""
    records = render(
        [RUNNING, start("call_abc", "terminal", '{"command":"ls -la"}'), complete("call_abc", "a\nb"), finished()]
    )
    body = records[2:]
    assert names(body)[:6] == [
        "response.output_item.added",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.output_item.done",
        "response.output_item.added",  # the (empty) final message
    ]
    fc = body[0][1]["item"]
    assert fc == {
        "id": fc["id"],
        "type": "function_call",
        "status": "in_progress",
        "call_id": "call_abc",
        "name": "terminal",
        "arguments": '{"command":"ls -la"}',
    }
    assert ITEM_ID["function_call"].match(fc["id"])
    assert body[1][1] == {
        "type": "response.function_call_arguments.done",
        "sequence_number": 3,
        "item_id": fc["id"],
        "output_index": 0,
        "arguments": '{"command":"ls -la"}',
    }
    assert body[2][1]["output_index"] == 0
    assert body[2][1]["item"] == {**fc, "status": "completed"}
    fco = body[3][1]["item"]
    assert body[3][1]["output_index"] == 1
    assert fco == {
        "id": fco["id"],
        "type": "function_call_output",
        "status": "completed",
        "call_id": "call_abc",
        "output": "a\nb",
    }
    assert ITEM_ID["function_call_output"].match(fco["id"])
    assert body[4][1] == {"type": "response.output_item.done", "sequence_number": 6, "output_index": 1, "item": fco}


def test_tool_output_is_truncated_to_the_configured_limit() -> None:
    """W-4.6, §4.2: outputs longer than tool_output_max_chars are cut and end with …[truncated N chars]."""
    long = "0123456789" * 3
    records = render(
        [RUNNING, start("a"), complete("a", long), start("b"), complete("b", long[:10]), finished()],
        tool_output_max_chars=10,
    )
    outputs = [i["output"] for i in terminal(records)["output"] if i["type"] == "function_call_output"]
    assert outputs == ["0123456789…[truncated 20 chars]", "0123456789"]


def test_tool_output_default_limit_is_16000() -> None:
    """§12: api_server.responses.tool_output_max_chars defaults to 16 000."""
    records = render([RUNNING, start(), complete(result="x" * 16_001), finished()])
    (fco,) = [i for i in terminal(records)["output"] if i["type"] == "function_call_output"]
    assert fco["output"] == "x" * 16_000 + "…[truncated 1 chars]"


def test_stopped_tool_reports_interrupted_output() -> None:
    """W-4.17: a tool stopped by the end of the turn: fc completed, fco "[interrupted]" completed."""
    records = render([RUNNING, start(), complete(result="partial", stopped=True), finished(TurnStatus.CANCELLED)])
    fc, fco = terminal(records)["output"]
    assert fc["type"] == "function_call" and fc["status"] == "completed"
    assert fco == {
        "id": fco["id"],
        "type": "function_call_output",
        "status": "completed",
        "call_id": "call_1",
        "output": "[interrupted]",
    }


def test_tool_still_open_at_the_end_gets_interrupted_pair_before_terminal() -> None:
    """W-4.17: a running tool without a completion is closed by the terminal record: fc done + fco [interrupted]."""
    records = render([RUNNING, start(), finished(TurnStatus.CANCELLED, code="cancelled")])
    assert names(records)[-4:] == [
        "response.output_item.done",
        "response.output_item.added",
        "response.output_item.done",
        "response.cancelled",
    ]
    output = terminal(records)["output"]
    assert [(i["type"], i["status"]) for i in output] == [
        ("function_call", "completed"),
        ("function_call_output", "completed"),
    ]
    assert output[1]["output"] == "[interrupted]"
    assert output[0]["call_id"] == output[1]["call_id"] == "call_1"


def test_completion_without_start_is_dropped() -> None:
    """§4.2: a completion without a start shows nothing."""
    records = render([RUNNING, complete("ghost"), TextDelta("ok"), finished()])
    assert "ghost" not in repr(records)
    assert [i["type"] for i in terminal(records)["output"]] == ["message"]


def test_parallel_tools_each_get_their_own_pair() -> None:
    """§4.2: parallel tool calls each get an fc and, when they end, an fco with the same call_id."""
    records = render([RUNNING, start("a"), start("b"), complete("b", "B"), complete("a", "A"), finished()])
    output = terminal(records)["output"]
    pairs = [(i["type"], i["call_id"], i.get("output")) for i in output if i["type"] != "message"]
    assert pairs == [
        ("function_call", "a", None),
        ("function_call", "b", None),
        ("function_call_output", "b", "B"),
        ("function_call_output", "a", "A"),
    ]


# -- W-4.7: commentary ----------------------------------------------------------------------------------


def test_commentary_is_one_completed_item_added_and_done() -> None:
    """W-4.7: commentary is a completed message with phase commentary; added and done carry the same item."""
    records = render([RUNNING, Commentary("Checking the log."), finished()])
    body = records[2:]
    assert names(body)[:2] == ["response.output_item.added", "response.output_item.done"]
    item = body[0][1]["item"]
    assert item == {
        "id": item["id"],
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "phase": "commentary",
        "content": [{"type": "output_text", "text": "Checking the log.", "annotations": [], "logprobs": []}],
    }
    assert body[1][1]["item"] == item
    assert ITEM_ID["message"].match(item["id"])


def test_commentary_closes_open_text_and_is_never_merged() -> None:
    """W-4.7: commentary closes the open message item; it is not part of any answer item."""
    records = render([RUNNING, TextDelta("Before."), Commentary("Aside."), TextDelta("After."), finished()])
    output = terminal(records)["output"]
    assert [(i.get("phase"), i["content"][0]["text"]) for i in output] == [
        (None, "Before."),
        ("commentary", "Aside."),
        ("final_answer", "After."),
    ]
    assert not any(name.startswith("response.output_text") and "Aside" in repr(p) for name, p, _ in records)


@pytest.mark.parametrize(
    ("options", "commentary"),
    [({"commentary": False}, Commentary("Aside.")), ({}, Commentary("Aside.", already_streamed=True))],
    ids=["commentary-disabled", "already-streamed"],
)
def test_commentary_skipped_when_disabled_or_already_streamed(options: dict[str, Any], commentary: Commentary) -> None:
    """W-4.7, §10.3: no commentary item when commentary is off or the text was already streamed."""
    records = render([RUNNING, commentary, TextDelta("Answer."), finished()], **options)
    assert "Aside." not in repr(records)
    assert [i.get("phase") for i in terminal(records)["output"]] == ["final_answer"]
    assert [p["sequence_number"] for _, p, _ in records] == list(range(len(records)))


# -- W-4.8: the terminal event ------------------------------------------------------------------------------


def test_terminal_output_equals_done_items_in_index_order_with_usage() -> None:
    """W-4.8: one terminal event, last; output is exactly the done items by output_index; usage has 5 keys."""
    records = render(TOOL_TURN)
    assert sum(1 for n in names(records) if n in RESPONSE_TERMINALS) == 1
    assert names(records)[-1] == "response.completed"
    response = terminal(records)
    assert set(response) == RESPONSE_KEYS
    done = done_items(records)
    assert response["output"] == [done[i] for i in sorted(done)]
    assert response["status"] == "completed"
    assert response["usage"] == {
        "input_tokens": 42,
        "output_tokens": 17,
        "total_tokens": 59,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    assert set(response["usage"]) == USAGE_KEYS
    assert [i["type"] for i in response["output"]] == [
        "reasoning",
        "function_call",
        "function_call_output",
        "message",
        "reasoning",
        "message",
    ]
    assert [i.get("phase") for i in response["output"] if i["type"] == "message"] == ["commentary", "final_answer"]


def test_terminal_output_has_no_duplicate_final_message() -> None:
    """W-4.8: the final message appears once in the terminal output."""
    records = render([RUNNING, TextDelta("Only answer."), finished()])
    output = terminal(records)["output"]
    assert len(output) == 1
    assert output[0]["content"][0]["text"] == "Only answer."


def test_incomplete_terminal_fields() -> None:
    """W-4.8, W-4.16, §4.4: response.incomplete with incomplete_details.reason iteration_budget_exhausted."""
    records = render(
        [
            RUNNING,
            TextDelta("Summary so far."),
            finished(TurnStatus.INCOMPLETE, Usage(5, 6), "iteration_budget_exhausted"),
        ]
    )
    assert names(records)[-1] == "response.incomplete"
    response = terminal(records)
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "iteration_budget_exhausted"}
    assert response["error"] is None
    assert response["usage"]["total_tokens"] == 11
    last = response["output"][-1]
    assert (last["type"], last["status"], last["phase"]) == ("message", "completed", "final_answer")
    assert last["content"][0]["text"] == "Summary so far."


def test_incomplete_for_truncated_output_reports_max_output_tokens() -> None:
    """§3.6, §4.4: a provider token-limit truncation is incomplete with reason max_output_tokens."""
    records = render([RUNNING, TextDelta("Cut"), finished(TurnStatus.INCOMPLETE, code="output_truncated")])
    assert terminal(records)["incomplete_details"] == {"reason": "max_output_tokens"}


def test_failed_terminal_keeps_diagnostic_message_completed() -> None:
    """W-4.8, W-4.17, §4.4: failed carries error {code agent_error, message}; the diagnostic item is completed."""
    records = render(
        [
            RUNNING,
            ReasoningDelta("Trying."),
            TextDelta("Diagnostic: "),
            finished(TurnStatus.FAILED, code="agent_error", message="Provider authentication failed"),
        ]
    )
    assert names(records)[-1] == "response.failed"
    response = terminal(records)
    assert response["status"] == "failed"
    assert response["error"] == {"code": "agent_error", "message": "Provider authentication failed"}
    assert response["incomplete_details"] is None
    reasoning, message = response["output"]
    assert reasoning["status"] == "completed"  # closed by the text, before the failure
    assert message["status"] == "completed"
    assert message["content"][0]["text"] == "Diagnostic: "
    assert "phase" not in message, "no final_answer on a failed turn (W-4.18)"


def test_failed_turn_closes_open_reasoning_incomplete() -> None:
    """§4.2, §4.4: a burst closed by a failure ends `incomplete`; no final message is invented."""
    records = render(
        [RUNNING, ReasoningDelta("Thinking."), finished(TurnStatus.FAILED, code="agent_error", message="boom")]
    )
    output = terminal(records)["output"]
    assert [(i["type"], i["status"]) for i in output] == [("reasoning", "incomplete")]
    assert names(records)[-4:] == [
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        "response.failed",
    ]


def test_failed_without_any_output_has_empty_output_and_zero_usage() -> None:
    """§4.4: a failure before any output: output [], usage object of zeros."""
    records = render([RUNNING, finished(TurnStatus.FAILED, code="agent_error", message="Provider down")])
    assert names(records) == ["response.created", "response.in_progress", "response.failed"]
    response = terminal(records)
    assert response["output"] == []
    assert response["usage"] == {
        "input_tokens": 0,
        "output_tokens": 0,
        "total_tokens": 0,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }


def test_cancelled_closes_open_items_incomplete_in_index_order() -> None:
    """W-4.17: on cancel the open reasoning and message items are done `incomplete`, in output_index order."""
    records = render([RUNNING, ReasoningDelta("Scanning."), finished(TurnStatus.CANCELLED, code="cancelled")])
    response = terminal(records)
    assert names(records)[-1] == "response.cancelled"
    assert response["status"] == "cancelled"
    assert response["error"] is None and response["incomplete_details"] is None
    assert response["output"] == [
        {
            "id": response["output"][0]["id"],
            "type": "reasoning",
            "status": "incomplete",
            "summary": [{"type": "summary_text", "text": "Scanning."}],
        }
    ]
    records = render(
        [RUNNING, ReasoningDelta("Scanning."), TextDelta("Partial"), finished(TurnStatus.CANCELLED, code="cancelled")]
    )
    output = terminal(records)["output"]
    assert [(i["type"], i["status"]) for i in output] == [("reasoning", "completed"), ("message", "incomplete")]
    assert "phase" not in output[1], "no final_answer on a cancelled turn (W-4.18)"
    assert output[1]["content"] == [{"type": "output_text", "text": "Partial", "annotations": [], "logprobs": []}]
    done_order = [p["output_index"] for p in item_events(records, "response.output_item.done")]
    assert done_order == sorted(done_order)


def test_cancel_while_tool_runs_and_text_is_open_closes_items_before_terminal() -> None:
    """W-4.17: fc completed + fco [interrupted], message incomplete; every added item is done before the terminal."""
    records = render([RUNNING, start(), TextDelta("Working on it"), finished(TurnStatus.CANCELLED, code="cancelled")])
    response = terminal(records)
    added = {p["item"]["id"] for p in item_events(records, "response.output_item.added")}
    assert {i["id"] for i in response["output"]} == added
    by_type = {i["type"]: i for i in response["output"]}
    assert by_type["function_call"]["status"] == "completed"
    assert by_type["function_call_output"]["output"] == "[interrupted]"
    assert by_type["message"]["status"] == "incomplete"
    assert response["output"] == [done_items(records)[i] for i in sorted(done_items(records))]


@pytest.mark.parametrize(
    ("journal_tail", "message_done"),
    [
        # the registry journals the stopped tool's completion before the terminal record (budget exhausted)
        (
            [complete(stopped=True), finished(TurnStatus.INCOMPLETE, code="iteration_budget_exhausted")],
            {"status": "completed", "phase": "final_answer"},
        ),
        # a journal that ends without it (a stop that left no closing events): the terminal record closes the tool
        ([finished(TurnStatus.CANCELLED, code="cancelled")], {"status": "incomplete"}),
        ([finished(TurnStatus.FAILED, code="agent_error", message="boom")], {"status": "completed"}),
    ],
)
def test_tool_stopped_while_answer_text_streams_gets_its_output_before_the_open_message_is_done(
    journal_tail: list[TurnEvent], message_done: dict[str, str]
) -> None:
    """§4.4 (the stopped-tool exception), W-4.17, W-4.6: the answer text streamed while the tool still ran, so
    the message item (index 1) was added after the function_call (index 0). The end of the turn closes the
    function_call, adds and closes its `[interrupted]` function_call_output right away at index 2, and only then
    closes the message. Items never move: the terminal output, in output_index order, is fc, message, fco."""
    records = render([RUNNING, start(), TextDelta("Out of budget while the tests ran."), *journal_tail])
    item_records = [(n, p) for n, p, _ in records if n.startswith("response.output_item.")]
    assert [(n.rsplit(".", 1)[-1], p["output_index"], p["item"]["type"]) for n, p in item_records] == [
        ("added", 0, "function_call"),
        ("added", 1, "message"),
        ("done", 0, "function_call"),
        ("added", 2, "function_call_output"),
        ("done", 2, "function_call_output"),
        ("done", 1, "message"),
    ]
    assert names(records)[-7:-1] == [  # the tool pair is closed at once, then the message's own closing events
        "response.output_item.done",
        "response.output_item.added",
        "response.output_item.done",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    output = terminal(records)["output"]
    assert [i["type"] for i in output] == ["function_call", "message", "function_call_output"]
    assert output == [done_items(records)[i] for i in (0, 1, 2)]
    fc, message, fco = output
    assert fc["status"] == "completed"
    assert (fco["output"], fco["status"], fco["call_id"]) == ("[interrupted]", "completed", fc["call_id"])
    assert {k: message[k] for k in message_done} == message_done
    assert ("phase" in message) == ("phase" in message_done)
    assert message["content"][0]["text"] == "Out of budget while the tests ran."


# -- W-4.18: final_answer phase ---------------------------------------------------------------------------------


def test_final_answer_only_on_last_message_closed_by_the_end() -> None:
    """W-4.18: the message closed by the end carries final_answer in done and terminal, not in its added."""
    records = render([RUNNING, TextDelta("Pre-tool text."), start(), complete(), TextDelta("Answer."), finished()])
    finals = [p for p in item_events(records, "response.output_item.done") if p["item"].get("phase") == "final_answer"]
    assert len(finals) == 1
    assert finals[0]["item"]["content"][0]["text"] == "Answer."
    assert all(
        "phase" not in p["item"]
        for p in item_events(records, "response.output_item.added")
        if p["item"]["type"] == "message"
    )
    output = terminal(records)["output"]
    assert [i.get("phase") for i in output if i["type"] == "message"] == [None, "final_answer"]
    assert output[-1]["id"] == finals[0]["item"]["id"]


@pytest.mark.parametrize("status", [TurnStatus.COMPLETED, TurnStatus.INCOMPLETE])
def test_empty_final_message_when_turn_ends_without_open_text(status: TurnStatus) -> None:
    """W-4.18, §4.2: no open text at the end → an empty final message: part added, no delta, text.done ""."""
    records = render([RUNNING, start(), complete(), ReasoningDelta("done thinking"), finished(status)])
    assert names(records)[-7:] == [
        "response.output_item.done",  # the reasoning burst, closed by the end
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed" if status is TurnStatus.COMPLETED else "response.incomplete",
    ]
    final_added = [p for p in item_events(records, "response.output_item.added") if p["item"]["type"] == "message"]
    assert len(final_added) == 1
    message_id = final_added[0]["item"]["id"]
    assert not [p for p in item_events(records, "response.output_text.delta") if p["item_id"] == message_id]
    (text_done,) = [p for p in item_events(records, "response.output_text.done") if p["item_id"] == message_id]
    assert text_done["text"] == ""
    output = terminal(records)["output"]
    assert output[-1] == {
        "id": message_id,
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "phase": "final_answer",
        "content": [{"type": "output_text", "text": "", "annotations": [], "logprobs": []}],
    }
    assert output[-2]["type"] == "reasoning" and output[-2]["status"] == "completed"


def test_text_split_by_reasoning_marks_only_the_last_item() -> None:
    """W-4.18: when reasoning splits the answer, only its last message item carries final_answer."""
    records = render([RUNNING, TextDelta("Part one."), ReasoningDelta("hmm"), TextDelta("Part two."), finished()])
    output = terminal(records)["output"]
    assert [(i["type"], i.get("phase")) for i in output] == [
        ("message", None),
        ("reasoning", None),
        ("message", "final_answer"),
    ]


@pytest.mark.parametrize("status", [TurnStatus.FAILED, TurnStatus.CANCELLED])
def test_no_final_answer_in_failed_or_cancelled_turns(status: TurnStatus) -> None:
    """W-4.18: final_answer only in completed/incomplete turns; no empty message is invented otherwise."""
    records = render([RUNNING, start(), complete(), finished(status, code="x", message="m")])
    assert "final_answer" not in repr(records)
    assert [i["type"] for i in terminal(records)["output"]] == ["function_call", "function_call_output"]


# -- §4.5: item ids ---------------------------------------------------------------------------------------------------


def test_item_ids_are_deterministic_and_formatted() -> None:
    """§4.5: prefix + 24 lowercase hex, unique; the same events and response id give identical records."""
    first = render(TOOL_TURN)
    again = render(TOOL_TURN)
    assert first == again
    output = terminal(first)["output"]
    ids = [i["id"] for i in output]
    assert len(set(ids)) == len(ids)
    for item in output:
        assert ITEM_ID[item["type"]].match(item["id"]), item["id"]
    other = terminal(render(TOOL_TURN, response_id="resp_" + "f" * 32))["output"]
    assert not set(ids) & {i["id"] for i in other}, "ids depend on the response id"


def test_snapshot_while_running_lists_done_items_only() -> None:
    """§4.5: a running snapshot has the done items so far, status in_progress, usage null."""
    renderer = ResponsesRenderer(head())
    renderer.created()
    renderer.render([RUNNING, ReasoningDelta("x"), TextDelta("partial")])
    snapshot = renderer.snapshot()
    assert snapshot["status"] == "in_progress"
    assert [i["type"] for i in snapshot["output"]] == ["reasoning"]
    assert snapshot["usage"] is None


# -- W-4.21: X-Hermes-Tool-Items: off ------------------------------------------------------------------------------


def check_tool_items_off(events: list[TurnEvent]) -> list[tuple[str, dict[str, Any]]]:
    """W-4.21 from event lists alone: the filtered delivery of `events` against the full (stored) one.

    No tool items and no function_call events; sequence numbers and output indexes dense in this delivery;
    every item it shows has exactly the id and content of that item in the full rendering, in the same order.
    """
    full = render(events)
    shown = render(events, tool_items=False)
    assert not [p for _, p, _ in shown if p.get("item", {}).get("type") in TOOL_TYPES]
    assert not [n for n in names(shown) if n.startswith("response.function_call")]
    assert [p["sequence_number"] for _, p, _ in shown] == list(range(len(shown)))
    added = item_events(shown, "response.output_item.added")
    assert [p["output_index"] for p in added] == list(range(len(added)))
    ids_by_index = {p["output_index"]: p["item"]["id"] for p in added}
    for _, payload, _ in shown:
        if "item_id" in payload:
            assert payload["item_id"] == ids_by_index[payload["output_index"]], payload
    stored = [i for i in terminal(full)["output"] if i["type"] not in TOOL_TYPES]
    assert terminal(shown)["output"] == stored, "same items, same ids, same content, same order"
    assert terminal(shown)["output"] == [done_items(shown)[i] for i in sorted(done_items(shown))]
    assert [p["item"]["id"] for p in added] == [i["id"] for i in stored]
    kept = [p for _, p, _ in full if p.get("item", {}).get("type") not in TOOL_TYPES]
    kept = [p for p in kept if not p["type"].startswith("response.function_call")]
    assert [p["type"] for _, p, _ in shown] == [p["type"] for p in kept], "only the tool events are left out"
    return shown


def test_tool_items_off_shows_the_stored_ids_with_dense_numbers() -> None:
    """W-4.21: reasoning, tool pair, commentary, reasoning, answer → four items with their stored ids (the
    answer's id is not the commentary's), indexes 0–3 and one unbroken sequence."""
    shown = check_tool_items_off(TOOL_TURN)
    full_output = terminal(render(TOOL_TURN))["output"]
    output = terminal(shown)["output"]
    assert [(i["type"], i.get("phase")) for i in output] == [
        ("reasoning", None),
        ("message", "commentary"),
        ("reasoning", None),
        ("message", "final_answer"),
    ]
    assert [i["id"] for i in output] == [full_output[k]["id"] for k in (0, 3, 4, 5)]
    answer_deltas = item_events(shown, "response.output_text.delta")
    assert {(p["item_id"], p["output_index"]) for p in answer_deltas} == {(output[3]["id"], 3)}


@pytest.mark.parametrize(
    "events",
    [
        pytest.param(
            [RUNNING, start("a"), start("b"), complete("b", "B"), complete("a", "A"), TextDelta("ok"), finished()],
            id="parallel",
        ),
        pytest.param(
            [RUNNING, start(), TextDelta("Out of budget."), complete(stopped=True), finished(TurnStatus.INCOMPLETE)],
            id="stopped-tool",
        ),
        pytest.param(
            [RUNNING, start(), ReasoningDelta("Hm."), finished(TurnStatus.CANCELLED, code="cancelled")],
            id="cancelled-tool",
        ),
        pytest.param([RUNNING, start(), complete(), finished()], id="only-a-tool"),
    ],
)
def test_tool_items_off_keeps_every_other_item_as_stored(events: list[TurnEvent]) -> None:
    """W-4.21: parallel tools, a tool stopped while the answer streams, a cancelled running tool and a turn that
    was only a tool all keep the other items' stored ids, with dense numbers per delivery."""
    check_tool_items_off(events)


def test_tool_items_off_renders_identically_again_and_in_batches() -> None:
    """W-4.21, §4.6: the filtered delivery is deterministic, so a resume (starting_after) that sends the same
    header continues exactly where the stream it resumes stopped, however the journal is batched."""
    renderer = ResponsesRenderer(head(), tool_items=False)
    batched = renderer.created()
    for event in TOOL_TURN:
        batched += renderer.render([event])
    assert batched == render(TOOL_TURN, tool_items=False)
    assert renderer.snapshot() == terminal(batched)


def test_running_snapshot_with_tool_items_off_lists_done_non_tool_items() -> None:
    """W-4.21, §4.5: a running snapshot of a filtered delivery lists the done items it shows, with stored ids."""
    events = [RUNNING, ReasoningDelta("x"), start(), complete(), TextDelta("partial")]
    full, shown = ResponsesRenderer(head()), ResponsesRenderer(head(), tool_items=False)
    for r in (full, shown):
        r.created()
        r.render(events)
    assert [i["type"] for i in full.snapshot()["output"]] == ["reasoning", "function_call", "function_call_output"]
    assert shown.snapshot()["output"] == full.snapshot()["output"][:1]


def test_stored_object_without_tool_items_keeps_the_rest_unchanged() -> None:
    """W-4.21: a settled stored Response as a GET with the header off shows it: only the tool items go."""
    response = terminal(render(TOOL_TURN))
    shown = without_tool_items(response)
    assert shown == {**response, "output": [i for i in response["output"] if i["type"] not in TOOL_TYPES]}
    assert shown == terminal(render(TOOL_TURN, tool_items=False))
    assert [i["type"] for i in response["output"]].count("function_call") == 1, "the stored object is not changed"
