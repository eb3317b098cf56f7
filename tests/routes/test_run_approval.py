"""POST /v1/runs/{run_id}/approval on the reference gateway (scripted runtime: no approvals ever pend, WIRE.md §14.2)
and the approval features of /v1/capabilities (W-14.5)."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from .support import settled, start_run


async def approve(api: TestClient, auth: dict[str, str], run_id: str, body: Any) -> tuple[int, dict[str, Any]]:
    async with api.post(f"/v1/runs/{run_id}/approval", json=body, headers=auth) as resp:
        return resp.status, await resp.json()


async def test_known_run_has_no_approval_session_and_unknown_run_is_404(api: TestClient, auth: dict[str, str]) -> None:
    run_id = await start_run(api, auth, "hello")
    await settled(api, auth, run_id)
    status, body = await approve(api, auth, run_id, {"choice": "once"})
    assert (status, body["error"]["code"], body["error"]["type"]) == (409, "approval_not_active", "conflict_error")
    status, body = await approve(api, auth, "run_" + "0" * 32, {"choice": "once"})
    assert (status, body["error"]["code"]) == (404, "run_not_found")


async def test_choice_is_validated_with_aliases(api: TestClient, auth: dict[str, str]) -> None:
    run_id = await start_run(api, auth, "hello")
    await settled(api, auth, run_id)
    for bad in ({"choice": "maybe"}, {"choice": 3}, {"choice": "once", "all": "perhaps"}):
        status, body = await approve(api, auth, run_id, bad)
        assert status == 400, bad
    assert (await approve(api, auth, run_id, {"choice": "maybe"}))[1]["error"]["code"] == "invalid_approval_choice"
    assert (await approve(api, auth, run_id, {}))[1]["error"]["code"] == "missing_required_parameter"
    for alias in ("approve", "Approved", " allow ", "ALWAYS", "session", "deny"):
        status, body = await approve(api, auth, run_id, {"choice": alias, "all": True})
        assert (status, body["error"]["code"]) == (409, "approval_not_active"), alias


async def test_capabilities_report_approvals_false_without_hermes(api: TestClient, auth: dict[str, str]) -> None:
    caps = await (await api.get("/v1/capabilities", headers=auth)).json()
    assert caps["features"]["run_approval_response"] is False and caps["features"]["approval_events"] is False
    assert caps["endpoints"]["run_approval"] == {"method": "POST", "path": "/v1/runs/{run_id}/approval"}
