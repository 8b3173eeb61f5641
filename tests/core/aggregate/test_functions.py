"""The running accumulators equal the aggregate computed from scratch, whatever values come and go."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from server.core.aggregate.functions import accumulator, prepare
from server.core.aggregate.parse import AGGREGATES

from .reference import aggregate

VALUES = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12),
    st.sampled_from(["", "a", "b", "10", "2.5", "zz"]),
    st.booleans(),
)


def _close(a: Any, b: Any) -> bool:
    numbers = (int, float)
    if type(a) in numbers and type(b) in numbers and float in (type(a), type(b)):
        # Equal numbers are one value to MIN and MAX (0 and 0.0): either may be the one shown.
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
    return bool(a == b and type(a) is type(b))


@settings(max_examples=300, deadline=None)
@given(
    function=st.sampled_from(AGGREGATES),
    added=st.lists(VALUES, max_size=30),
    removals=st.lists(st.integers(0, 29), max_size=30),
)
def test_accumulator_equals_from_scratch(function: str, added: list[Any], removals: list[int]) -> None:
    acc = accumulator(function)
    live = list(added)
    for value in added:
        prepared = prepare(function, value)
        if prepared is not None:
            acc.add(prepared)
    for index in removals:
        if index < len(live):
            prepared = prepare(function, live.pop(index))
            if prepared is not None:
                acc.remove(prepared)
        expected = aggregate(function, live)
        assert _close(acc.result(), expected), (function, live, acc.result(), expected)
    assert _close(acc.result(), aggregate(function, live))


def test_nulls_are_ignored() -> None:
    for function in ("SUM", "AVG", "MIN", "MAX", "STDDEV_POP"):
        assert aggregate(function, [None, ""]) is None
        acc = accumulator(function)
        assert acc.result() is None
    assert accumulator("COUNT").result() == 0


def test_sum_is_exact_after_removal() -> None:
    acc = accumulator("SUM")
    for value in (0.1, 0.2, 1e16):
        acc.add(prepare("SUM", value))
    acc.remove(prepare("SUM", 1e16))
    assert acc.result() == float(0.1 + 0.2) or acc.result() == 0.30000000000000004


def test_sum_past_64_bits_is_a_float() -> None:
    acc = accumulator("SUM")
    acc.add(2**63 - 1)
    acc.add(2**63 - 1)
    assert acc.result() == float(2 * (2**63 - 1))


def test_min_and_max_order_numbers_before_strings() -> None:
    acc_min, acc_max = accumulator("MIN"), accumulator("MAX")
    for value in ("b", 3, "10", 2.5):
        acc_min.add(prepare("MIN", value))
        acc_max.add(prepare("MAX", value))
    assert acc_min.result() == 2.5
    assert acc_max.result() == "b"


@settings(max_examples=300, deadline=None)
@given(
    function=st.sampled_from(AGGREGATES),
    added=st.lists(VALUES, min_size=1, max_size=30),
    replacements=st.lists(st.tuples(st.integers(0, 29), VALUES), max_size=30),
)
def test_replacing_a_value_equals_from_scratch(
    function: str, added: list[Any], replacements: list[tuple[int, Any]]
) -> None:
    # A record that stays in its group replaces its value (groups.py: both not None).
    acc = accumulator(function)
    live = list(added)
    for value in added:
        prepared = prepare(function, value)
        if prepared is not None:
            acc.add(prepared)
    for drawn, value in replacements:
        index = drawn % len(live)
        old, new = prepare(function, live[index]), prepare(function, value)
        live[index] = value
        if old is not None and new is not None:
            acc.replace(old, new)
        elif old is not None:
            acc.remove(old)
        elif new is not None:
            acc.add(new)
        expected = aggregate(function, live)
        assert _close(acc.result(), expected), (function, live, acc.result(), expected)
