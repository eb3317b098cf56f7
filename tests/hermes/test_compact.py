"""POST /v1/responses/compact with the hermes runtime (WIRE.md §16): Hermes' own context compressor summarises the
conversation with the configured provider (the scripted one), the compaction item carries its summary, and a
response whose input is that item continues with the summary in the real AIAgent's context; a provider refusing the
summary call is the client's 502 in the error envelope, not a 500."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hermes_api_plugin.protocol.compaction_item import decode_summary
from tests.helpers import assert_error_envelope, live_request
from tests.live import LiveGateway, start_gateway

from .conftest import HomeFactory
from .provider import COMPACT_SUMMARY, ScriptedProvider, turn_requests

COMPACT = "/v1/responses/compact"


@pytest.fixture(scope="module")
def gateway(hermes_home: HomeFactory) -> Iterator[LiveGateway]:
    live = start_gateway(hermes_home(env={"API_SERVER_PORT": "0"}), timeout=60)
    yield live
    live.stop()


def _texts(messages: list[dict[str, Any]]) -> str:
    return "\n".join(
        m["content"] if isinstance(m.get("content"), str) else " ".join(p.get("text", "") for p in m["content"] or [])
        for m in messages
    )


def test_hermes_compressor_compacts_and_the_agent_continues_from_it(
    gateway: LiveGateway, provider: ScriptedProvider
) -> None:
    conversation = [
        {"role": "user", "content": "[compact] Remember the launch word heliotrope."},
        {"role": "assistant", "content": "I will remember heliotrope."},
    ]
    reply = live_request(gateway, "POST", COMPACT, {"model": "hermes-agent", "input": conversation}, timeout=60)
    assert reply.status == 200, reply.raw[:500]
    resource = reply.json()
    assert resource["object"] == "response.compaction"
    (item,) = resource["output"]
    summary = decode_summary(item["encrypted_content"], "output[0]")
    assert COMPACT_SUMMARY in summary  # Hermes' handoff text around the provider's summary
    (summary_call,) = provider.calls(scenario="compact")
    assert not summary_call.tools  # a summary call, not an agent turn
    assert "heliotrope" in _texts(summary_call.messages)  # the compressor was given the conversation

    follow = [*resource["output"], {"role": "user", "content": "Which launch word? (after compaction)"}]
    reply = live_request(gateway, "POST", "/v1/responses", {"input": follow}, timeout=60)
    assert reply.status == 200, reply.raw[:500]
    assert reply.json()["status"] == "completed"
    first_call = turn_requests(provider, "(after compaction)")[0]
    assert COMPACT_SUMMARY in _texts(first_call.messages)  # the agent's context holds the summary
    assert "I will remember heliotrope." not in _texts(first_call.messages)  # not the compacted conversation


def test_a_provider_failure_is_a_502_in_the_envelope(gateway: LiveGateway) -> None:
    body = {"model": "hermes-agent", "input": "[compact-fail] nothing to keep"}
    error = assert_error_envelope(live_request(gateway, "POST", COMPACT, body, timeout=60), 502)
    assert (error["type"], error["code"]) == ("server_error", "compaction_failed")
