"""The filter language, driven by cases written as data, plus properties that hold for any input."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.core.errors import FilterError
from server.core.filters import compile_filter, parse_orderby
from server.core.filters.compiler import general_filter
from server.core.filters.functions import EvalContext

SUITE = json.loads((Path(__file__).parent / "cases" / "filters.json").read_text())
RECORD = SUITE["record"]
CTX = EvalContext(clock=lambda: 1_800_000_000.0, user="alice", client_name="desk-1")


@pytest.mark.parametrize("case", SUITE["cases"], ids=lambda case: case["filter"] or "<empty>")
def test_case(case: dict[str, Any]) -> None:
    if case.get("error"):
        with pytest.raises(FilterError) as error:
            compile_filter(case["filter"])
        assert error.value.reason.startswith("bad filter")
        if "column" in case:
            assert error.value.column == case["column"], error.value.reason
    else:
        assert compile_filter(case["filter"]).matches(RECORD, CTX) is case["expect"]


def test_user_and_client_name_come_from_the_subscriber() -> None:
    assert compile_filter("USER() = 'alice' AND CLIENT_NAME() = 'desk-1'").matches({}, CTX)


def test_errors_say_what_was_expected_with_a_column() -> None:
    with pytest.raises(FilterError) as error:
        compile_filter("(/a = 1")
    assert error.value.reason == "bad filter: expected ')' but found end of filter at column 8"


def test_deep_nesting_and_huge_filters_are_refused_cleanly() -> None:
    with pytest.raises(FilterError):
        compile_filter("(" * 5000 + "1" + ")" * 5000)
    with pytest.raises(FilterError):
        compile_filter("NOT " * 5000 + "/a = 1")
    with pytest.raises(FilterError):
        compile_filter("/a = 1 OR " * 200_000 + "/a = 2")


def test_a_long_flat_chain_of_or_compiles_and_runs() -> None:
    text = " OR ".join(f"/id = {n}" for n in range(1000))  # 13 KB: within the 16 KiB limit
    assert compile_filter(text).matches({"id": 999})


def test_like_runs_in_linear_time() -> None:
    evil = compile_filter("/s LIKE '^(a+)+$'")
    started = time.thread_time()  # its own work, whatever else runs (tests/work.py)
    assert not evil.matches({"s": "a" * 100_000 + "!"})
    assert time.thread_time() - started < 1.0


def test_compiled_filters_are_cached_per_text() -> None:
    assert compile_filter("/a = 1") is compile_filter("/a = 1")


json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5)
)
json_records = st.dictionaries(
    st.sampled_from(["a", "b", "c"]),
    st.recursive(
        json_scalars, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=2), kids)
    ),
    max_size=4,
)
filter_alphabet = st.sampled_from(
    [
        "/a",
        "/b",
        "/c[0]",
        " = ",
        " > ",
        " AND ",
        " OR ",
        "NOT ",
        "(",
        ")",
        "'x'",
        "1",
        "2.5",
        " IN (1, 'x')",
        " LIKE 'a.*'",
        " BETWEEN 1 AND 3",
        " IS NULL",
        " + ",
        " / ",
        " % ",
        "UPPER(",
        "SUBSTR(",
        ", ",
        "NULL",
        "-",
        "[/a]",
        "'",
        "TRUE",
        " BEGINS WITH ('a')",
    ]
)


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(filter_alphabet, max_size=12).map("".join), json_records)
def test_any_text_compiles_or_raises_filter_error_and_never_raises_on_records(text: str, record: Any) -> None:
    try:
        compiled = compile_filter(text)
    except FilterError:
        return
    assert compiled.matches(record, CTX) in (True, False)


@settings(max_examples=200)
@given(st.text(max_size=40))
def test_arbitrary_text_only_raises_filter_error(text: str) -> None:
    with contextlib.suppress(FilterError):
        compile_filter(text)


class Item:
    def __init__(self, key: str, data: Any) -> None:
        self.key = key
        self.data = data


def test_orderby_mixed_types_nulls_last_ties_by_key() -> None:
    items = [
        Item("k5", {"v": "b"}),
        Item("k4", {"v": None}),
        Item("k3", {"v": 2}),
        Item("k2", {"v": "a"}),
        Item("k1", {"v": 2}),
        Item("k0", {}),
        Item("k6", {"v": True}),
    ]
    ascending = [item.key for item in parse_orderby("/v").sort(items)]
    assert ascending == ["k6", "k1", "k3", "k2", "k5", "k0", "k4"]
    descending = [item.key for item in parse_orderby("/v DESC").sort(items)]
    assert descending == ["k5", "k2", "k1", "k3", "k6", "k0", "k4"]


def test_orderby_several_terms() -> None:
    items = [Item("a", {"x": 1, "y": 2}), Item("b", {"x": 1, "y": 3}), Item("c", {"x": 0, "y": 1})]
    assert [item.key for item in parse_orderby("/x DESC, /y desc").sort(items)] == ["b", "a", "c"]


@pytest.mark.parametrize("bad", ["", "x", "/a ASC DESC", "/a,", "/a /b"])
def test_bad_orderby_is_invalid_order_by(bad: str) -> None:
    with pytest.raises(Exception) as error:
        parse_orderby(bad)
    assert str(error.value).startswith("invalid order by")


scalar_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.5, 1.0, -2.0, 1e20]),
    st.sampled_from(["", "1", "1.0", " 2", "a", "ab", "B", "S", "tom", "true", "x.y", "a+b", "é"]),
)
differential_records = st.fixed_dictionaries(
    {}, optional={"v": st.one_of(scalar_values, st.lists(scalar_values, max_size=3), st.just({"o": 1}))}
)
differential_filters = st.one_of(
    st.builds(
        "/v {} {}".format,
        st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
        st.sampled_from(["1", "1.5", "-2", "'1'", "'a'", "'ab'", "TRUE", "NULL", "''", "'x.y'"]),
    ),
    st.builds(
        "/v BETWEEN {} AND {}".format,
        st.sampled_from(["0", "-1", "0.5", "'a'"]),
        st.sampled_from(["1", "2.5", "'b'"]),
    ),
    st.builds(
        "/v {}IN ({})".format,
        st.sampled_from(["", "NOT "]),
        st.lists(
            st.sampled_from(["1", "'1'", "'a'", "'B'", "TRUE", "2.0", "''", "NULL", "'1.0'"]),
            min_size=1,
            max_size=3,
        ).map(", ".join),
    ),
    st.builds(
        "/v {}LIKE '{}'".format,
        st.sampled_from(["", "NOT "]),
        st.sampled_from(["^t", "a", "b$", "^ab$", "x\\\\.y", "^1", "rue", "(?i)^A", "a+", "^$"]),
    ),
)


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(differential_filters, differential_records)
def test_specialised_evaluators_agree_with_the_general_path(text: str, record: dict[str, Any]) -> None:
    assert compile_filter(text).matches(record, CTX) == general_filter(text).matches(record, CTX), (
        text,
        record,
    )
