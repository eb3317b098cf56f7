"""POST /v1/responses/compact on the real app (WIRE.md §16): the compacted resource, its refusals in the one error
envelope, the route never taken for a response id, and a compaction sent back as input — the agent continues with
the summary (the scripted runtime's execution log shows its history). Scripted runtime, SQLite store, nothing mocked.
"""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from hermes_api_plugin.protocol.compaction_item import SUMMARY_LEAD, decode_summary
from hermes_api_plugin.protocol.counts import MAX_INPUT_ITEMS
from tests.helpers import DEFAULT_ANSWER, MODEL, assert_error_envelope, execution_for, fetch

from .responses_helpers import create, get_json, history_of

COMPACT = "/v1/responses/compact"
CONVERSATION = [
    {"role": "user", "content": "Remember that the build uses zig version eleven please"},
    {"role": "assistant", "content": "Noted: zig eleven."},
]
SUMMARY = "\n".join(
    [
        "Scripted summary of 2 message(s):",
        "- user: Remember that the build uses zig version eleven …",
        "- assistant: Noted: zig eleven.",
    ]
)


async def compact(api: TestClient, auth: dict[str, str], **body: Any) -> dict[str, Any]:
    reply = await fetch(api, "POST", COMPACT, json={"model": MODEL, **body}, headers=auth)
    assert reply.status == 200, reply.raw[:500]
    assert reply.headers["Content-Type"] == "application/json; charset=utf-8"
    resource: dict[str, Any] = reply.json()
    assert set(resource) == {"id", "object", "output", "created_at", "usage"}
    assert resource["object"] == "response.compaction" and resource["id"].startswith("cmp_")
    return resource


def summary_of(resource: dict[str, Any]) -> str:
    (item,) = resource["output"]
    assert item["type"] == "compaction" and set(item) == {"type", "id", "encrypted_content"}
    return decode_summary(item["encrypted_content"], "output[0]")


async def test_compact_returns_the_resource_with_a_compaction_item(api: TestClient, auth: dict[str, str]) -> None:
    resource = await compact(api, auth, input=CONVERSATION)
    assert summary_of(resource) == SUMMARY
    usage = resource["usage"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0


async def test_the_compaction_as_input_gives_the_agent_the_summary(api: TestClient, auth: dict[str, str]) -> None:
    resource = await compact(api, auth, input=CONVERSATION)
    _, response = await create(api, auth, [*resource["output"], {"role": "user", "content": "which zig?"}])
    assert response["status"] == "completed"
    assert response["output"][-1]["content"][0]["text"] == DEFAULT_ANSWER
    assert history_of(execution_for(api, "which zig?")) == [("user", SUMMARY_LEAD + SUMMARY)]
    status, items = await get_json(api, auth, f"/v1/responses/{response['id']}/input_items?order=asc")
    assert status == 200 and [i["type"] for i in items["data"]] == ["compaction", "message"]


async def test_compact_a_stored_chain_by_previous_response_id(api: TestClient, auth: dict[str, str]) -> None:
    _, first = await create(api, auth, "hello there")
    resource = await compact(api, auth, previous_response_id=first["id"], input="and one more thing")
    assert summary_of(resource).splitlines() == [
        "Scripted summary of 3 message(s):",
        "- user: hello there",
        f"- assistant: {DEFAULT_ANSWER}",
        "- user: and one more thing",
    ]
    # the conversation itself is unchanged: the chain still continues from its own history
    await create(api, auth, "next link", previous_response_id=first["id"])
    assert history_of(execution_for(api, "next link")) == [("user", "hello there"), ("assistant", DEFAULT_ANSWER)]


async def test_compact_refusals_use_the_error_envelope(api: TestClient, auth: dict[str, str]) -> None:
    async def refused(body: dict[str, Any], status: int = 400) -> dict[str, Any]:
        return assert_error_envelope(await fetch(api, "POST", COMPACT, json=body, headers=auth), status)

    assert (await refused({"input": "hi"}))["param"] == "model"
    assert (await refused({"model": MODEL}))["param"] == "input"
    bad_item = await refused({"model": MODEL, "input": [{"type": "compaction", "encrypted_content": "opaque"}]})
    assert (bad_item["code"], bad_item["param"]) == ("invalid_encrypted_content", "input[0].encrypted_content")
    assert (await refused({"model": MODEL, "input": [{"type": "nonsense"}]}))["param"] == "input[0]"
    unknown = await refused({"model": MODEL, "previous_response_id": "resp_" + "0" * 32}, 404)
    assert (unknown["code"], unknown["param"]) == ("response_not_found", "previous_response_id")
    too_many = await refused({"model": MODEL, "input": ["hi"] * (MAX_INPUT_ITEMS + 1)})
    assert too_many["param"] == "input"
    unauthenticated = await fetch(api, "POST", COMPACT, json={"model": MODEL, "input": "hi"})
    assert_error_envelope(unauthenticated, 401)


async def test_compact_is_never_taken_for_a_response_id(api: TestClient, auth: dict[str, str]) -> None:
    for method in ("GET", "DELETE"):
        error = assert_error_envelope(await fetch(api, method, COMPACT, headers=auth), 405)
        assert error["code"] != "response_not_found"
    _, response = await create(api, auth, "hello there")
    status, stored = await get_json(api, auth, f"/v1/responses/{response['id']}")
    assert (status, stored["id"]) == (200, response["id"])


async def test_the_route_is_advertised_and_documented(api: TestClient, auth: dict[str, str]) -> None:
    capabilities = (await fetch(api, "GET", "/v1/capabilities", headers=auth)).json()
    assert capabilities["endpoints"]["responses_compact"] == {"method": "POST", "path": COMPACT}
    document = (await fetch(api, "GET", "/openapi.json", headers=auth)).json()
    operation = document["paths"][COMPACT]["post"]
    assert operation["operationId"] == "responses_compact"
    assert document["components"]["schemas"]["CompactRequest"]["required"] == ["model"]
