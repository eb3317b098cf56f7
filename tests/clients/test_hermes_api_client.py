"""`hermes-agent-api-client` (PyPI, Python >= 3.13; pinned in tests/clients/requirements-py313.txt) against the
real gateway: `probe_capabilities()` (§8.3) and `stream_chat_events()` (§3.3, §3.4).

The client runs in tests/clients/.venv313 through tests/clients/hermes_client_scenario.py; without any
Python >= 3.13 these tests are skipped with that reason.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import parse_sse
from tests.live import LiveGateway

from .compat import ROWS, py313_pin
from .conftest import KEEPALIVE_ANSWER, HermesClient, KeepaliveRun

# slow (left out by ./test --fast): a Python 3.13 process per scenario and the shared 25 s keepalive turn.
pytestmark = pytest.mark.slow

ROW = ROWS["hermes-agent-api-client"]
SUCCESS = ["TerminalEvent", {"outcome": "success", "partial": False, "failure_reason": None}]


@pytest.fixture(scope="module")
def scenario(hermes_client: HermesClient, clients_gateway: LiveGateway) -> dict[str, Any]:
    """One client process: the probe, then the default turn, the tool turn and the budget-exhausted turn."""
    return hermes_client.run(clients_gateway, ["hello", "use tool", "exhaust"])


def stream_for(scenario: dict[str, Any], prompt: str) -> dict[str, Any]:
    return next(s for s in scenario["streams"] if s["prompt"] == prompt)


def events_of(stream: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [fields for name, fields in stream["events"] if name == kind]


def test_installed_version_is_the_pinned_one(scenario: dict[str, Any]) -> None:
    assert scenario["version"] == py313_pin("hermes-agent-api-client")
    assert tuple(int(p) for p in scenario["python"].split(".")[:2]) >= (3, 13)


def test_probe_capabilities_accepts_the_server(scenario: dict[str, Any], clients_gateway: LiveGateway) -> None:
    """§8.3: the client's required fields — object, platform, a non-empty model, auth.required, chat flags."""
    assert "capabilities_error" not in scenario, scenario.get("capabilities_error")
    assert scenario["capabilities"] == {
        "object": "hermes.api_server.capabilities",
        "platform": "hermes-agent",
        "model": "hermes-agent",
        "auth_type": "bearer",
        "auth_required": True,
        "chat_completions": True,
        "chat_completions_streaming": True,
    }


@pytest.mark.parametrize(
    ("prompt", "answer", "usage", "tools"),
    [
        pytest.param("hello", "Hello from the scripted runtime.", (12, 6, 18), [], id="default"),
        pytest.param(
            "use tool",
            "Your project has README.md and src/.",
            (42, 17, 59),
            [("terminal", "running"), ("terminal", "completed")],
            id="use-tool",
        ),
    ],
)
def test_stream_chat_events_ends_with_exactly_one_success(
    scenario: dict[str, Any], prompt: str, answer: str, usage: tuple[int, int, int], tools: list[tuple[str, str]]
) -> None:
    """§3.3/§3.4: the strict decoder accepts every record (reasoning chunks decode as empty text deltas thanks to
    their `content:""`), tool progress decodes as ToolProgressEvent running/completed with one call id, usage
    arrives, and the stream ends with exactly one TerminalEvent(success), last."""
    stream = stream_for(scenario, prompt)
    assert "error" not in stream, stream.get("error")
    events = stream["events"]
    terminals = [e for e in events if e[0] == "TerminalEvent"]
    assert terminals == [SUCCESS]
    assert events[-1] == SUCCESS
    assert "".join(e["text"] for e in events_of(stream, "AssistantDeltaEvent")) == answer
    assert events_of(stream, "UsageEvent") == [dict(zip(("input_tokens", "output_tokens", "total_tokens"), usage))]
    progress = events_of(stream, "ToolProgressEvent")
    assert [(p["tool_name"], p["status"]) for p in progress] == tools
    assert len({p["tool_call_id"] for p in progress}) == (1 if tools else 0)
    if prompt == "use tool":
        assert ROW.tool_progress.works is bool(progress)
        assert ROW.chat.works is (terminals == [SUCCESS])
        # The decoder keeps only `content`: reasoning is not surfaced (its chunks are empty text deltas).
        assert ROW.reasoning.works is any("files first" in e["text"] for e in events_of(stream, "AssistantDeltaEvent"))


def test_budget_exhausted_turn_is_a_protocol_error_in_0_3(scenario: dict[str, Any]) -> None:
    """§3.6 notes (deliberate): `finish_reason: "length"` with `error_code: "iteration_budget_exhausted"` is outside
    the 0.3.x terminal matrix (only `output_truncated`), so the client raises HermesProtocolError."""
    stream = stream_for(scenario, "exhaust")
    assert stream.get("error", {}).get("type") == "HermesProtocolError"


def test_keepalive_turn_completes_and_keepalives_surface(keepalive_run: KeepaliveRun) -> None:
    """W-2.4: the 25 s tool turn completes (the client's own read timeout is 45 s and cannot be lowered);
    the comment records surface as KeepaliveEvent — at least 2, as a raw reader of the chat stream sees."""
    result = keepalive_run.result("hermes-agent-api-client")
    stream = result["streams"][0]
    assert "error" not in stream, stream.get("error")
    assert stream["events"][-1] == SUCCESS
    assert "".join(e["text"] for e in events_of(stream, "AssistantDeltaEvent")) == KEEPALIVE_ANSWER
    assert len(events_of(stream, "KeepaliveEvent")) >= 2
    assert [p["status"] for p in events_of(stream, "ToolProgressEvent")] == ["running", "completed"]
    assert stream["elapsed_s"] >= 24
    raw = keepalive_run.result("raw-chat")
    assert raw["ok"] is True, raw.get("error")
    assert parse_sse(raw["raw"])[1] >= 2
