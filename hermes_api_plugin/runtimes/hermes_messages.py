"""What crosses between the plugin's values and `AIAgent`'s dicts: conversation messages in the OpenAI chat shape
`run_conversation(conversation_history=…)` takes, the reasoning effort as Hermes' `reasoning_config`, and the
result dict mapped onto the turn's terminal status (WIRE.md §3.6). Pure: no hermes-agent import, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.content import Message
from ..core.events import TurnStatus, Usage
from .base import TurnResult

_BUDGET_EXITS = ("max_iterations_reached", "budget_exhausted")


def message_to_openai(message: Message) -> dict[str, Any]:
    """A conversation message in the OpenAI chat shape `run_conversation(conversation_history=…)` takes: as Hermes
    stored it, where it came from Hermes' session store."""
    if message.native is not None:
        native = dict(message.native)
        if native.get("role") == "tool" and native.get("tool_name") and "name" not in native:
            # Hermes stores a tool result's tool as `tool_name`; the agent sent it as `name`, after `role`: put it
            # back so the replayed prefix is the one the provider already saw (its prompt cache hits)
            return {"role": native.pop("role"), "name": native["tool_name"], **native}
        return native
    body: dict[str, Any] = {"role": message.role, "content": user_content(message)}
    if message.tool_calls:
        body["tool_calls"] = [call.to_json() for call in message.tool_calls]
    if message.tool_call_id is not None:
        body["tool_call_id"] = message.tool_call_id
    if message.reasoning:
        body["reasoning"] = message.reasoning
    return body


def user_content(message: Message) -> Any:
    """Plain text when the message has no images, else OpenAI content parts."""
    if not message.images:
        return message.text
    return [part.to_json() for part in message.parts]


def reasoning_config_for(effort: str | None) -> dict[str, Any] | None:
    """The request's effort as Hermes' `reasoning_config` (None: use the configured default)."""
    if effort is None:
        return None
    if effort == "none":
        return {"enabled": False}
    return {"enabled": True, "effort": effort}


def outcome_from_result(result: Mapping[str, Any], interrupted: bool) -> TurnResult:
    """Map `AIAgent.run_conversation()`'s result dict onto the turn's terminal status (WIRE.md §3.6)."""
    usage = Usage(
        int(result.get("prompt_tokens") or result.get("input_tokens") or 0),
        int(result.get("completion_tokens") or result.get("output_tokens") or 0),
    )
    final = result.get("final_response")
    final_text = final if isinstance(final, str) else None
    reason = str(result.get("turn_exit_reason") or "")
    if result.get("interrupted") or (interrupted and not result.get("completed")):
        return TurnResult(TurnStatus.CANCELLED, final_text, usage, "cancelled")
    if result.get("failed"):
        message = result.get("error") or final_text or f"The agent failed ({reason or 'no reason given'})"
        return TurnResult(TurnStatus.FAILED, final_text, usage, "agent_error", str(message))
    if reason.startswith(_BUDGET_EXITS):
        return TurnResult(TurnStatus.INCOMPLETE, final_text or "", usage, "iteration_budget_exhausted")
    if "finish_reason=length" in reason:
        return TurnResult(TurnStatus.INCOMPLETE, final_text or "", usage, "output_truncated")
    if final_text is None and not result.get("completed"):
        message = result.get("error") or f"The agent ended without an answer ({reason or 'no reason given'})"
        return TurnResult(TurnStatus.FAILED, None, usage, "agent_error", str(message))
    return TurnResult(TurnStatus.COMPLETED, final_text or "", usage)
