"""protocol/approvals.py: the body of POST /v1/runs/{run_id}/tool_outputs (WIRE.md §15.4) — (call_id, output) pairs
in the order sent; outputs are strings; a call_id given twice is refused."""

from __future__ import annotations

import pytest

from hermes_api_plugin.core.errors import ApiError
from hermes_api_plugin.protocol.approvals import parse_run_tool_outputs


def test_outputs_are_call_id_and_output_pairs_in_order() -> None:
    body = {"outputs": [{"call_id": "call_b", "output": "2"}, {"call_id": "call_a", "output": "", "extra": 1}]}
    assert parse_run_tool_outputs(body).outputs == (("call_b", "2"), ("call_a", ""))


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"outputs": [{"call_id": "c", "output": 1}]}, "outputs[0].output"),
        ({"outputs": [{"call_id": "c", "output": ["x"]}]}, "outputs[0].output"),
        ({"outputs": [{"call_id": "c", "output": "x"}, {"call_id": "c", "output": "y"}]}, "outputs[1].call_id"),
        ({"outputs": [{"call_id": "x" * 513, "output": "y"}]}, "outputs[0].call_id"),
        ({"outputs": [{"call_id": "c", "output": "x"}] * 129}, "outputs"),
        ({"outputs": []}, "outputs"),
        ({}, "outputs"),
    ],
)
def test_malformed_outputs_are_400_naming_the_field(body: dict[str, object], param: str) -> None:
    with pytest.raises(ApiError) as caught:
        parse_run_tool_outputs(body)
    assert (caught.value.status, caught.value.param) == (400, param)
