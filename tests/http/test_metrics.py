"""GET /metrics (issue 24): the API key by default, `api_server.metrics.auth: none`, OpenMetrics negotiation, what one
turn with a tool records, bounded series under 1 000 distinct sessions and ids, and `api_server.metrics.enabled`."""

from __future__ import annotations

import asyncio

from aiohttp.test_utils import TestClient

from hermes_api_plugin.core.metrics import MAX_MODELS
from tests.conftest import ApiFactory
from tests.helpers import (
    CHAT,
    RESPONSES,
    SUSPEND_ASK,
    SUSPEND_SCRIPT,
    metric_samples,
    metric_value,
    wait_for_async,
)

OPENMETRICS = "application/openmetrics-text; version=1.0.0"


async def _scrape(api: TestClient, auth: dict[str, str]) -> list[tuple[str, dict[str, str], float]]:
    async with api.get("/metrics", headers=auth) as resp:
        assert resp.status == 200, await resp.text()
        assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return metric_samples(await resp.text())


async def _chat(api: TestClient, auth: dict[str, str], text: str, **headers: str) -> None:
    body = {"messages": [{"role": "user", "content": text}], "stream": True}
    async with api.post(CHAT, json=body, headers={**auth, **headers}) as resp:
        assert resp.status == 200
        await resp.read()


async def test_metrics_need_the_api_key_by_default(api: TestClient, auth: dict[str, str]) -> None:
    async with api.get("/metrics") as resp:
        assert resp.status == 401
    async with api.get("/metrics", headers={"Authorization": "Bearer wrong-key-0123456789"}) as resp:
        assert resp.status == 401
    async with api.get("/metrics", headers=auth) as resp:
        assert resp.status == 200


async def test_metrics_auth_none_serves_a_scraper_without_the_key(make_api: ApiFactory) -> None:
    api = await make_api(config={"api_server": {"metrics": {"auth": "none"}}})
    async with api.get("/metrics") as resp:
        assert resp.status == 200
        assert "hermes_api_http_requests_total" in await resp.text()
    async with api.get("/v1/models") as resp:  # only the scrape is opened
        assert resp.status == 401


async def test_an_invalid_metrics_auth_is_a_problem_and_keeps_the_key(make_api: ApiFactory) -> None:
    api = await make_api(config={"api_server": {"metrics": {"auth": "open"}}})
    async with api.get("/metrics") as resp:
        assert resp.status == 401


async def test_openmetrics_when_the_accept_header_asks(api: TestClient, auth: dict[str, str]) -> None:
    async with api.get("/metrics", headers={**auth, "Accept": OPENMETRICS}) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
        text = await resp.text()
    assert text.endswith("# EOF\n")
    async with api.get("/metrics", headers={**auth, "Accept": "text/plain"}) as resp:
        assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert "# EOF" not in await resp.text()


