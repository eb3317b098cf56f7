"""The chat dialect from event lists alone (no server)."""

from __future__ import annotations

import gc
import json
import weakref

import pytest

from hermes_api_plugin.core.events import (
    ApprovalRequested,
    ApprovalResponded,
    Commentary,
    ReasoningDelta,
    TextDelta,
    ToolCallAnswered,
    ToolCallRequested,
    ToolCompleted,
    ToolStarted,
    TurnFinished,
    TurnStatus,
    Usage,
)
from hermes_api_plugin.dialects.chat_completions import (
    MAX_DELTA_CHARS,
    ChatRenderer,
    finish_fields,
)
from hermes_api_plugin.dialects.record import Template
from hermes_api_plugin.http.sse import dumps

START = ToolStarted("call_1", "terminal", '{"command":"ls"}', "ls", "💻", 0.0)


def renderer(progress: bool = True) -> ChatRenderer:
    return ChatRenderer(
        completion_id="chatcmpl-" + "a" * 32, created=1700000000, model="hermes-agent", tool_progress=progress
    )


def test_role_chunk_is_the_only_one_with_role() -> None:
    """W-3.1"""
    r = renderer()
    event, chunk, _ = r.role_chunk()
    assert event is None and chunk["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    records = r.render([ReasoningDelta("x"), TextDelta("y"), START, TurnFinished(TurnStatus.COMPLETED)])
    assert all("role" not in payload["choices"][0]["delta"] for _, payload, _ in records)


def test_reasoning_and_text_chunk_shapes() -> None:
    """W-3.3"""
    records = renderer().render([ReasoningDelta("think"), TextDelta("say")])
    assert records[0][1]["choices"][0]["delta"] == {"content": "", "reasoning_content": "think"}
    assert records[1][1]["choices"][0]["delta"] == {"content": "say"}


def test_a_renderer_is_freed_as_it_goes_without_the_garbage_collector() -> None:
    """Issue 25: its token templates closed over it, a cycle every finished chat stream left to a full collection."""
    r = renderer()
    r.render([ReasoningDelta("think"), TextDelta("say"), TurnFinished(TurnStatus.COMPLETED)])
    gone = weakref.ref(r)
    gc.disable()
    try:
        del r
        assert gone() is None
    finally:
        gc.enable()


def test_an_open_stream_holds_a_token_template_only_for_the_kinds_it_sent() -> None:
    """Issue 25: each template (and its builder) is two objects every full collection walks while the stream is
    open; a stream makes one at its first token of that kind, and the records are those of the template."""

    def templates(r: ChatRenderer) -> int:
        return sum(isinstance(value, Template) for value in vars(r).values())

    r = renderer()
    assert templates(r) == 0
    ((_, first, _),) = r.render([TextDelta("say")])
    ((_, second, _),) = r.render([TextDelta("more")])
    assert templates(r) == 1
    assert [c["choices"][0]["delta"] for c in (first, second)] == [{"content": "say"}, {"content": "more"}]
    ((_, thought, _),) = r.render([ReasoningDelta("think")])
    assert templates(r) == 2 and thought["choices"][0]["delta"] == {"content": "", "reasoning_content": "think"}


def test_finish_chunk_carries_usage_and_empty_delta() -> None:
    """W-3.4"""
    ((_, chunk, _),) = renderer().render([TurnFinished(TurnStatus.COMPLETED, Usage(2, 3))])
    assert chunk["choices"] == [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    assert chunk["usage"] == {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5}
    assert "hermes" not in chunk and "error" not in chunk


@pytest.mark.parametrize(
    ("finished", "partial", "reason", "hermes", "error_code"),
    [
        (
            TurnFinished(TurnStatus.INCOMPLETE, error_code="iteration_budget_exhausted"),
            False,
            "length",
            {"completed": False, "partial": True, "failed": False, "error_code": "iteration_budget_exhausted"},
            None,
        ),
        (
            TurnFinished(TurnStatus.INCOMPLETE, error_code="output_truncated"),
            True,
            "length",
            {"completed": False, "partial": True, "failed": False, "error_code": "output_truncated"},
            None,
        ),
        (
            TurnFinished(TurnStatus.CANCELLED, error_code="cancelled"),
            True,
            "cancelled",
            {"completed": False, "partial": True, "failed": False, "error_code": "cancelled"},
            None,
        ),
        (
            TurnFinished(TurnStatus.FAILED, error_code="agent_error", error_message="boom"),
            False,
            "error",
            {"completed": False, "partial": False, "failed": True, "error_code": "agent_error"},
            "agent_error",
        ),
    ],
)
def test_finish_fields_follow_the_terminal_table(finished, partial, reason, hermes, error_code) -> None:  # type: ignore[no-untyped-def]
    """W-3.7 / §3.6"""
    got_reason, extra = finish_fields(finished, partial)
    assert got_reason == reason
    assert extra["hermes"] == hermes
    if error_code is None:
        assert "error" not in extra
    else:
        assert extra["error"] == {"message": "boom", "type": "server_error", "param": None, "code": error_code}


def test_tool_progress_pair_is_chunk_shaped() -> None:
    """W-3.5"""
    records = renderer().render([START, ToolCompleted("call_1", "terminal", "ok", False, 12)])
    (ev1, running, _), (ev2, done, _) = records
    assert ev1 == ev2 == "hermes.tool.progress"
    for payload in (running, done):
        assert payload["object"] == "chat.completion.chunk"
        assert payload["choices"] == [{"index": 0, "delta": {"content": ""}, "finish_reason": None}]
        assert payload["toolCallId"] == "call_1" and payload["tool"] == "terminal" and payload["emoji"] == "💻"
    assert running["status"] == "running" and "duration_ms" not in running
    assert running["event"] == {"type": "status", "data": {"description": "Running terminal: ls", "done": False}}
    assert done["status"] == "completed" and done["duration_ms"] == 12 and done["is_error"] is False
    assert done["event"]["data"] == {"description": "Ran terminal: ls", "done": True}


def test_failed_and_stopped_tools_say_so() -> None:
    """W-3.13"""
    r = renderer()
    failed = r.render([START, ToolCompleted("call_1", "terminal", "x", True, 1)])[1][1]
    assert failed["event"]["data"]["description"] == "Failed terminal: ls"
    stopped = r.render([START, ToolCompleted("call_1", "terminal", "[interrupted]", True, 1, stopped=True)])[1][1]
    assert stopped["is_error"] is True
    assert stopped["event"]["data"] == {"description": "Stopped terminal: ls", "done": True}


def test_tool_progress_off_and_orphans_render_nothing() -> None:
    """W-3.6"""
    assert renderer(progress=False).render([START, ToolCompleted("call_1", "terminal", "ok", False, 1)]) == []
    assert renderer().render([ToolCompleted("call_9", "terminal", "ok", False, 1)]) == []


def test_commentary_is_not_sent_on_chat() -> None:
    assert renderer().render([Commentary("Listed the files.")]) == []


def test_long_deltas_are_split_and_payloads_stay_under_64k() -> None:
    """§2.2: chat data payloads are at most 65 536 characters, even for escaped control characters."""
    text = "\x01" * (MAX_DELTA_CHARS * 2 + 5)
    records = renderer().render([ReasoningDelta(text), TextDelta(text)])
    assert len(records) == 6
    assert all(len(dumps(payload)) <= 65536 for _, payload, _ in records)
    joined = "".join(p["choices"][0]["delta"].get("reasoning_content", "") for _, p, _ in records)
    assert joined == text


def test_completion_body_matches_the_stream() -> None:
    """W-3.8 / W-3.14: reasoning joined by bursts, content after the last tool, same finish."""
    events = [
        ReasoningDelta("a"),
        START,
        ToolCompleted("call_1", "terminal", "ok", False, 1),
        ReasoningDelta("b"),
        TextDelta("answer"),
        TurnFinished(TurnStatus.COMPLETED, Usage(1, 2)),
    ]
    stream = renderer()
    records = stream.render(events)
    streamed = "".join(p["choices"][0]["delta"].get("reasoning_content", "") for e, p, _ in records if e is None)
    body = renderer()
    body.transcript.feed_all(events)
    completion = body.completion()
    assert completion["object"] == "chat.completion"
    assert completion["choices"][0]["message"] == {
        "role": "assistant",
        "content": "answer",
        "reasoning_content": streamed,
    }
    assert completion["choices"][0]["finish_reason"] == "stop"
    assert json.loads(dumps(completion)) == completion


def test_completion_omits_reasoning_key_without_reasoning() -> None:
    """W-3.8: message.reasoning_content omitted when the turn emitted no reasoning."""
    r = renderer()
    r.transcript.feed_all([TextDelta("x"), TurnFinished(TurnStatus.COMPLETED)])
    assert "reasoning_content" not in r.completion()["choices"][0]["message"]


def test_client_tool_calls_end_the_delivery_as_openai_streams_them() -> None:
    """§15.2: the calls the agent made together, each `index`/`id`/`name` first and its arguments in pieces, then
    `finish_reason: tool_calls`; events after the request are not this delivery's; the JSON body says the same."""
    long_args = '{"q":"' + "x" * (MAX_DELTA_CHARS + 10) + '"}'
    calls = [ToolCallRequested("call_a", "search", long_args), ToolCallRequested("call_b", "get_weather", "{}")]
    events = [TextDelta("Checking."), *calls, ToolCallAnswered("call_a", "late")]
    chat = renderer()
    records = chat.render(list(events))
    deltas = [r.data["choices"][0]["delta"] for r in records]
    heads = [d["tool_calls"][0] for d in deltas if "tool_calls" in d and "id" in d["tool_calls"][0]]
    assert [(h["index"], h["id"], h["function"]) for h in heads] == [
        (0, "call_a", {"name": "search", "arguments": ""}),
        (1, "call_b", {"name": "get_weather", "arguments": ""}),
    ]
    pieces = [
        (d["tool_calls"][0]["index"], d["tool_calls"][0]["function"]["arguments"])
        for d in deltas
        if "tool_calls" in d and "id" not in d["tool_calls"][0]
    ]
    assert "".join(p for i, p in pieces if i == 0) == long_args and [i for i, _ in pieces] == [0, 0, 1]
    assert records[-1].data["choices"][0]["finish_reason"] == "tool_calls"
    assert records[-1].data["hermes"] == {"completed": False, "suspended": "client_tool", "run_id": None}
    body = renderer()
    body.fold(list(events))
    message = body.completion()["choices"][0]["message"]
    assert message["content"] is None and [c["id"] for c in message["tool_calls"]] == ["call_a", "call_b"]


def test_a_resumed_delivery_knows_the_tools_that_ran_before_it() -> None:
    """A renderer primed with the journal before the answer finishes the tool the approval held (Open WebUI shows
    `Ran terminal: …` after `/approve`) and renders nothing of what it was primed with."""
    asked = ApprovalRequested("ls", "", ("once", "deny"), suspended=True)
    resumed = renderer()
    resumed.prime([START, asked])
    records = resumed.render([ApprovalResponded("once"), ToolCompleted("call_1", "terminal", "ok", False, 5)])
    assert [r.event for r in records] == ["hermes.approval.responded", "hermes.tool.progress", "hermes.tool.progress"]
    assert records[-1].data["event"]["data"]["description"] == "Ran terminal: ls"
    assert resumed.transcript.answer == "" and not resumed.is_paused()
