"""The AgentRuntime protocol and the host side of one agent turn.

A runtime executes an `AgentTurn` and reports through `turn.callbacks`: the turn's own sink, attached when the
turn is built (the registry builds it) and fixed for its life. `drive_turn` is how a host runs a turn: start
hook, execution, end hook, in that order. The hooks only let plugins observe the turn: nothing a plugin does
there reaches the callbacks, and a plugin that raises is logged, not the turn's end (issue 21, part 5).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..core.client_tools import CHOOSE_AUTO, ClientTool, ToolChoice
from ..core.content import Message
from ..core.events import TurnStatus, Usage
from .host_data import HostData

if TYPE_CHECKING:
    from ..store.roles import SessionStore

ReasoningCallback = Callable[[str], None]
TextCallback = Callable[["str | None"], None]  # None marks the end of a streamed segment; ignored
ToolStartCallback = Callable[["str | None", str, Any], None]  # call_id, name, arguments
ToolCompleteCallback = Callable[["str | None", str, Any, bool], None]  # call_id, name, result, is_error
InterimCallback = Callable[[str, bool], None]  # text, already_streamed
CompactionCallback = Callable[[str], None]  # summary of the archived turns
ApprovalCallback = Callable[[str, str, "tuple[str, ...]"], None]  # redacted command, description, choices

log = logging.getLogger("hermes_api_plugin")


@dataclass(frozen=True)
class TurnRequest:
    """Everything a runtime needs to run one turn."""

    turn_id: str
    session_id: str
    input: Message
    history: tuple[Message, ...] = ()
    system_prompt: str | None = None
    model: str | None = None
    provider: str | None = None
    model_options: Mapping[str, Any] = field(default_factory=dict)
    reasoning_enabled: bool = True
    reasoning_effort: str | None = None
    commentary_enabled: bool = True  # display.[platforms.api_server.]interim_assistant_messages
    max_iterations: int = 90
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # X-Hermes-Session-Key (WIRE.md §1.6): the agent's session key, memory and approval scope; None: the session
    session_key: str | None = None
    # the Hermes profile the turn runs in (`/p/{profile}/…`, WIRE §14.3): its home; None: the gateway's own
    profile_home: Path | None = None
    # the credential scope that admitted the turn (WIRE §1.3): only it may see, follow, stop or approve the run
    scope: str = ""
    # the function tools the client lends the agent for this turn, and its tool_choice (WIRE §15.2, §15.3)
    client_tools: tuple[ClientTool, ...] = ()
    tool_choice: ToolChoice = CHOOSE_AUTO
    # WIRE §14.2 / §15.2: an approval holds the turn's open stream (`api_server.approvals.chat: hold`,
    # `X-Hermes-Approvals: hold`) instead of suspending the turn for an answer in the client's dialect
    hold_approvals: bool = False


@dataclass(frozen=True)
class TurnResult:
    """How a runtime says a turn ended."""

    status: TurnStatus
    final_text: str | None = None  # the final answer as the agent returned it (may not have been streamed)
    usage: Usage = field(default_factory=Usage)
    error_code: str | None = None
    error_message: str | None = None


@dataclass(frozen=True)
class CompactionRequest:
    """A conversation to summarise (POST /v1/responses/compact, WIRE.md §16): no turn, no session, no tools."""

    messages: tuple[Message, ...]
    system_prompt: str | None = None  # the conversation's instructions: context for the summariser
    model: str | None = None
    provider: str | None = None
    profile_home: Path | None = None  # the Hermes profile it is made in (WIRE §14.3); None: the gateway's own


@dataclass(frozen=True)
class Compaction:
    """A runtime's summary of a conversation: what the agent continues from instead of it."""

    summary: str
    usage: Usage = field(default_factory=Usage)


class CompactionFailed(Exception):
    """The summariser failed (its model provider refused, failed or was unreachable): the message says why."""


class TurnSink(Protocol):
    """The receiving end of a turn's callbacks (turns/callback_sink.py's `CallbackSink`; the registry closes it at
    the end)."""

    def on_reasoning(self, text: str) -> None: ...
    def on_text(self, text: str | None) -> None: ...
    def on_tool_start(self, call_id: str | None, name: str, arguments: Any) -> None: ...
    def on_tool_complete(self, call_id: str | None, name: str, result: Any, is_error: bool) -> None: ...
    def on_commentary(self, text: str, already_streamed: bool) -> None: ...
    def on_compaction(self, summary: str) -> None: ...
    def on_approval_request(self, command: str, description: str, choices: tuple[str, ...]) -> None: ...
    def on_approval_response(self, choice: str) -> None: ...