async def test_a_turn_with_a_tool_is_recorded(api: TestClient, auth: dict[str, str]) -> None:
    await _chat(api, auth, "use tool")
    samples = await _scrape(api, auth)
    turn = {"surface": "chat", "runtime": "scripted", "profile": "default"}
    assert metric_value(samples, "hermes_api_turns_total", status="completed", **turn) == 1
    assert metric_value(samples, "gen_ai_server_time_to_first_token_seconds_count", **turn) == 1
    assert metric_value(samples, "hermes_api_time_to_first_reasoning_seconds_count", **turn) == 1
    assert metric_value(samples, "hermes_api_time_to_first_content_seconds_count", **turn) == 1
    assert metric_value(samples, "gen_ai_server_request_duration_seconds_count", error_type="", **turn) == 1
    # the scripted tool runs 0.2 s: the histogram's sum says so, its 0.16 s bucket does not hold it
    tool = {"gen_ai_tool_name": "terminal", "runtime": "scripted", "profile": "default"}
    assert metric_value(samples, "gen_ai_execute_tool_duration_seconds_count", **tool) == 1
    assert 0.2 <= metric_value(samples, "gen_ai_execute_tool_duration_seconds_sum", **tool) < 1.0
    assert metric_value(samples, "gen_ai_execute_tool_duration_seconds_bucket", le="0.16", **tool) == 0
    # usage: 42 prompt and 17 completion tokens (tests/scripts/chat.yaml)
    assert metric_value(samples, "gen_ai_client_token_usage_sum", gen_ai_token_type="input", **turn) == 42
    assert metric_value(samples, "gen_ai_client_token_usage_sum", gen_ai_token_type="output", **turn) == 17
    assert metric_value(samples, "gen_ai_server_time_per_output_token_seconds_count", **turn) == 1
    first = next(ls for n, ls, _ in samples if n == "gen_ai_server_time_to_first_token_seconds_count")
    assert first["gen_ai_operation_name"] == "invoke_agent" and first["gen_ai_request_model"] == "hermes-agent"
    assert metric_value(samples, "hermes_api_admissions_total", surface="chat", outcome="new", keyed="false") == 1
    route = {"route": CHAT, "method": "POST", "status": "200", "profile": "default"}
    assert metric_value(samples, "hermes_api_http_requests_total", **route) == 1
    assert metric_value(samples, "hermes_api_turns_unsettled", state="running", profile="default") == 0
    assert metric_value(samples, "hermes_api_leases_held") == 1
    assert metric_value(samples, "hermes_api_store_operation_duration_seconds_count", backend="sqlite") > 0


async def test_a_failed_turn_has_its_error_type(api: TestClient, auth: dict[str, str]) -> None:
    await _chat(api, auth, "fail early")
    samples = await _scrape(api, auth)
    assert metric_value(samples, "hermes_api_turns_total", status="failed") == 1
    assert metric_value(samples, "gen_ai_server_request_duration_seconds_count", error_type="agent_error") == 1
    assert metric_value(samples, "gen_ai_server_time_to_first_token_seconds_count") == 0  # completed turns only


async def test_keyed_retries_count_as_replays(api: TestClient, auth: dict[str, str]) -> None:
    for _ in range(2):
        await _chat(api, auth, "hello", **{"Idempotency-Key": "metrics-key-1"})
    samples = await _scrape(api, auth)
    assert metric_value(samples, "hermes_api_admissions_total", outcome="new", keyed="true") == 1
    assert metric_value(samples, "hermes_api_admissions_total", outcome="replay", keyed="true") == 1
    assert metric_value(samples, "hermes_api_journal_commit_events_count") >= 1


async def test_a_running_turn_shows_in_the_turns_by_state(api: TestClient, auth: dict[str, str]) -> None:
    body = {"messages": [{"role": "user", "content": "hang"}], "stream": True}
    async with api.post(CHAT, json=body, headers=auth) as resp:
        await resp.content.readline()
        for _ in range(200):
            samples = await _scrape(api, auth)
            if metric_value(samples, "hermes_api_turns_unsettled", state="running") == 1:
                break
            await asyncio.sleep(0.01)
        assert metric_value(samples, "hermes_api_turns_unsettled", state="running", profile="default") == 1


