"""The function tools a client lends a Hermes agent for one turn (WIRE.md §15.2, §15.3, §15.5).

The tools `tool_choice` offers this turn are appended to the agent's own for the turn and taken off after it
(`compat.client_tools`: a warm agent's next turn never sees them). When the agent calls one, the call suspends the
turn until the client returns the output (`call`, which blocks the agent's thread until the answer or its negative
resolution); no output becomes an error result the agent sees. Such a call is the client's, not a server tool: the
runtime's tool-progress callbacks skip the names in `names` (the suspension journals the call and its output).

`tool_choice` reaches the provider as its own `tool_choice` until the agent has called a client tool: `required` (a
tool must be called; Hermes' own count too, so a server call may come first) and a named function are forced on the
provider requests of the turn up to that call, then lifted — the turn's later requests (after the output) choose
freely, else a forced choice would loop the agent through its iteration budget. Only the chat-completions and
Responses API modes carry it (`compat.client_tools`); with Anthropic or Bedrock providers the tools are offered and
`tool_choice` acts as `auto`.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from ..core.client_tools import FUNCTION, REQUIRED, ClientTool, ToolChoice
from . import compat
from .compat.client_tools import CHAT_COMPLETIONS, RESPONSES, LentTools

log = logging.getLogger("hermes_api_plugin")

Call = Callable[[str, str, str], "str | None"]  # call id, name, arguments (JSON) → the output; None: none came


def provider_tool_choice(choice: ToolChoice, names: frozenset[str], api_mode: str) -> Any | None:
    """`choice` in the provider request's shape for `api_mode`; None: nothing to force (or no way to force it)."""
    if api_mode not in (CHAT_COMPLETIONS, RESPONSES):
        return None
    if choice.mode == REQUIRED and names:
        return "required"
    if choice.mode == FUNCTION and choice.name in names:
        if api_mode == RESPONSES:
            return {"type": "function", "name": choice.name}
        return {"type": "function", "function": {"name": choice.name}}
    return None


def no_output(name: str) -> str:
    """The result the agent sees when the client returned no output for its call (WIRE.md §15.1)."""
    return json.dumps({"error": f"The client returned no output for {name}."}, ensure_ascii=False)


class TurnClientTools:
    """The client tools of one turn: lent to its agent (`lend`), their calls suspended for the client, given back
    (`give_back`). `lend` and `give_back` run in the turn's worker thread, calls in Hermes' tool threads."""

    def __init__(self, tools: tuple[ClientTool, ...], choice: ToolChoice, call: Call) -> None:
        self._tools = tools
        self._choice = choice
        self._call = call
        self._agent: Any = None
        self._lent: LentTools | None = None
        self.names: frozenset[str] = frozenset()  # lent to the agent now: the client's calls, not server tools

    def lend(self, agent: Any) -> None:
        if not self._tools:
            return
        schemas = [tool.to_json() for tool in self._tools]
        names = frozenset(tool.name for tool in self._tools)
        choice = provider_tool_choice(self._choice, names, compat.client_tools.api_mode(agent))
        lent = compat.client_tools.lend_tools(agent, schemas, self._handle, choice)
        if lent is None:
            return
        if lent.refused:
            log.info(
                "[API Server] client tools %s share a name with the agent's own tools; the agent keeps its own",
                ", ".join(lent.refused),
            )
        self._agent, self._lent, self.names = agent, lent, lent.names

    def give_back(self) -> None:
        if self._lent is not None:
            compat.client_tools.return_tools(self._agent, self._lent)
        self._agent, self._lent, self.names = None, None, frozenset()

    def _handle(self, call_id: str | None, name: str, arguments: Mapping[str, Any]) -> str:
        if self._agent is not None:
            compat.client_tools.release_tool_choice(self._agent)
        text = json.dumps(dict(arguments), ensure_ascii=False, separators=(",", ":"))
        output = self._call(call_id or f"call_{uuid.uuid4().hex[:24]}", name, text)
        return output if output is not None else no_output(name)