class TurnCallbacks:
    """The callbacks a runtime calls during one turn: the turn's sink, with the request's opt-outs applied.

    Each is its sink's method, bound when read rather than held: eight bound methods kept for the turn's whole life
    were eight more objects every full garbage collection walks per open stream (issue 25). A runtime that calls one
    often reads it once (`ScriptedRuntime.stream`, Hermes' callbacks installed on the agent).
    """

    __slots__ = ("_commentary", "_reasoning", "_sink")

    def __init__(self, sink: TurnSink, reasoning: bool, commentary: bool) -> None:
        self._sink = sink
        self._reasoning = reasoning
        self._commentary = commentary

    @classmethod
    def of(cls, sink: TurnSink, request: TurnRequest) -> TurnCallbacks:
        return cls(sink, request.reasoning_enabled, request.commentary_enabled)

    @property
    def text(self) -> TextCallback:
        return self._sink.on_text

    @property
    def tool_start(self) -> ToolStartCallback:
        return self._sink.on_tool_start

    @property
    def tool_complete(self) -> ToolCompleteCallback:
        return self._sink.on_tool_complete

    @property
    def compaction(self) -> CompactionCallback:
        return self._sink.on_compaction

    @property
    def approval_request(self) -> ApprovalCallback:
        return self._sink.on_approval_request

    @property
    def approval_response(self) -> Callable[[str], None]:
        return self._sink.on_approval_response

    @property
    def reasoning(self) -> ReasoningCallback | None:
        """None: reasoning opted out per request (W-10.1): nothing to report it to."""
        return self._sink.on_reasoning if self._reasoning else None

    @property
    def commentary(self) -> InterimCallback | None:
        """None: interim assistant messages are off (§10.3)."""
        return self._sink.on_commentary if self._commentary else None


class ApprovalGate(Protocol):
    """A running turn's pending approvals, as its runtime exposes them (WIRE.md §14.2)."""

    def resolve(self, choice: str, resolve_all: bool) -> int:
        """Decide the oldest pending request (every one with `resolve_all`); how many were decided."""
        ...


class Suspender(Protocol):
    """Where a runtime suspends its turn until the client answers (WIRE.md §15.1): the request is journaled, the
    turn waits (bounded by `api_server.turns.suspend_seconds`), and the answer — or the negative resolution on
    timeout, stop or drain — is journaled before the call returns. Called on the event loop."""

    async def approval(self, command: str, description: str, choices: tuple[str, ...]) -> str:
        """Ask for a decision on a dangerous command (`command` already redacted): the choice, `deny` when none
        came. A command never runs on anything but an explicit approval."""
        ...

    async def question(self, question: str, choices: tuple[str, ...] = ()) -> str | None:
        """Ask the client a question: its answer, None when none came."""
        ...

    async def tool_call(self, call_id: str, name: str, arguments: str) -> str | None:
        """Call a tool the client declared (`arguments`: JSON text): its output, None when none came (the agent
        sees the tool fail)."""
        ...


class Unanswerable:
    """The Suspender of a turn no client can answer (a runtime driven without a registry): every request resolves
    negatively at once, unjournaled."""

    async def approval(self, command: str, description: str, choices: tuple[str, ...]) -> str:
        return "deny"

    async def question(self, question: str, choices: tuple[str, ...] = ()) -> str | None:
        return None

    async def tool_call(self, call_id: str, name: str, arguments: str) -> str | None:
        return None


