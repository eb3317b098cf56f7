"""The compat boundary for the tools a client lends a Hermes agent for one turn (WIRE.md §15.2, §15.3, §15.5).

hermes-agent 0.19.0 offers a turn's tools from `AIAgent.tools` (the function schemas of every provider request,
read anew for each request) and accepts a tool call only when its name is in `AIAgent.valid_tool_names`
(`agent/conversation_loop.py`); both are set by `agent/agent_init.py` `init_agent`. A call of a name no built-in
branch claims goes to `run_agent.handle_function_call` (looked up on the module at each call by
`agent/tool_executor.py` and `agent/agent_runtime_helpers.py`, sequential and concurrent alike), which dispatches it
through Hermes' global tool registry.

`lend_tools` appends the client's schemas to the agent's lists for the turn and `return_tools` takes them off again
(warm agents are reused by the conversation's next turn: it must not keep them). The calls reach the client through
a wrapper put once around `run_agent.handle_function_call` (idempotent, thread-safe): it routes a name lent in the
calling context — a context variable set in the turn's worker thread, which Hermes copies into its tool threads, as
it does its approval session key — to the turn's handler, and every other call to Hermes unchanged. Nothing is put
into Hermes' global registry, so two turns lending tools of the same name never meet. A lent name that is already
one of the agent's own tools is not lent (the agent keeps its own: Hermes dispatches some of its tools — clarify,
memory, todo — before the registry, where no wrapper could take them over, and a provider rejects two tools of one
name).

The turn's `tool_choice` goes to the provider through `AIAgent.request_overrides` (merged last into the request's
keyword arguments by the chat-completions and Responses transports; the Anthropic and Bedrock transports do not read
it), set for the turn and restored after it.
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._core import MISSING, HermesName, usable

_NOT_LENT = "client function tools are not offered to the agent (it runs with its own tools only)"
HANDLE_FUNCTION_CALL = HermesName(
    "run_agent",
    "handle_function_call",
    args=("function_name", "function_args", "task_id"),
    kwargs=("tool_call_id",),
    fallback=_NOT_LENT,
)
# the agent's tool lists and provider request overrides, as init_agent sets them (instance attributes: the check
# looks for them in its source)
AGENT_TOOL_LISTS = HermesName(
    "agent.agent_init", "init_agent", attrs=("tools", "valid_tool_names", "request_overrides", "api_mode")
)

NAMES: tuple[HermesName, ...] = (HANDLE_FUNCTION_CALL, AGENT_TOOL_LISTS)

# the provider request field tool_choice travels in (AIAgent.request_overrides), and the API modes whose transports
# merge request_overrides into the request
TOOL_CHOICE = "tool_choice"
CHAT_COMPLETIONS = "chat_completions"
RESPONSES = "codex_responses"

# (call_id, name, arguments) → the tool's result as the agent sees it
ClientCall = Callable[["str | None", str, Mapping[str, Any]], str]


@dataclass
class LentTools:
    """What one turn lent its agent: the names, the schema dicts appended (by identity, to take exactly them off),
    the overrides the agent had before, and the context variable's token."""

    names: frozenset[str]
    schemas: list[dict[str, Any]]
    overrides: Any
    token: contextvars.Token[_Lent | None] | None = None
    refused: tuple[str, ...] = ()  # declared names the agent already has: not lent


@dataclass(frozen=True)
class _Lent:
    names: frozenset[str]
    call: ClientCall = field(repr=False)


_lent: contextvars.ContextVar[_Lent | None] = contextvars.ContextVar("hermes_api_plugin_lent_tools", default=None)
_wrap_lock = threading.Lock()
_wrapped = False


def _wrap_dispatch() -> bool:
    """Route lent names around `run_agent.handle_function_call` (once per process); False when unusable."""
    global _wrapped
    with _wrap_lock:
        if _wrapped:
            return True
        original = usable(HANDLE_FUNCTION_CALL, "", {}, None, tool_call_id=None)
        if original is MISSING:
            return False

        @functools.wraps(original)
        def handle_function_call(function_name: Any, function_args: Any, *args: Any, **kwargs: Any) -> Any:
            lent = _lent.get()
            if lent is not None and function_name in lent.names:
                call_id = kwargs.get("tool_call_id", args[1] if len(args) > 1 else None)
                arguments = function_args if isinstance(function_args, Mapping) else {}
                return lent.call(call_id if isinstance(call_id, str) else None, function_name, arguments)
            return original(function_name, function_args, *args, **kwargs)

        setattr(importlib.import_module(HANDLE_FUNCTION_CALL.module), HANDLE_FUNCTION_CALL.path, handle_function_call)
        _wrapped = True
        return True


def api_mode(agent: Any) -> str:
    """The agent's provider API mode (chat_completions, codex_responses, anthropic_messages, bedrock_converse)."""
    mode = getattr(agent, "api_mode", None)
    return mode if isinstance(mode, str) else CHAT_COMPLETIONS


def lend_tools(
    agent: Any, schemas: list[dict[str, Any]], call: ClientCall, tool_choice: Any | None = None
) -> LentTools | None:
    """Offer `schemas` (Chat Completions function tools) to `agent` for this turn, their calls going to `call`, and
    force `tool_choice` (the provider's shape) while set. Call in the turn's worker thread before the turn runs;
    None when hermes-agent has no place for them (its fallback is logged) or nothing is left to lend."""
    if not schemas or not _wrap_dispatch():
        return None
    tools = agent.tools if isinstance(agent.tools, list) else []
    own = {t.get("function", {}).get("name") for t in tools if isinstance(t, dict)} | set(agent.valid_tool_names or ())
    offered = [s for s in schemas if s["function"]["name"] not in own]
    refused = tuple(s["function"]["name"] for s in schemas if s["function"]["name"] in own)
    if not offered:
        return LentTools(frozenset(), [], agent.request_overrides, refused=refused)
    names = frozenset(s["function"]["name"] for s in offered)
    lent = LentTools(names, offered, agent.request_overrides, refused=refused)
    agent.tools = [*tools, *offered]
    agent.valid_tool_names = set(agent.valid_tool_names or ()) | names
    if tool_choice is not None:
        agent.request_overrides = {**(agent.request_overrides or {}), TOOL_CHOICE: tool_choice}
    lent.token = _lent.set(_Lent(names, call))
    return lent


def release_tool_choice(agent: Any) -> None:
    """The forced tool_choice has been obeyed: the agent's next provider requests choose freely (a `required` left
    in place would make every later request of the turn call a tool again)."""
    overrides = agent.request_overrides
    if isinstance(overrides, Mapping) and TOOL_CHOICE in overrides:
        agent.request_overrides = {k: v for k, v in overrides.items() if k != TOOL_CHOICE}


def return_tools(agent: Any, lent: LentTools) -> None:
    """Take the lent tools off the agent again (in the turn's worker thread, after the turn): a warm agent's next turn
    sees only its own tools and its own request overrides."""
    if lent.token is not None:
        _lent.reset(lent.token)
    if not lent.names:
        return
    lent_ids = {id(schema) for schema in lent.schemas}
    tools = agent.tools if isinstance(agent.tools, list) else []
    agent.tools = [t for t in tools if id(t) not in lent_ids]
    still = {t.get("function", {}).get("name") for t in agent.tools if isinstance(t, dict)}
    agent.valid_tool_names = {n for n in (agent.valid_tool_names or ()) if n not in lent.names or n in still}
    agent.request_overrides = lent.overrides
