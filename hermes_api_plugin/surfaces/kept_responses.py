"""The Responses one WebSocket connection keeps (WIRE.md §16): those it completed with `store: false`, so that a
`response.create` on the same connection continues them by `previous_response_id` although nothing was stored.

`KeptResponses` is the `ResponseLookup` the connection hands to chain resolution (submission/conversations.py): its
own Responses first, then the store — so a kept Response may continue a stored one and the other way round. Each
entry holds its whole history (the chain's messages up to and including its own), so that evicting an older entry
never cuts a newer one's chain; the histories share their message values, the count is what is bounded.

Bounded per connection: at most MAX_KEPT entries and MAX_KEPT_BYTES of history (each entry counted with its whole
history as JSON, shared messages counted again: a bound, not a measure); the oldest go first. A continuation that
fails evicts the Response it named (the connection's caller decides), and a new connection keeps nothing.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence

from ..core.content import Message
from ..store.base import StoredResponse
from ..submission.conversations import ResponseLookup

MAX_KEPT = 32
MAX_KEPT_BYTES = 16 * 1024 * 1024


def _size(messages: Sequence[Message]) -> int:
    return sum(len(json.dumps(m.to_json(), ensure_ascii=False)) for m in messages)


class KeptResponses:
    """One connection's `store: false` Responses in front of the store (a `ResponseLookup`)."""

    def __init__(self, store: ResponseLookup, max_kept: int = MAX_KEPT, max_bytes: int = MAX_KEPT_BYTES) -> None:
        self.store = store
        self.max_kept = max_kept
        self.max_bytes = max_bytes
        self._kept: OrderedDict[str, tuple[StoredResponse, list[Message], int]] = OrderedDict()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._kept)

    def __contains__(self, response_id: object) -> bool:
        return response_id in self._kept

    async def get_response(self, scope: str, response_id: str) -> StoredResponse | None:
        kept = self._kept.get(response_id)
        if kept is not None and kept[0].scope == scope:
            return kept[0]
        return await self.store.get_response(scope, response_id)

    async def chain_messages(self, scope: str, response_id: str) -> list[Message]:
        kept = self._kept.get(response_id)
        if kept is not None and kept[0].scope == scope:
            return list(kept[1])
        return await self.store.chain_messages(scope, response_id)

    async def keep(self, record: StoredResponse) -> None:
        """Keep a Response this connection completed unstored: its history is the chain it continued, then its own
        messages. One whose history alone exceeds the byte bound is not kept (its continuation is then
        previous_response_not_found, as on a new connection)."""
        before = record.previous_response_id
        earlier = self._kept.get(before) if before is not None else None
        if earlier is not None:
            history, size = [*earlier[1], *record.messages], earlier[2] + _size(record.messages)
        else:
            chain = await self.store.chain_messages(record.scope, before) if before is not None else []
            history = [*chain, *record.messages]
            size = _size(history)
        self.evict(record.id)
        if size > self.max_bytes:
            return
        self._kept[record.id] = (record, history, size)
        self.bytes += size
        while len(self._kept) > self.max_kept or self.bytes > self.max_bytes:
            _, (_, _, dropped) = self._kept.popitem(last=False)
            self.bytes -= dropped

    def evict(self, response_id: str | None) -> None:
        """Forget a Response (a continuation of it failed: WebSocket mode evicts it)."""
        if response_id is None:
            return
        kept = self._kept.pop(response_id, None)
        if kept is not None:
            self.bytes -= kept[2]
