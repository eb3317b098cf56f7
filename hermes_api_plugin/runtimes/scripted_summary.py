"""The scripted runtime's compaction summary (WIRE.md §16): deterministic, derived from the conversation alone — each
message's role and its first words, a tool call's name — so that tests and offline demos can assert what a
compaction carried forward. It never pretends to be a model's summary: it says it is scripted.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.content import Message
from ..core.events import Usage
from .base import Compaction

FIRST_WORDS = 8  # words kept of each message


def _first_words(text: str) -> str:
    words = text.split()
    return " ".join(words[:FIRST_WORDS]) + (" …" if len(words) > FIRST_WORDS else "")


def _line(message: Message) -> str:
    if message.tool_calls:
        called = ", ".join(call.name for call in message.tool_calls)
        said = _first_words(message.text)
        return f"- {message.role} called {called}" + (f": {said}" if said else "")
    images = f" [{len(message.images)} image(s)]" if message.images else ""
    return f"- {message.role}: {_first_words(message.text)}{images}"


def scripted_summary(messages: Sequence[Message], system_prompt: str | None = None) -> Compaction:
    """The summary of `messages`: a header, the instructions' first words when given, one line per message. Its
    usage counts words: the conversation's in, the summary's out."""
    lines = [f"Scripted summary of {len(messages)} message(s):"]
    if system_prompt:
        lines.append(f"- instructions: {_first_words(system_prompt)}")
    lines += [_line(m) for m in messages]
    summary = "\n".join(lines)
    words_in = sum(len(m.text.split()) for m in messages) + len((system_prompt or "").split())
    return Compaction(summary, Usage(words_in, len(summary.split())))
