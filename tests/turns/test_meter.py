"""turns/meter.py and core/metrics.py: what one turn records at settlement, from explicit times (no sleeping), and the
bounded labels a client chooses (issue 24)."""

from __future__ import annotations

from hermes_api_plugin.core.content import Message
from hermes_api_plugin.core.events import TurnFinished, TurnStatus, Usage
from hermes_api_plugin.core.metrics import OTHER, BoundedLabel, Metrics
from hermes_api_plugin.runtimes.base import TurnRequest
from hermes_api_plugin.turns.meter import TurnMeters

REQUEST = TurnRequest("run_1", "s1", Message("user", ()))
LABELS = {
    "gen_ai_operation_name": "invoke_agent",
    "gen_ai_provider_name": "openrouter",
    "gen_ai_request_model": "hermes-agent",
    "surface": "chat",
    "runtime": "scripted",
    "profile": "default",
}


def _value(metrics: Metrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def _meters(metrics: Metrics) -> TurnMeters:
    return TurnMeters(metrics, "scripted", "default", "hermes-agent", "openrouter")


def test_a_completed_turn_records_first_bytes_duration_usage_and_time_per_token() -> None:
    metrics = Metrics()
    meter = _meters(metrics).meter(REQUEST, "chat")
    t0 = meter.admitted_at
    finished = TurnFinished(TurnStatus.COMPLETED, Usage(prompt_tokens=42, completion_tokens=11))
    meter.settled(finished, first_reasoning_at=t0 + 0.5, first_text_at=t0 + 2.0, now=t0 + 3.0)
    assert _value(metrics, "hermes_api_time_to_first_reasoning_seconds_sum", **LABELS) == 0.5
    assert _value(metrics, "hermes_api_time_to_first_content_seconds_sum", **LABELS) == 2.0
    assert _value(metrics, "gen_ai_server_time_to_first_token_seconds_sum", **LABELS) == 0.5  # the earlier one
    assert _value(metrics, "gen_ai_server_request_duration_seconds_sum", **LABELS, error_type="") == 3.0
    # 10 tokens after the first, in the 2.5 s after the first output
    assert _value(metrics, "gen_ai_server_time_per_output_token_seconds_sum", **LABELS) == 0.25
    assert _value(metrics, "gen_ai_client_token_usage_sum", **LABELS, gen_ai_token_type="input") == 42
    assert _value(metrics, "gen_ai_client_token_usage_sum", **LABELS, gen_ai_token_type="output") == 11
    assert (
        _value(
            metrics, "hermes_api_turns_total", surface="chat", status="completed", runtime="scripted", profile="default"
        )
        == 1
    )


def test_a_failed_turn_records_its_error_type_and_no_genai_first_token() -> None:
    metrics = Metrics()
    meter = _meters(metrics).meter(REQUEST, "chat")
    t0 = meter.admitted_at
    meter.settled(TurnFinished(TurnStatus.FAILED, error_code="agent_error"), None, t0 + 1.0, now=t0 + 1.5)
    assert _value(metrics, "gen_ai_server_request_duration_seconds_count", **LABELS, error_type="agent_error") == 1
    assert _value(metrics, "gen_ai_server_time_to_first_token_seconds_count", **LABELS) == 0
    assert _value(metrics, "hermes_api_time_to_first_content_seconds_count", **LABELS) == 1
    assert _value(metrics, "hermes_api_time_to_first_reasoning_seconds_count", **LABELS) == 0


def test_tool_durations_are_by_tool_name_and_error() -> None:
    metrics = Metrics()
    meter = _meters(metrics).meter(REQUEST, "chat")
    meter.tool_completed("terminal", 0.2, False)
    meter.tool_completed("terminal", 0.4, True)
    tool = {"gen_ai_tool_name": "terminal", "runtime": "scripted", "profile": "default"}
    assert _value(metrics, "gen_ai_execute_tool_duration_seconds_sum", **tool, error_type="") == 0.2
    assert _value(metrics, "gen_ai_execute_tool_duration_seconds_sum", **tool, error_type="tool_error") == 0.4


def test_two_apps_keep_their_own_series() -> None:
    first, second = Metrics(), Metrics()
    _meters(first).admission("chat", "new", False)
    assert (
        _value(first, "hermes_api_admissions_total", surface="chat", outcome="new", keyed="false", profile="default")
        == 1
    )
    assert (
        _value(second, "hermes_api_admissions_total", surface="chat", outcome="new", keyed="false", profile="default")
        == 0
    )


def test_a_bounded_label_keeps_its_first_values_then_says_other() -> None:
    label = BoundedLabel(3)
    assert [label(f"m{i}") for i in range(5)] == ["m0", "m1", "m2", OTHER, OTHER]
    assert label("m1") == "m1" and label(None) == OTHER  # "unknown" would be a fourth value