async def test_series_stay_bounded_under_a_thousand_distinct_sessions_and_ids(
    make_api: ApiFactory, auth: dict[str, str]
) -> None:
    """1 000 turns on 1 000 sessions, each with its own model name, and 1 000 reads of distinct ids: no label carries
    a session, a run id, a path or more than the bounded number of client-chosen names."""
    api = await make_api(script="fuzz.yaml", config={"api_server": {"max_concurrent_runs": 0}})
    await _scrape(api, auth)  # the scrape's own request is counted from the next one on
    series = []
    for half in (range(500), range(500, 1000)):
        for i in half:
            body = {"message": "hello", "model": f"model-{i}"}
            async with api.post(f"/api/sessions/metrics-session-{i}/chat", json=body, headers=auth) as resp:
                assert resp.status == 200, await resp.text()
            async with api.get(f"/v1/runs/run_{i:032x}", headers=auth) as resp:
                assert resp.status == 404
        samples = await _scrape(api, auth)
        series.append(len(samples))
    labels = {value for _, ls, _ in samples for value in ls.values()}
    assert not any(v.startswith(("metrics-session-", "run_", "api_")) for v in labels)
    assert len({ls.get("gen_ai_request_model") for _, ls, _ in samples} - {None}) == MAX_MODELS + 1  # and "other"
    assert series[0] == series[1] < 3000, series  # the second 500 sessions added no series

    async def settled() -> float:  # the last reply may reach the client a moment before its turn is settled
        return metric_value(await _scrape(api, auth), "hermes_api_turns_total", surface="session_chat")

    await wait_for_async(settled, 10, until=lambda n: n == 1000, what="1 000 turns counted")


async def test_capabilities_advertise_metrics_and_openapi_documents_the_text_reply(
    api: TestClient, auth: dict[str, str]
) -> None:
    async with api.get("/v1/capabilities", headers=auth) as resp:
        caps = await resp.json()
    assert caps["features"]["metrics"] is True
    assert caps["endpoints"]["metrics"] == {"method": "GET", "path": "/metrics"}
    async with api.get("/openapi.json", headers=auth) as resp:
        operation = (await resp.json())["paths"]["/metrics"]["get"]
    assert set(operation["responses"]["200"]["content"]) == {"text/plain", "application/openmetrics-text"}
    assert operation["security"] == [{"bearer": []}]


async def test_metrics_turned_off_serve_no_route_and_record_nothing(make_api: ApiFactory, auth: dict[str, str]) -> None:
    api = await make_api(config={"api_server": {"metrics": {"enabled": False}}})
    await _chat(api, auth, "use tool")
    async with api.get("/metrics", headers=auth) as resp:
        assert resp.status == 404
    async with api.get("/v1/capabilities", headers=auth) as resp:
        caps = await resp.json()
    assert caps["features"]["metrics"] is False and "metrics" not in caps["endpoints"]


async def test_a_resumed_stream_and_a_client_that_left_are_counted(api: TestClient, auth: dict[str, str]) -> None:
    async with api.post(RESPONSES, json={"input": "hello", "store": True}, headers=auth) as resp:
        response_id = (await resp.json())["id"]
    async with api.get(f"{RESPONSES}/{response_id}?stream=true&starting_after=2", headers=auth) as resp:
        assert resp.status == 200
        await resp.read()
    body = {"messages": [{"role": "user", "content": "hang"}], "stream": True}
    resp = await api.post(CHAT, json=body, headers=auth)
    await resp.content.readline()
    resp.close()  # the client leaves mid-stream: the next write fails

    async def disconnects() -> float:
        return metric_value(await _scrape(api, auth), "hermes_api_client_disconnects_total", route=CHAT)

    await wait_for_async(disconnects, 10, until=lambda n: n == 1, what="the disconnect counted")
    samples = await _scrape(api, auth)
    assert metric_value(samples, "hermes_api_stream_resumes_total", route="/v1/responses/{response_id}") == 1
    assert metric_value(samples, "hermes_api_stream_resumes_total", route=CHAT) == 0


async def test_a_turn_waiting_for_its_clients_approval_is_suspended(make_api: ApiFactory, auth: dict[str, str]) -> None:
    """WIRE §15: the chat delivery ends with the approval question and the turn waits: `suspended`, not running."""
    api = await make_api(script=SUSPEND_SCRIPT)
    await _chat(api, auth, SUSPEND_ASK)

    async def suspended() -> float:
        return metric_value(await _scrape(api, auth), "hermes_api_turns_unsettled", state="suspended")

    await wait_for_async(suspended, 10, until=lambda n: n == 1, what="the waiting turn counted as suspended")
    samples = await _scrape(api, auth)
    assert metric_value(samples, "hermes_api_turns_unsettled", state="running") == 0
