"""The compaction service (POST /v1/responses/compact, WIRE.md §16): the conversation to compact — a stored
response's chain (`previous_response_id`, 404 as §4.7 when unknown), then the request's input items, resolved as
POST /v1/responses resolves them (earlier compactions included) — summarised by the runtime, returned as the spec's
compacted resource whose `compaction` item carries the summary forward.

No turn: nothing is admitted, stored or journaled, and no session is touched; the conversation itself is unchanged
(a later response continues from the compaction item only when the client sends it).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..core.errors import ApiError
from ..protocol.compaction import CompactRequest, compacted_resource, new_compaction_id, nothing_to_compact
from ..protocol.compaction_item import compaction_item
from ..protocol.responses import ItemLookup, resolve_input
from ..runtimes.base import AgentRuntime, CompactionFailed, CompactionRequest
from ..submission.conversations import Conversations


def compaction_failed(reason: str) -> ApiError:
    """The summariser's model call failed: the gateway's upstream failed, not the request (502)."""
    return ApiError(502, reason, type="server_error", code="compaction_failed")


class CompactionService:
    """One profile's compactions: its store (item references), chains and runtime."""

    def __init__(
        self, store: ItemLookup, conversations: Conversations, runtime: AgentRuntime, profile_home: Path | None
    ) -> None:
        self.store = store
        self.conversations = conversations
        self.runtime = runtime
        self.profile_home = profile_home

    async def compact(self, request: CompactRequest) -> dict[str, Any]:
        resource_id = new_compaction_id()
        previous = await self.conversations.previous(request.previous_response_id)
        history = list(await self.conversations.chain_history(previous)()) if previous is not None else []
        resolved = await resolve_input(request.input, self.store, self.conversations.scope, resource_id, turn=False)
        messages = (*history, *resolved.messages)
        if not any(m.visible or m.tool_calls for m in messages):
            raise nothing_to_compact()
        # The conversation's instructions are context for the summariser (a previous response's, unless replaced).
        instructions = request.instructions
        if instructions is None and previous is not None:
            instructions = previous.instructions
        system = "\n".join(s for s in [instructions or "", *resolved.system] if s) or None
        selection = request.selection
        try:
            compaction = await self.runtime.compact(
                CompactionRequest(messages, system, selection.model, selection.provider, self.profile_home)
            )
        except CompactionFailed as exc:
            raise compaction_failed(str(exc)) from None
        usage = compaction.usage
        output = [compaction_item(compaction.summary)]
        return compacted_resource(resource_id, int(time.time()), output, usage.prompt_tokens, usage.completion_tokens)
