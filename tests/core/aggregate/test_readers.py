"""The short ways of reading an aggregate's argument (aggregate/readers.py) answer what the
evaluator answers, prepared the same way, whatever the record holds."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from server.core.aggregate.functions import FAMILY, PREPARE
from server.core.aggregate.readers import aggregate_reader
from server.core.filters import compile_filter
from server.core.filters.functions import EvalContext

FIELD_VALUES = st.one_of(
    st.none(),
    st.integers(-(2**64), 2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 0.0, -0.0, 2**53 + 1]),
    st.sampled_from(["", "a", "10", "2.5", "1e400", " 3"]),
    st.booleans(),
    st.lists(st.integers(-5, 5), max_size=2),
    # An object holds what a record may (the edge refuses other integers: protocol/inbound.py).
    st.dictionaries(st.sampled_from(["x"]), st.integers(-(2**63), 2**64 - 1), max_size=1),
)
ARGUMENTS = [
    "/a",
    "/a * 3",
    "3 * /a",
    "/a * /b",
    "/a + /b",
    "/a - /b",
    "/a - 2.5",
    "1e308 * /a",
    "/a * 9223372036854775808",
    "/a * 99999999999999999999999",
    "/a / 2",
    "/a % /b",
    "/a * 'x'",
    "/a * TRUE",
    "-/a",
    "/c/d * 2",
]


def _same(a: Any, b: Any) -> bool:
    if type(a) is float and type(b) is float and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is tuple and type(b) is tuple:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b and type(a) is type(b))


@settings(max_examples=500, deadline=None)
@given(
    function=st.sampled_from(sorted(FAMILY)),
    argument=st.sampled_from(ARGUMENTS),
    record=st.fixed_dictionaries({}, optional={"a": FIELD_VALUES, "b": FIELD_VALUES, "c": FIELD_VALUES}),
)
def test_a_reader_answers_what_the_evaluator_answers(
    function: str, argument: str, record: dict[str, Any]
) -> None:
    family, ctx = FAMILY[function], EvalContext()
    compiled = compile_filter(argument)
    expected = PREPARE[family](compiled.evaluate(record, ctx))
    assert _same(aggregate_reader(family, compiled, ctx)(record), expected), (function, argument, record)


@given(argument=st.sampled_from(ARGUMENTS), function=st.sampled_from(sorted(FAMILY)))
def test_a_reader_of_what_is_not_an_object_answers_what_the_evaluator_answers(
    argument: str, function: str
) -> None:
    family, ctx = FAMILY[function], EvalContext()
    compiled = compile_filter(argument)
    for record in (None, 3, "text", [1, 2]):
        expected = PREPARE[family](compiled.evaluate(record, ctx))
        assert _same(aggregate_reader(family, compiled, ctx)(record), expected)
