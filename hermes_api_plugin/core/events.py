"""The turn event vocabulary: what an agent turn reports, as frozen values.

Journals hold these; dialects render them. No I/O and no aiohttp here.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union, get_args


class TurnStatus(str, enum.Enum):
    """Lifecycle of a turn. The last four are terminal and recorded exactly once."""

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    INCOMPLETE = "incomplete"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL


_TERMINAL = frozenset({TurnStatus.COMPLETED, TurnStatus.INCOMPLETE, TurnStatus.FAILED, TurnStatus.CANCELLED})


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A non-empty piece of the model's reasoning (empty deltas never reach a journal)."""

    text: str


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A non-empty piece of answer text streamed by the agent."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolStarted:
    """A server-side tool began. Ids and names are already normalised by the callback sink (turns/callback_sink.py)."""

    call_id: str
    name: str
    arguments: str  # JSON string
    label: str
    emoji: str
    started_at: float  # loop time, for duration of tools stopped by the end of the turn


@dataclass(frozen=True, slots=True)
class ToolCompleted:
    call_id: str
    name: str
    result: str
    is_error: bool
    duration_ms: int
    stopped: bool = False  # the end of the turn stopped it (cancel, failure, budget)


@dataclass(frozen=True, slots=True)
class Commentary:
    """Interim assistant text beside tool calls; `already_streamed` when it also came as TextDelta."""

    text: str
    already_streamed: bool = False


@dataclass(frozen=True, slots=True)
class Compacted:
    """The agent compacted its context: earlier turns are archived behind `summary`."""

    summary: str


@dataclass(frozen=True, slots=True)
class ApprovalRequested:
    """The agent waits for a decision on a flagged command (WIRE.md §14.2); `command` is already redacted.

    `suspended`: the turn is suspended for it (WIRE.md §15.1: the run `requires_action`, the answer may come in the
    client's dialect) rather than held (§14.2's open stream, `waiting_for_approval`)."""

    command: str
    description: str
    choices: tuple[str, ...]
    suspended: bool = False


@dataclass(frozen=True, slots=True)
class ApprovalResponded:
    """The decision on the oldest unanswered ApprovalRequested of the turn (FIFO, as Hermes resolves them)."""

    choice: str


@dataclass(frozen=True, slots=True)
class QuestionAsked:
    """The agent asks the client a question (Hermes' `clarify`) and the turn is suspended for the answer (WIRE.md
    §15.1); `choices` are the options it offers, if any."""

    question: str
    choices: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class QuestionAnswered:
    """The answer to the oldest unanswered QuestionAsked of the turn; None: no answer (timeout, stop, drain, the
    conversation moved on)."""

    answer: str | None


