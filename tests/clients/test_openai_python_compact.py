"""The real OpenAI Python SDK (pinned in the dev extra) against POST /v1/responses/compact (WIRE.md §16):
`client.responses.compact(...)` parses the compacted resource into its own types, its output sent as the next
response's input continues with the summary, and a missing model is the SDK's BadRequestError."""

from __future__ import annotations

import openai
import pytest

from hermes_api_plugin.protocol.compaction_item import SUMMARY_LEAD
from tests.helpers import DEFAULT_ANSWER, MODEL, execution_for
from tests.live import LiveGateway


def test_the_sdk_compacts_and_continues_from_the_compaction(client: openai.OpenAI, live_gateway: LiveGateway) -> None:
    first = client.responses.create(model=MODEL, input="hello from the sdk")
    compacted = client.responses.compact(model=MODEL, previous_response_id=first.id)
    assert compacted.object == "response.compaction"
    (item,) = compacted.output
    assert item.type == "compaction" and item.encrypted_content
    assert compacted.usage.total_tokens == compacted.usage.input_tokens + compacted.usage.output_tokens
    carried = [i.model_dump(exclude_none=True) for i in compacted.output]
    follow = client.responses.create(model=MODEL, input=[*carried, {"role": "user", "content": "sdk follow-up"}])
    assert follow.status == "completed" and follow.output_text == DEFAULT_ANSWER
    (summary,) = execution_for(live_gateway, "sdk follow-up")["history"]
    text = summary["content"][0]["text"]
    assert text.startswith(SUMMARY_LEAD) and "- user: hello from the sdk" in text


def test_the_sdk_raises_bad_request_without_input_to_compact(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.compact(model=MODEL)
    assert caught.value.status_code == 400
