"""runtimes/base.py: the callbacks a runtime reports a turn's events to."""

from __future__ import annotations

import gc
import inspect
from dataclasses import replace

import pytest

from hermes_api_plugin.core.content import Message, TextPart
from hermes_api_plugin.runtimes.base import AgentTurn, TurnRequest
from tests.helpers import RecordingSink

REQUEST = TurnRequest(turn_id="run_t", session_id="s", input=Message("user", (TextPart("hi"),)))


def test_a_turns_callbacks_are_its_sinks_methods_bound_when_read_never_held() -> None:
    """Issue 25: eight bound methods held for a turn's whole life were eight more objects every full garbage
    collection walked per open stream; the callbacks hold the sink and the request's two opt-outs only."""
    sink = RecordingSink()
    callbacks = AgentTurn(REQUEST, sink).callbacks
    assert [o for o in gc.get_referents(callbacks) if inspect.ismethod(o)] == []
    callbacks.text("a")
    callbacks.tool_start("c1", "terminal", {"command": "ls"})
    callbacks.tool_complete("c1", "terminal", "ok", False)
    callbacks.compaction("summary")
    callbacks.approval_request("rm -rf x", "dangerous", ("once", "deny"))
    callbacks.approval_response("deny")
    assert callbacks.reasoning is not None and callbacks.commentary is not None
    callbacks.reasoning("thinking")
    callbacks.commentary("aside", False)
    assert [call[0] for call in sink.calls] == [
        "text",
        "tool_start",
        "tool_complete",
        "compaction",
        "approval_request",
        "approval_response",
        "reasoning",
        "commentary",
    ]


@pytest.mark.parametrize("reasoning", [True, False])
@pytest.mark.parametrize("commentary", [True, False])
def test_an_opted_out_kind_has_no_callback(reasoning: bool, commentary: bool) -> None:
    """W-10.1 and §10.3: reasoning opted out per request, interim messages turned off: nothing to report them to."""
    request = replace(REQUEST, reasoning_enabled=reasoning, commentary_enabled=commentary)
    callbacks = AgentTurn(request, RecordingSink()).callbacks
    assert (callbacks.reasoning is not None, callbacks.commentary is not None) == (reasoning, commentary)
