"""Projections that share one group table: each joins when it likes (adding the inputs it needs
by a pass over the records the table holds) and may leave (the table then drops what only it
read), and each one's groups, and the groups its client rebuilds from its changes, equal its
groups computed from scratch."""

from __future__ import annotations

from typing import Any
from unittest import mock

from hypothesis import example, given, settings
from hypothesis import strategies as st

from server.core.aggregate import functions
from server.core.aggregate.groups import GroupTable
from server.core.aggregate.parse import parse_aggregation
from server.core.aggregate.projection import Projection
from server.core.filters.functions import EvalContext

from .reference import groups_from_scratch, remember
from .test_groups import CHANGES, _same
from .test_groups import ITEMS as ALL_ITEMS

# The projections draw from every aggregate; MAX of /qty and the deviation of /px besides, so that
# a later projection may need the squares of a sum an earlier one kept without them.
ITEMS = [*ALL_ITEMS, "MAX(/qty) AS /top", "STDDEV_SAMP(/px) AS /sdp"]
PROJECTIONS = st.lists(
    st.lists(st.sampled_from(ITEMS), min_size=0, max_size=5, unique=True), min_size=1, max_size=4
)


@settings(max_examples=150, deadline=None)
@given(
    projections=PROJECTIONS,
    joins=st.lists(st.integers(0, 40), min_size=4, max_size=4),
    leaves=st.lists(st.integers(0, 60), min_size=4, max_size=4),
    changes=CHANGES,
)
@example(  # a sum that a later projection needs the squares of: a second accumulator, filled by a pass
    projections=[["SUM(/qty) AS /qty"], ["STDDEV_POP(/qty) AS /sd"]],
    joins=[0, 2, 0, 0],
    leaves=[60, 60, 60, 60],
    changes=[("p", {"desk": "a", "qty": 2}, False), ("q", {"desk": "a", "qty": 4}, True)],
)
@example(  # the first leaves: the second's accumulators and inputs are renumbered
    projections=[["SUM(/qty) AS /qty", "MIN(/px) AS /low"], ["/sym", "STDDEV_POP(/px) AS /sd"]],
    joins=[0, 1, 0, 0],
    leaves=[2, 60, 60, 60],
    changes=[
        ("p", {"desk": "a", "qty": 2, "px": 1, "sym": "X"}, True),
        ("q", {"desk": "a", "qty": 4, "px": 3}, True),
        ("p", {"desk": "a", "qty": 5, "px": 2, "sym": "Y"}, True),
    ],
)
def test_each_projection_of_a_shared_table_equals_its_groups_from_scratch(
    projections: list[list[str]], joins: list[int], leaves: list[int], changes: list[tuple[str, Any, bool]]
) -> None:
    specs = [parse_aggregation(["/desk"], ["/desk", *items]) for items in projections]
    table = GroupTable(specs[0].grouping, EvalContext())
    views: list[tuple[Projection, dict[str, Any]]] = []  # each projection and its client's groups
    left: set[int] = set()  # the projections that left (the last one never does)
    records: dict[str, Any] = {}
    order: list[str] = []

    def join_due(step: int) -> None:
        for n, spec in enumerate(specs):
            if n == len(views) and joins[n] <= step:
                view = Projection(table, spec, records.get)
                client = {change.key: change.after for change in view.everything()}
                views.append((view, client))

    def leave_due(step: int) -> None:
        for n in range(len(views) - 1):
            if n not in left and leaves[n] <= step:
                left.add(n)
                table.compact([view.outputs for at, (view, _) in enumerate(views) if at not in left])

    def drain() -> None:
        touched = table.drain()
        for n, (view, client) in enumerate(views):
            if n in left:
                continue
            for change in view.changes(touched):
                assert change.new == (change.key not in client)
                if change.after is None:
                    del client[change.key]
                else:
                    client[change.key] = change.after

    with mock.patch.object(functions, "SMALL", 4):
        join_due(0)
        for seq, (key, data, drained) in enumerate(changes, 1):
            table.apply(key, data, seq, float(seq), "deleted")
            remember(records, order, key, data)
            if drained:
                drain()
                join_due(seq)  # a projection joins or leaves between units of work
                leave_due(seq)
        drain()
        join_due(1 << 30)  # the rest join at the end
    assert len(views) == len(specs)
    for n, ((view, client), spec) in enumerate(zip(views, specs, strict=True)):
        if n in left:
            continue
        expected = groups_from_scratch(spec, records, order)
        assert _same({g.key: view.record(g) for g in table.groups.values()}, expected)
        assert _same(client, expected)


def test_inputs_are_shared_and_only_missing_ones_are_added() -> None:
    table = GroupTable(parse_aggregation(["/desk"], ["/desk"]).grouping, EvalContext())
    first = parse_aggregation(["/desk"], ["/desk", "SUM(/qty) AS /qty", "MIN(/px) AS /low"])
    Projection(table, first)
    assert table.inputs == 3
    same_inputs = parse_aggregation(["/desk"], ["/desk", "AVG(/qty) AS /avg", "MAX(/px) AS /high"])
    assert table.missing(same_inputs) == 0
    more = parse_aggregation(["/desk"], ["/desk", "STDDEV_POP(/qty) AS /sd", "COUNT(/px) AS /n"])
    assert table.missing(more) == 2  # the sum of /qty with squares, and COUNT's /px
    Projection(table, more)
    assert table.missing(more) == 0 and table.missing(first) == 0