@dataclass(frozen=True, slots=True)
class ToolCallRequested:
    """The agent called a tool its client declared (WIRE.md §15.2, §15.3): the turn is suspended until the client
    returns the call's output. `arguments` is the JSON text the agent produced."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolCallAnswered:
    """The client's output of its tool call `call_id`; None: none came (timeout, stop, drain, the conversation moved
    on) and the agent sees the tool fail."""

    call_id: str
    output: str | None


@dataclass(frozen=True, slots=True)
class StatusChanged:
    """The turn left the queue and started running."""

    status: TurnStatus


@dataclass(frozen=True, slots=True)
class TurnFinished:
    """The single terminal record of a turn."""

    status: TurnStatus
    usage: Usage = field(default_factory=Usage)
    error_code: str | None = None  # iteration_budget_exhausted, output_truncated, cancelled, agent_error, ...
    error_message: str | None = None
    # When it was journaled (epoch seconds): the journal sets it from the record's stamp, a stored journal from its
    # row's. Not part of the record's value: the same outcome recorded twice is the same record.
    at: float | None = field(default=None, compare=False)


TurnEvent = Union[
    ReasoningDelta,
    TextDelta,
    ToolStarted,
    ToolCompleted,
    Commentary,
    Compacted,
    ApprovalRequested,
    ApprovalResponded,
    QuestionAsked,
    QuestionAnswered,
    ToolCallRequested,
    ToolCallAnswered,
    StatusChanged,
    TurnFinished,
]

ClientRequest = Union[ApprovalRequested, QuestionAsked, ToolCallRequested]  # what a turn can wait for from its client
ClientAnswer = Union[ApprovalResponded, QuestionAnswered, ToolCallAnswered]  # the answers, in the journal


def unanswered_requests(events: Iterable[TurnEvent]) -> list[ClientRequest]:
    """The approval requests, questions and client tool calls of a journal still waiting for their answer, oldest
    first. A tool call's output pairs with its call id; the other answers with the oldest unanswered request of their
    kind (FIFO, as Hermes resolves them)."""
    waiting: list[ClientRequest] = []
    for event in events:
        if isinstance(event, (ApprovalRequested, QuestionAsked, ToolCallRequested)):
            waiting.append(event)
        elif isinstance(event, ToolCallAnswered):
            for i, asked in enumerate(waiting):
                if isinstance(asked, ToolCallRequested) and asked.call_id == event.call_id:
                    del waiting[i]
                    break
        elif isinstance(event, (ApprovalResponded, QuestionAnswered)):
            kind = ApprovalRequested if isinstance(event, ApprovalResponded) else QuestionAsked
            for i, asked in enumerate(waiting):
                if isinstance(asked, kind):
                    del waiting[i]
                    break
    return waiting


def required_action(events: Sequence[TurnEvent]) -> ClientRequest | None:
    """The request a suspended turn waits for (WIRE.md §15.1): its oldest unanswered question, client tool call or
    suspended approval; None when the turn is not suspended (a held approval, §14.2, is not a suspension)."""
    for asked in unanswered_requests(events):
        if suspends(asked):
            return asked
    return None


def resume_position(events: Sequence[TurnEvent]) -> int:
    """The journal position a delivery resuming a suspended turn begins at: just after the oldest request it waits for
    (and the client tool calls the agent made together with it), where the delivery before ended; the end when it
    waits for nothing."""
    asked = required_action(events)
    if asked is None:
        return len(events)
    at = next(i for i in range(len(events) - 1, -1, -1) if events[i] is asked) + 1
    if isinstance(asked, ToolCallRequested):
        while at < len(events) and isinstance(events[at], ToolCallRequested):
            at += 1
    return at


def waiting_calls(events: Sequence[TurnEvent]) -> tuple[str, ...]:
    """The call ids of a journal's client tool calls still waiting for their output, oldest first."""
    return tuple(a.call_id for a in unanswered_requests(events) if isinstance(a, ToolCallRequested))


def suspends(event: TurnEvent) -> bool:
    """Whether the event is a request that suspends its turn (WIRE.md §15.1): a delivery in the client's dialect ends
    with it, and the client's next request answers it. A held approval (§14.2) does not."""
    if isinstance(event, ApprovalRequested):
        return event.suspended
    return isinstance(event, (QuestionAsked, ToolCallRequested))


def negative_answer(asked: ClientRequest) -> ClientAnswer:
    """The answer a request gets when none came (WIRE.md §15.1): an approval is denied, a question has no answer, a
    client tool call has no output."""
    if isinstance(asked, ApprovalRequested):
        return ApprovalResponded("deny")
    if isinstance(asked, ToolCallRequested):
        return ToolCallAnswered(asked.call_id, None)
    return QuestionAnswered(None)


def unanswered_approvals(events: Sequence[TurnEvent]) -> list[ApprovalRequested]:
    """The approval requests of a journal still waiting for their decision, oldest first."""
    return [asked for asked in unanswered_requests(events) if isinstance(asked, ApprovalRequested)]


