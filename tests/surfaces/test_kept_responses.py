"""The Responses a WebSocket connection keeps (WIRE.md §16): read before the store, each with its whole chain, bounded
by count and bytes (oldest first), evicted on request."""

from __future__ import annotations

from hermes_api_plugin.core.content import Message, text_message
from hermes_api_plugin.store.base import StoredResponse
from hermes_api_plugin.surfaces.kept_responses import KeptResponses

SCOPE = "scope"


class Store:
    """A store holding one Response, `resp_stored`, whose chain is two messages."""

    chain = (text_message("user", "stored question"), text_message("assistant", "stored answer"))

    async def get_response(self, scope: str, response_id: str) -> StoredResponse | None:
        return record("resp_stored") if response_id == "resp_stored" else None

    async def chain_messages(self, scope: str, response_id: str) -> list[Message]:
        return list(self.chain) if response_id == "resp_stored" else []


def record(response_id: str, previous: str | None = None, text: str = "x") -> StoredResponse:
    messages = [text_message("user", text), text_message("assistant", "ok")]
    return StoredResponse(response_id, SCOPE, "run", "session", "completed", {}, previous, messages=messages)


def texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


async def test_kept_responses_come_first_then_the_store() -> None:
    kept = KeptResponses(Store())
    await kept.keep(record("resp_a", "resp_stored", "a"))
    await kept.keep(record("resp_b", "resp_a", "b"))
    assert (await kept.get_response(SCOPE, "resp_b")) is not None
    assert (await kept.get_response(SCOPE, "resp_stored")) is not None
    assert (await kept.get_response("other scope", "resp_b")) is None
    assert texts(await kept.chain_messages(SCOPE, "resp_b")) == [
        "stored question",
        "stored answer",
        "a",
        "ok",
        "b",
        "ok",
    ]


async def test_the_oldest_go_first_and_a_newer_chain_survives_them() -> None:
    kept = KeptResponses(Store(), max_kept=2)
    for i, previous in enumerate((None, "resp_0", "resp_1")):
        await kept.keep(record(f"resp_{i}", previous, str(i)))
    assert "resp_0" not in kept and len(kept) == 2
    assert texts(await kept.chain_messages(SCOPE, "resp_2")) == ["0", "ok", "1", "ok", "2", "ok"]


async def test_bytes_are_bounded_and_evict_forgets() -> None:
    kept = KeptResponses(Store(), max_bytes=400)
    await kept.keep(record("resp_big", text="y" * 1000))
    assert "resp_big" not in kept and kept.bytes == 0  # larger than the bound: not kept at all
    await kept.keep(record("resp_1", text="1"))
    alone = kept.bytes
    await kept.keep(record("resp_2", "resp_1", "2"))
    assert 0 < alone < kept.bytes <= 400 and len(kept) == 2
    await kept.keep(record("resp_3", "resp_2", "3"))  # its whole chain counted: the oldest make room
    assert kept.bytes <= 400 and "resp_3" in kept and "resp_1" not in kept
    kept.evict("resp_3")
    kept.evict(None)
    assert "resp_3" not in kept and kept.bytes == sum(size for _, _, size in kept._kept.values())
