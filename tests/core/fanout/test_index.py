"""The subscription index may let through records that do not match, never drop one that does."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.core.filters import compile_filter
from server.core.filters.analysis import index_term

from ..harness import Harness

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([1.0, 2.5, -0.0]),
    st.sampled_from(["", "1", "1.0", " 2 ", "a", "A", "true", "x y"]),
)
literals = st.sampled_from(
    ["1", "1.0", "'1'", "'a'", "'A'", "TRUE", "FALSE", "NULL", "''", "2.5", "-3", "' 2 '"]
)
paths = st.sampled_from(["/v", "/n/v", "/list", "/objs/v", "/list[0]"])


@st.composite
def filters(draw: st.DrawFn) -> str:
    path = draw(paths)
    if draw(st.booleans()):
        left = f"{path} = {draw(literals)}" if draw(st.booleans()) else f"{draw(literals)} = {path}"
    else:
        left = f"{path} IN ({', '.join(draw(st.lists(literals, min_size=1, max_size=3)))})"
    extra = draw(st.sampled_from(["", " AND /w > 0", " AND /w IS NULL"]))
    return left + extra


records = st.fixed_dictionaries(
    {},
    optional={
        "v": values,
        "w": values,
        "n": st.fixed_dictionaries({}, optional={"v": values}),
        "list": st.lists(values, max_size=3),
        "objs": st.lists(st.fixed_dictionaries({}, optional={"v": values}), max_size=3),
    },
)


@settings(max_examples=1000, suppress_health_check=[HealthCheck.too_slow])
@given(filters(), records)
def test_a_matching_record_is_always_admitted(text: str, record: dict[str, Any]) -> None:
    compiled = compile_filter(text)
    term = index_term(compiled.tree)
    assert term is not None
    if compiled.matches(record):
        assert set(term.record_keys(record)) & term.keys, (text, record)


def test_only_top_level_conjuncts_are_indexed() -> None:
    assert index_term(compile_filter("/a = 1 OR /b = 2").tree) is None
    assert index_term(compile_filter("NOT /a = 1").tree) is None
    assert index_term(compile_filter("/a NOT IN (1, 2)").tree) is None
    assert index_term(compile_filter("3 IN (/a)").tree) is None
    term = index_term(compile_filter("/a IN (1, 2, 3) AND /b = 'x' AND /c > 1").tree)
    assert term is not None and term.steps == ("b",) and term.keys == frozenset({"x"})


def test_indexed_subscriptions_still_get_their_oof() -> None:
    hub = Harness()
    publisher, watcher = hub.peer(), hub.peer()
    publisher.send({"c": "publish", "t": "orders", "data": {"order": 1, "sym": "A"}})
    watcher.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "a", "filter": "/sym = 'A'", "o": "oof"})
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "b", "filter": "/sym IN ('B', 'C')"})
    watcher.take()
    publisher.send({"c": "publish", "t": "orders", "data": {"order": 1, "sym": "B"}})
    assert [(m["c"], m["sids"]) for m in watcher.take()] == [("oof", ["a"]), ("p", ["b"])]


def test_a_thousand_equality_subscriptions_evaluate_only_the_matching_one() -> None:
    hub = Harness()
    publisher = hub.peer()
    watchers = [hub.peer() for _ in range(1000)]
    for n, watcher in enumerate(watchers):
        watcher.send({"c": "subscribe", "t": "orders", "sub_id": "s", "filter": f"/order = {n}"})
    calls = 0
    topic = hub.engine.broker.topics["orders"]
    for sub in [s for subs in topic.subscribers.values() for s in subs]:
        original = sub.matches

        def counting(data: Any, original: Any = original) -> bool:
            nonlocal calls
            calls += 1
            return bool(original(data))

        sub.matches = counting  # type: ignore[method-assign]
    publisher.send({"c": "publish", "t": "orders", "data": {"order": 500}})
    assert calls == 1
    assert [len(w.take()) for w in watchers].count(1) == 1
