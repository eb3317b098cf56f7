"""The Responses dialect's hosted mode from event lists alone (no server): the server's own tools as `mcp_call`
items streamed with OpenAI's MCP call events (WIRE.md §15.3, W-15.3)."""

from __future__ import annotations

from typing import Any

from hermes_api_plugin.core.events import (
    Commentary,
    ReasoningDelta,
    TextDelta,
    ToolCompleted,
    TurnEvent,
    TurnStatus,
    Usage,
)
from hermes_api_plugin.dialects.responses import ResponsesRenderer, item_id, without_tool_items

from .support import RESPONSE_ID, RUNNING, complete, done_items, finished, head, names, render, start, terminal

TOOL_TURN: list[TurnEvent] = [
    RUNNING,
    ReasoningDelta("I should look at the files."),
    start(),
    complete(),
    Commentary("Listed the files."),
    TextDelta("Your project has README.md."),
    finished(usage=Usage(42, 17)),
]
HOSTED_TOOL_EVENTS = [
    "response.output_item.added",
    "response.mcp_call.in_progress",
    "response.mcp_call_arguments.delta",
    "response.mcp_call_arguments.done",
    "response.mcp_call.completed",
    "response.output_item.done",
]


def tool_records(records: list[Any], index: int) -> list[tuple[str, dict[str, Any]]]:
    return [(name, payload) for name, payload, _ in records if payload.get("output_index") == index]


def test_hosted_mode_renders_no_server_tool_as_a_function_call() -> None:
    """W-15.3: with client tools declared (hosted mode), no server tool is rendered as a function_call: each is
    one mcp_call item, in the stream and in the terminal output, and no function_call event is emitted."""
    records = render(TOOL_TURN, hosted=True)
    types = [i["type"] for i in terminal(records)["output"]]
    assert types == ["reasoning", "mcp_call", "message", "message"]
    assert not [n for n in names(records) if "function_call" in n]
    assert all(p.get("item", {}).get("type") not in ("function_call", "function_call_output") for _, p, _ in records)


def test_hosted_tool_is_one_mcp_call_item_streamed_with_the_mcp_call_events() -> None:
    """§15.3: added (arguments still empty, output and error null) → mcp_call.in_progress → one arguments delta →
    arguments done → mcp_call.completed → done with the output; the item carries id, server_label "hermes",
    name, arguments, output, error and status."""
    records = render(TOOL_TURN, hosted=True)
    index = 1
    events = tool_records(records, index)
    assert [name for name, _ in events] == HOSTED_TOOL_EVENTS
    mid = item_id("mcp", RESPONSE_ID, index)
    added, in_progress, delta, args_done, completed, done = (p for _, p in events)
    assert added["item"] == {
        "id": mid,
        "type": "mcp_call",
        "status": "in_progress",
        "server_label": "hermes",
        "name": "terminal",
        "arguments": "",
        "output": None,
        "error": None,
    }
    for payload in (in_progress, delta, args_done, completed):
        assert (payload["item_id"], payload["output_index"]) == (mid, index)
    assert delta["delta"] == args_done["arguments"] == '{"command":"ls"}'
    assert done["item"] == {
        **added["item"],
        "status": "completed",
        "arguments": '{"command":"ls"}',
        "output": "README.md",
    }
    assert terminal(records)["output"][index] == done["item"]
    seqs = [p["sequence_number"] for _, p, _ in records]
    assert seqs == list(range(len(records)))


def test_hosted_tool_that_reports_an_error_fails_with_its_output_as_the_error() -> None:
    """§15.3: a tool that reported an error ends with response.mcp_call.failed and status failed; its result is
    both the output and the error."""
    failing = ToolCompleted("call_1", "terminal", "permission denied", True, 5)
    records = render([RUNNING, start(), failing, finished()], hosted=True)
    events = tool_records(records, 0)
    assert [n for n, _ in events][-2:] == ["response.mcp_call.failed", "response.output_item.done"]
    item = events[-1][1]["item"]
    assert (item["status"], item["output"], item["error"]) == ("failed", "permission denied", "permission denied")


def test_hosted_tool_stopped_by_the_end_of_the_turn_is_incomplete_before_the_terminal() -> None:
    """§15.3 with §4.4: a tool still running when the turn is cancelled is done `incomplete` with output
    "[interrupted]" (response.mcp_call.failed) before the terminal event; nothing is left open."""
    records = render([RUNNING, start(), finished(TurnStatus.CANCELLED)], hosted=True)
    assert names(records)[-3:] == ["response.mcp_call.failed", "response.output_item.done", "response.cancelled"]
    (item,) = terminal(records)["output"]
    assert (item["type"], item["status"], item["output"], item["error"]) == (
        "mcp_call",
        "incomplete",
        "[interrupted]",
        None,
    )


def test_hosted_tool_output_is_truncated_like_a_function_call_output() -> None:
    """§4.2's `tool_output_max_chars` applies to the mcp_call output too."""
    records = render([RUNNING, start(), complete(result="x" * 30), finished()], hosted=True, tool_output_max_chars=10)
    assert done_items(records)[0]["output"] == "x" * 10 + "…[truncated 20 chars]"


def test_hosted_parallel_tools_each_get_their_own_item() -> None:
    """Parallel server tools: one mcp_call item each, done in completion order, ids by stored index."""
    events = [RUNNING, start("a"), start("b", arguments="{}"), complete("b"), complete("a"), finished()]
    records = render(events, hosted=True)
    output = terminal(records)["output"]
    assert [(i["type"], i["id"]) for i in output[:2]] == [
        ("mcp_call", item_id("mcp", RESPONSE_ID, 0)),
        ("mcp_call", item_id("mcp", RESPONSE_ID, 1)),
    ]
    assert [i["arguments"] for i in output[:2]] == ['{"command":"ls"}', "{}"]


def test_hosted_rendering_is_identical_again_and_in_batches() -> None:
    """Replays and GET re-render the journal: the same records whether rendered at once or event by event."""
    whole = render(TOOL_TURN, hosted=True)
    r = ResponsesRenderer(head(), hosted=True)
    pieces = r.created()
    for event in TOOL_TURN:
        pieces += r.render([event])
    assert pieces == whole


def test_tool_items_off_hides_the_mcp_call_items_too() -> None:
    """X-Hermes-Tool-Items: off on a hosted response: no mcp_call item or event, dense numbers, stored ids."""
    full = render(TOOL_TURN, hosted=True)
    filtered = render(TOOL_TURN, hosted=True, tool_items=False)
    assert not [n for n in names(filtered) if "mcp_call" in n]
    assert [p["sequence_number"] for _, p, _ in filtered] == list(range(len(filtered)))
    assert terminal(filtered)["output"] == without_tool_items(terminal(full))["output"]
    assert [i["type"] for i in terminal(filtered)["output"]] == ["reasoning", "message", "message"]


def test_the_default_mode_still_renders_the_function_call_pair() -> None:
    """§4.2: without hosted mode the server's tool is the function_call + function_call_output pair."""
    types = [i["type"] for i in terminal(render(TOOL_TURN))["output"]]
    assert types == ["reasoning", "function_call", "function_call_output", "message", "message"]
