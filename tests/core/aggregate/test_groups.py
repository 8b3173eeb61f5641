"""The group table, fed any sequence of changes (transactions included), holds the groups computed
from scratch, and the changes it drains rebuild them."""

from __future__ import annotations

import math
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from server.core.aggregate import functions
from server.core.aggregate.group_keys import group_key
from server.core.aggregate.groups import GroupTable
from server.core.aggregate.parse import Spec, parse_aggregation
from server.core.aggregate.projection import GroupChange, Projection
from server.core.filters.functions import EvalContext

from .reference import groups_from_scratch, remember

ITEMS = [  # every aggregate, and plain fields: a bare one and an expression
    "SUM(/qty) AS /qty",
    "SUM(/qty * /px) AS /notional",
    "COUNT(/px) AS /priced",
    "COUNT(*) AS /n",
    "COUNT_DISTINCT(/sym) AS /syms",
    "AVG(/px) AS /avg",
    "MIN(/px) AS /low",
    "MAX(/px) AS /high",
    "STDDEV_POP(/qty) AS /sd",
    "STDDEV_SAMP(/qty) AS /sds",
    "/sym",
    "/qty + 1 AS /next",
]
SPEC = parse_aggregation(["/desk"], ["/desk", *ITEMS])

RECORDS = st.fixed_dictionaries(
    {},
    optional={
        "desk": st.sampled_from(["a", "b", "c", 1, 1.0, True, None]),
        "qty": st.one_of(st.none(), st.integers(-100, 100), st.floats(-100, 100, allow_nan=False)),
        "px": st.one_of(st.none(), st.integers(0, 10), st.sampled_from([0.5, 1.25, "3", "x"])),
        "sym": st.sampled_from(["X", "Y", "", None]),
    },
)
CHANGES = st.lists(
    st.tuples(st.sampled_from("pqrstu"), st.one_of(st.none(), RECORDS), st.booleans()), max_size=40
)


class _Table:
    """A group table and one projection over it: what one aggregation writes."""

    def __init__(self, spec: Spec) -> None:
        self.table = GroupTable(spec.grouping, EvalContext())
        self.projection = Projection(self.table, spec)
        self.groups = self.table.groups
        self.apply = self.table.apply
        self.load = self.table.load
        self.record = self.projection.record

    def drain(self) -> list[GroupChange]:
        return self.projection.changes(self.table.drain())


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return bool(a == b and type(a) is type(b))


@settings(max_examples=200, deadline=None)
@given(changes=CHANGES)
def test_table_equals_from_scratch(changes: list[tuple[str, Any, bool]]) -> None:
    table = _Table(SPEC)
    records: dict[str, Any] = {}
    order: list[str] = []
    client: dict[str, Any] = {}  # what a subscriber rebuilds from the drained changes
    for seq, (key, data, drain) in enumerate(changes, 1):
        table.apply(key, data, seq, float(seq), "deleted")
        remember(records, order, key, data)
        if drain:
            for change in table.drain():
                assert change.new == (change.key not in client)
                if change.after is None:
                    del client[change.key]
                else:
                    client[change.key] = change.after
    for change in table.drain():
        if change.after is None:
            client.pop(change.key)
        else:
            client[change.key] = change.after
    expected = groups_from_scratch(SPEC, records, order)
    actual = {g.key: table.record(g) for g in table.groups.values()}
    assert _same(actual, expected)
    assert _same(client, expected)


def test_a_record_that_moves_changes_both_groups_in_one_drain() -> None:
    table = _Table(SPEC)
    table.apply("r", {"desk": "a", "qty": 1}, 1, 1.0)
    table.apply("s", {"desk": "b", "qty": 2}, 2, 1.0)
    table.drain()
    table.apply("r", {"desk": "b", "qty": 1}, 3, 2.0)
    changes = {c.key: c for c in table.drain()}
    a, b = group_key(("a",)), group_key(("b",))
    assert changes[a].after is None and changes[a].gone == "match"
    after = changes[b].after
    assert after is not None and after["qty"] == 3


def test_the_last_record_deleted_gives_its_reason() -> None:
    table = _Table(SPEC)
    table.apply("r", {"desk": "a", "qty": 1}, 1, 1.0)
    table.drain()
    table.apply("r", None, 2, 2.0, "expired")
    (change,) = table.drain()
    assert change.after is None and change.gone == "expired" and change.seq == 2


def test_a_group_that_comes_and_goes_within_a_drain_is_not_told() -> None:
    table = _Table(SPEC)
    table.apply("r", {"desk": "a", "qty": 1}, 1, 1.0)
    table.apply("r", None, 2, 1.0, "deleted")
    assert table.drain() == []


def test_group_keys_are_canonical() -> None:
    assert group_key((1,)) == group_key((1.0,))
    assert group_key(("1",)) != group_key((1,))
    assert group_key((None,)) == group_key((None,))
    assert group_key(({"b": 1, "a": 2},)) == group_key(({"a": 2, "b": 1},))
    assert group_key(("desk-1",)) == "d55135e8afe6ac191ecf"  # the same on every node, every run


@settings(max_examples=100, deadline=None)
@given(records=st.lists(RECORDS, max_size=30), changes=CHANGES)
def test_the_first_pass_equals_the_records_applied_one_by_one(
    records: list[dict[str, Any]], changes: list[tuple[str, Any, bool]]
) -> None:
    # MIN and MAX past a few values move from a plain list to a SortedList (functions.SMALL).
    with mock.patch.object(functions, "SMALL", 4):
        loaded, applied = _Table(SPEC), _Table(SPEC)
        rows = [(f"r{n}", data, n + 1, float(n + 1)) for n, data in enumerate(records)]
        loaded.load(iter(rows))
        for key, data, seq, timestamp in rows:
            applied.apply(key, data, seq, timestamp)
        assert loaded.drain() == []  # the first pass is told to nobody
        assert {c.key: (c.after, c.seq) for c in loaded.projection.everything()} == {
            c.key: (c.after, c.seq) for c in applied.drain()
        }
        for seq, (key, data, _) in enumerate(changes, len(rows) + 1):
            for table in (loaded, applied):
                table.apply(key, data, seq, float(seq), "deleted")
        current = {key: data for key, data, _, _ in rows}
        order = list(current)
        for key, data, _ in changes:
            remember(current, order, key, data)
        expected = groups_from_scratch(SPEC, current, order)
        for table in (loaded, applied):
            assert _same({g.key: table.record(g) for g in table.groups.values()}, expected)