class AgentTurn:
    """One agent execution: its request, the callbacks of its sink, its suspender and its interrupt switch.

    Callbacks may be invoked from any thread. `interrupt()` is thread-safe and idempotent.
    """

    def __init__(self, request: TurnRequest, sink: TurnSink, suspender: Suspender | None = None) -> None:
        self.request = request
        # Attached here, by whoever builds the turn, rather than installed by a hook: a pluggy hook has one
        # slot per callback, which a second plugin implementing it would overwrite (or be overwritten in).
        self._callbacks = TurnCallbacks.of(sink, request)
        self._suspender: Suspender = suspender if suspender is not None else Unanswerable()
        # Set by a runtime that can wait for approvals, while the turn runs; None: no approval can be pending
        self.approvals: ApprovalGate | None = None
        # A flag under `_lock`, not a threading.Event: nothing waits on it (listeners are called), and an Event is
        # eight objects (its condition, lock, waiters, bound methods) every full garbage collection walks per turn.
        self._interrupted = False
        self._listeners: list[Callable[[], None]] = []
        self._released = False
        self._lock = threading.Lock()

    @property
    def callbacks(self) -> TurnCallbacks:
        """Where the runtime reports the turn's events (read-only: fixed when the turn was built)."""
        return self._callbacks

    @property
    def suspensions(self) -> Suspender:
        """Where the runtime suspends the turn for the client's answer (fixed when the turn was built)."""
        return self._suspender

    @property
    def interrupted(self) -> bool:
        return self._interrupted

    def on_interrupt(self, listener: Callable[[], None]) -> None:
        """Register a function called once when the turn is interrupted (at once if it already was)."""
        with self._lock:
            if self._released:
                return
            if not self._interrupted:
                self._listeners.append(listener)
                return
        listener()

    def interrupt(self) -> None:
        with self._lock:
            if self._interrupted:
                return
            self._interrupted = True
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener()

    def release(self) -> None:
        """The turn has settled: drop its interrupt listeners. They close over the runtime's state of this turn
        (the scripted playback and its final answer, the Hermes agent handle), which a settled turn kept for
        as long as it stayed readable; and a late interrupt (a client leaving after the end) must not reach an
        agent that may be running the conversation's next turn by then."""
        with self._lock:
            self._released = True
            self._listeners = []


class AgentRuntime(Protocol):
    """The one interface to "the agent"."""

    name: str  # "scripted" | "hermes": advertised as metadata.runtime
    host_data: HostData | None  # the host agent's own data (skills, toolsets, inventory, health); None: it has none

    def providers(self) -> frozenset[str]:
        """Provider names a request may select with `provider`."""
        ...

    async def run(self, turn: AgentTurn) -> TurnResult:
        """Execute the turn, reporting through `turn.callbacks`; return promptly after `interrupt()`."""
        ...

    async def compact(self, request: CompactionRequest) -> Compaction:
        """Summarise a conversation (WIRE.md §16); CompactionFailed when the summariser's model call fails. Runs off
        the event loop when it blocks; cancelling the await abandons it."""
        ...

    async def model_inventory(self, refresh: bool) -> list[dict[str, Any]] | None:
        """The host's curated model list (§8.2 entry shape), or None when it has none. `refresh` probes
        every endpoint instead of the cached list."""
        ...

    def session_store(self, profile_home: Path | None = None) -> SessionStore | None:
        """The host's own session store when the agent keeps its sessions there itself (Hermes' SessionDB,
        WIRE §14.1): `/api/sessions` and session history then use it. None: the plugin's own session tables.
        `profile_home`: the store of that multiplexed profile (WIRE §14.3) rather than the gateway's own."""
        ...

    def forget_conversation(self, session_id: str, profile_home: Path | None = None) -> None:
        """The session was deleted: drop whatever the runtime keeps for it (the hermes runtime's warm agent)."""
        ...

    def warm_agents(self) -> Mapping[str, Any] | None:
        """The warm agents' numbers (`/health/detailed` `api_server.agents`, JSON values); None for a runtime that
        keeps none."""
        ...

    async def close(self) -> None: ...


class TurnHooks(Protocol):
    """The pluggy hook relay subset a host calls around a turn."""

    def hermes_api_agent_turn_start(self, *, turn: AgentTurn) -> Any: ...
    def hermes_api_agent_turn_end(self, *, turn: AgentTurn, outcome: TurnResult) -> Any: ...


async def drive_turn(runtime: AgentRuntime, turn: AgentTurn, hooks: TurnHooks) -> TurnResult:
    """Run one turn with the observation hooks around it; runtime crashes become a failed outcome."""
    try:
        hooks.hermes_api_agent_turn_start(turn=turn)
    except Exception:  # an observer's bug is not the turn's: it runs and streams as without that plugin
        log.exception("[API Server] a plugin's hermes_api_agent_turn_start failed on turn %s", turn.request.turn_id)
    try:
        outcome = await runtime.run(turn)
    except Exception as exc:
        outcome = TurnResult(TurnStatus.FAILED, error_code="agent_error", error_message=f"Agent runtime error: {exc}")
    if not outcome.status.terminal:
        outcome = TurnResult(
            TurnStatus.FAILED, error_code="agent_error", error_message=f"Agent runtime ended in {outcome.status.value}"
        )
    try:
        hooks.hermes_api_agent_turn_end(turn=turn, outcome=outcome)
    except Exception:
        log.exception("[API Server] a plugin's hermes_api_agent_turn_end failed on turn %s", turn.request.turn_id)
    return outcome
