"""Issue 20, defect 1: numbers from the wire are ASCII digits of bounded length (hermes_api_plugin/core/digits.py), for
Last-Event-ID and every integer query parameter alike."""

from __future__ import annotations

import pytest

from hermes_api_plugin.core.digits import MAX_DIGITS, ascii_int
from hermes_api_plugin.core.errors import ApiError
from hermes_api_plugin.protocol.common import last_event_id
from hermes_api_plugin.protocol.params import IntText
from tests.helpers import HOSTILE_NUMBERS

# Every class of Unicode digit str.isdigit() or isdecimal() accepts: superscripts, Arabic-Indic, Devanagari,
# fullwidth, circled, mathematical bold, Kharosthi (digit, not decimal).
UNICODE_DIGITS = ["²", "³", "¹", "٣", "۳", "३", "１", "①", "𝟑", "𐩃", "1٣", "٣1"]


@pytest.mark.parametrize("text", [*UNICODE_DIGITS, *HOSTILE_NUMBERS, "9" * (MAX_DIGITS + 1), "9" * 4301, "0x10", "1_0"])
def test_issue20_defect1_only_ascii_digits_of_bounded_length_are_a_number(text: str) -> None:
    """No sign, space, exponent or other script; never more than MAX_DIGITS digits (int() is not reached)."""
    assert ascii_int(text) is None


@pytest.mark.parametrize("text, number", [("0", 0), ("7", 7), ("007", 7), ("9" * MAX_DIGITS, int("9" * MAX_DIGITS))])
def test_ascii_digits_are_read(text: str, number: int) -> None:
    assert ascii_int(text) == number


@pytest.mark.parametrize("value", [*UNICODE_DIGITS, *HOSTILE_NUMBERS])
def test_issue20_defect1_a_last_event_id_that_is_not_an_id_means_from_the_start(value: str) -> None:
    """WIRE §6.3, §7.4: never an error, never int() of the raw text; HTTP's optional whitespace is trimmed."""
    assert last_event_id({"Last-Event-ID": value}) == (3 if value == " 3 " else 0)


@pytest.mark.parametrize("value", [*UNICODE_DIGITS, "9" * 4301, "+3", " 3", "1e3", "", "-", "--1", "-٣"])
def test_issue20_defect1_an_integer_query_value_of_other_digits_is_a_400(value: str) -> None:
    with pytest.raises(ApiError) as refused:
        IntText(-1, 1_000_000_000).check(value, "starting_after")
    assert refused.value.status == 400 and refused.value.param == "starting_after"


def test_integer_query_values_still_read() -> None:
    node = IntText(-1, 100)
    assert [node.check(v, "n") for v in ("-1", "0", "100", 5)] == [-1, 0, 100, 5]
