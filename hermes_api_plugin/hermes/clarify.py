"""Hermes' `clarify` questions in one API turn (WIRE.md §15.1, §15.5): the agent's `clarify_callback`.

Hermes' `clarify` tool calls `AIAgent.clarify_callback(question, choices)` on the agent's worker thread and hands
the agent whatever string it returns (`tools/clarify_tool.py`; `choices` already flattened to at most four strings,
or None). The turn asks its client instead of a chat platform: the callback suspends the turn with the question
(`ask`, which blocks until the answer or its negative resolution), maps a typed choice number or a choice's text to
that choice as Hermes' messaging gateway does (`tools/clarify_gateway.py`), and when no answer came returns the
gateway's own "no answer" text, so the agent adapts as it would on a messaging platform.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Ask = Callable[[str, "tuple[str, ...]"], "str | None"]  # question, choices → the answer; None: none came


def choice_answer(answer: str, choices: Sequence[str]) -> str:
    """The answer as the agent gets it: `2` or a choice's text (any case) is that choice, anything else as typed."""
    text = answer.strip()
    if not choices:
        return text
    if text.isdigit() and 1 <= int(text) <= len(choices):
        return choices[int(text) - 1]
    for choice in choices:
        if text.casefold() == choice.strip().casefold():
            return choice.strip()
    return text


def no_answer(wait_s: float) -> str:
    """What Hermes' gateway tells the agent when the user did not answer (gateway/run.py's clarify callback)."""
    return f"[user did not respond within {int(wait_s / 60)}m]"


def clarify_callback(ask: Ask, wait_s: float) -> Callable[..., str]:
    """The `clarify_callback` of one turn: each question suspends the turn until its client answers (`ask`)."""

    def clarify(question: Any, choices: Any = None) -> str:
        offered = tuple(str(c) for c in choices) if isinstance(choices, (list, tuple)) else ()
        answer = ask(str(question), offered)
        if answer is None or not answer.strip():
            return no_answer(wait_s)
        return choice_answer(answer, offered)

    return clarify
