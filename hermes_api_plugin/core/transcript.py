"""What a settled turn adds to a conversation: user input, assistant tool calls, tool results, answer.

Server-side history (sessions, response chains) is built from these messages, so the agent sees the
tools it ran and their results on later turns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .content import Message, ToolCall, text_message
from .events import TextDelta, ToolCompleted, ToolStarted, TurnEvent, TurnTranscript


def turn_messages(inputs: Sequence[Message], events: Iterable[TurnEvent]) -> list[Message]:
    """The turn's transcript in OpenAI chat order; the final answer carries the turn's reasoning."""
    messages = list(inputs)
    text: list[str] = []
    calls: list[ToolCall] = []
    results: list[Message] = []

    def flush_calls() -> None:
        if calls:
            messages.append(text_message("assistant", "".join(text), tool_calls=tuple(calls)))
            messages.extend(results)
            text.clear()
            calls.clear()
            results.clear()

    transcript = TurnTranscript()  # the reasoning, folded in the same pass
    for event in events:
        transcript.feed(event)
        if isinstance(event, TextDelta):
            if results:  # text after tool results starts a new assistant message
                flush_calls()
            text.append(event.text)
        elif isinstance(event, ToolStarted):
            if results:
                flush_calls()
            calls.append(ToolCall(event.call_id, event.name, event.arguments))
        elif isinstance(event, ToolCompleted):
            output = "[interrupted]" if event.stopped else event.result
            results.append(text_message("tool", output, tool_call_id=event.call_id))
    flush_calls()
    messages.append(text_message("assistant", "".join(text), reasoning=transcript.reasoning))
    return messages