class ApprovalTally:
    """How many approval requests of a growing journal still wait for their decision — `len(unanswered_approvals)` —
    reading only the events appended since it last looked: a metrics scrape asks every running turn, and a turn's
    journal can hold thousands of deltas (issue 25). A decision answers the oldest request waiting (FIFO)."""

    __slots__ = ("_read", "waiting")

    def __init__(self) -> None:
        self._read = 0
        self.waiting = 0

    def update(self, events: Sequence[TurnEvent]) -> int:
        """The count over `events`, the same journal's events as at the last call with any appended since."""
        waiting = self.waiting
        for i in range(self._read, len(events)):
            event = events[i]
            if isinstance(event, ApprovalRequested):
                waiting += 1
            elif isinstance(event, ApprovalResponded) and waiting:
                waiting -= 1
        self._read = len(events)
        self.waiting = waiting
        return waiting


class TurnTranscript:
    """Folds a journal into what every surface agrees on.

    Reasoning bursts are joined with a blank line (each burst after the first starts with `\\n\\n`); the
    final answer is the text after the last tool event (tools stopped by the end of the turn do not
    count; a client tool call is a tool); `any_text` means answer text was delivered.
    """

    __slots__ = ("_answer", "_in_burst", "_reasoning", "any_text", "finished")

    def __init__(self) -> None:
        self._reasoning: list[str] = []
        self._answer: list[str] = []
        self._in_burst = False
        self.any_text = False
        self.finished: TurnFinished | None = None

    def feed(self, event: TurnEvent) -> str | None:
        """Record one event; for reasoning, return the text as it must be emitted (burst separator included)."""
        if isinstance(event, ReasoningDelta):
            text = event.text
            if not self._in_burst:
                self._in_burst = True
                if self._reasoning:
                    text = "\n\n" + text
            self._reasoning.append(text)
            return text
        if isinstance(event, TextDelta):
            self._in_burst = False
            self._answer.append(event.text)
            self.any_text = True
        elif isinstance(event, (ToolStarted, ToolCallRequested)) or (
            isinstance(event, ToolCompleted) and not event.stopped
        ):
            self._in_burst = False
            self._answer.clear()
        elif isinstance(event, (ToolCompleted, Commentary)):
            # a tool the end of the turn stopped, or commentary beside the answer: the answer stands
            self._in_burst = False
        elif isinstance(event, TurnFinished):
            self._in_burst = False
            self.finished = event
        return None

    def feed_all(self, events: Iterable[TurnEvent]) -> TurnTranscript:
        for event in events:
            self.feed(event)
        return self

    @property
    def reasoning(self) -> str | None:
        return "".join(self._reasoning) if self._reasoning else None

    @property
    def answer(self) -> str:
        return "".join(self._answer)


_EVENT_TYPES: dict[str, type] = {cls.__name__: cls for cls in get_args(TurnEvent)}  # the journal's names


def event_to_json(event: TurnEvent) -> dict[str, Any]:
    """A journal event as a JSON object (`t` names the type), for durable journals."""
    if isinstance(event, TurnFinished):
        return {
            "t": "TurnFinished",
            "status": event.status.value,
            "prompt_tokens": event.usage.prompt_tokens,
            "completion_tokens": event.usage.completion_tokens,
            "error_code": event.error_code,
            "error_message": event.error_message,
        }
    if isinstance(event, StatusChanged):
        return {"t": "StatusChanged", "status": event.status.value}
    return {"t": type(event).__name__, **{name: getattr(event, name) for name in event.__slots__}}


def event_from_json(data: dict[str, Any]) -> TurnEvent:
    kind = data["t"]
    if kind == "TurnFinished":
        return TurnFinished(
            TurnStatus(data["status"]),
            Usage(data["prompt_tokens"], data["completion_tokens"]),
            data["error_code"],
            data["error_message"],
        )
    if kind == "StatusChanged":
        return StatusChanged(TurnStatus(data["status"]))
    fields = {k: v for k, v in data.items() if k != "t"}
    if kind in ("ApprovalRequested", "QuestionAsked"):
        fields["choices"] = tuple(fields["choices"])  # a JSON array: the event keeps its tuple
    return _EVENT_TYPES[kind](**fields)
