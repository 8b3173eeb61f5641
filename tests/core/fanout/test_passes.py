"""A pass over a topic read in slices (fanout/passes.py), proved by a property test: whatever is
written between its slices (records made, changed, removed, made again), while it reads or while
it catches up with the writes, its end answers what one pass over the records as they are then
answers, in the same order: the records' order, or sorted."""

from __future__ import annotations

from itertools import count
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedList

from server.core.fanout.passes import GatePass
from server.core.fanout.runs import CHUNK, _Merge, flat
from server.core.fanout.sorted_pass import SortedPass
from server.core.fanout.windows import extend_sorted, match_all, sorted_entries
from server.core.filters.orderby import parse_orderby, sowkey_order
from server.core.limits import SLICE_UNITS
from server.core.records.version import RecordVersion
from server.core.sow.store import Sow

KEYS = st.sampled_from([f"k{n}" for n in range(12)])
VALUES = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b"]), st.none())
WRITE = st.tuples(st.sampled_from(["put", "remove"]), KEYS, VALUES)
STEP = st.one_of(st.just(("advance", "", None)), WRITE)


def passes(data: Any) -> bool:
    return isinstance(data.get("v"), int) and data["v"] > -2


def view_of(version: RecordVersion) -> tuple[str, int]:
    return version.key, version.seq


SORTS = [sowkey_order, parse_orderby("/v DESC").sort_key, parse_orderby("/v").sort_key]


@settings(max_examples=300, deadline=None)
@given(
    first=st.lists(st.tuples(KEYS, VALUES), max_size=12),
    steps=st.lists(STEP, max_size=30),
    batch=st.integers(1, 4),
    gated=st.booleans(),
    sort=st.sampled_from(range(len(SORTS))),
)
def test_a_pass_in_slices_ends_as_one_pass_over_the_records_as_they_are(
    first: list[tuple[str, Any]], steps: list[tuple[str, str, Any]], batch: int, gated: bool, sort: int
) -> None:
    sow, seq = Sow(), count(1)

    def write(op: str, key: str, value: Any) -> None:
        if op == "put":
            sow.put(RecordVersion(key, {"v": value}, next(seq), 0.0))
        else:
            sow.remove(key, next(seq), 0.0)

    for key, value in first:
        write("put", key, value)
    matches = passes if gated else match_all
    units = SLICE_UNITS // batch  # a slice of ``batch`` records
    in_order, passing = GatePass(sow, matches, units), GatePass(sow, matches, units)
    viewed = GatePass(sow, matches, units, view_of)  # and what a delta subscription remembers
    ordered, leading = (
        SortedPass(sow, SORTS[sort], matches, units),
        SortedPass(sow, SORTS[sort], matches, units),
    )
    # Every version in order, looked up in slices, and what a delta subscription remembers.
    remembering = SortedPass(sow, SORTS[sort], matches, units, view_of, every=True)
    for op, key, value in steps:
        if op == "advance":  # a slice: of the records, or (once read) of the writes since
            for each in (in_order, passing, viewed, ordered, leading, remembering):
                if each.advance():
                    each.caught_up()
        else:
            write(op, key, value)
    now = [version for version in sow.records.values() if matches(version.data)]
    assert in_order.in_order() == (now, [])  # the same versions (as they are now), in the records' order
    assert viewed.in_order() == (now, [view_of(version) for version in now])
    assert viewed.remembered() == {version.key: view_of(version) for version in now}
    assert passing.passing() == {version.key for version in now}
    passing.close()
    every = sorted_entries(SORTS[sort], matches, sow.records.values())
    records = sow.records
    assert ordered.every_version() == [records[entry[-1]] for entry in every]
    assert remembering.every_version() == [records[entry[-1]] for entry in every]
    assert remembering.remembered() == {entry[-1]: view_of(records[entry[-1]]) for entry in every}
    assert leading.leading(3) == (len(every), every[:3])
    write("put", "later", 1)  # a finished pass notes nothing more
    assert not sow._watchers


def test_a_pass_catches_up_with_the_writes_a_slice_at_a_time_until_a_slice_is_left() -> None:
    """Once read, a pass takes the writes made meanwhile a slice at a time, so its end takes a
    slice of them, not all; and a topic written faster than they are taken still ends."""
    sow, seq = Sow(), count(1)
    for n in range(100):
        sow.put(RecordVersion(f"k{n}", {"v": n}, next(seq), 0.0))
    gate = GatePass(sow, passes, SLICE_UNITS // 10)  # slices of 10 records
    sorted_pass = SortedPass(sow, SORTS[1], passes, SLICE_UNITS // 10)
    for each in (gate, sorted_pass):
        while not each.advance():
            sow.put(RecordVersion(f"k{next(seq) % 100}", {"v": -5}, next(seq), 0.0))
    for n in range(60):
        sow.put(RecordVersion(f"k{n}", {"v": n + 1}, next(seq), 0.0))
    for each in (gate, sorted_pass):
        slices = 0
        while not each.caught_up():
            slices += 1
        assert len(each.watched) <= each.batch and slices >= 5  # (60 writes: a slice is 10)
    # Written faster than taken: 20 writes a slice; it stops catching up once it took 100.
    caught_up, taken = False, 0
    while not caught_up:
        for _ in range(20):
            sow.put(RecordVersion(f"new{next(seq)}", {"v": 1}, next(seq), 0.0))
        caught_up, taken = gate.caught_up(), taken + 1
    assert len(gate.watched) > gate.batch and taken >= 5
    versions, _ = gate.in_order()
    assert versions == [version for version in sow.records.values() if passes(version.data)]
    every = sorted_entries(SORTS[1], passes, sow.records.values())
    assert sorted_pass.every_version() == [sow.records[entry[-1]] for entry in every]


@given(st.lists(st.lists(st.integers(0, 10_000), max_size=3000), max_size=4))
def test_a_sorted_list_extended_at_its_end_is_the_one_update_makes(parts: list[list[int]]) -> None:
    values = sorted(set().union(*parts)) if parts else []
    cuts = sorted({len(part) % (len(values) + 1) for part in parts})
    extended, start = SortedList(), 0
    for cut in [*cuts, len(values)]:
        extend_sorted(extended, [(value,) for value in values[start:cut]])
        start = max(start, cut)
    made = SortedList((value,) for value in values)
    assert list(extended) == list(made) and len(extended) == len(made)
    extended._check()
    for value in (-1, 5_000, 20_000):  # and it works as a sorted list after
        extended.add((value,))
        made.add((value,))
        assert extended.index((value,)) == made.index((value,))
    extended._check()


@given(
    st.lists(st.lists(st.integers(0, 50), min_size=1, max_size=9), max_size=6),
    st.lists(st.lists(st.integers(0, 50), min_size=1, max_size=9), max_size=6),
    st.integers(1, 7),
)
def test_two_runs_in_chunks_merge_a_slice_at_a_time_into_one(
    first: list[list[int]], second: list[list[int]], step: int
) -> None:
    def run(chunks: list[list[int]], side: int) -> list[list[tuple[int, int, int]]]:
        # Sorted, unique (as sort keys are), in chunks of any size.
        every = sorted({(value, side, n) for n, chunk in enumerate(chunks) for value in chunk})
        sizes = [len(chunk) for chunk in chunks]
        out, at = [], 0
        for size in sizes:
            if at < len(every):
                out.append(every[at : at + size])
                at += size
        return [part for part in out if part]

    a, b = run(first, 0), run(second, 1)
    merge = _Merge(a, b)
    while not merge.advance(step):
        pass
    assert flat(merge.merged) == sorted(flat(a) + flat(b))
    assert all(merge.merged) and all(len(part) <= CHUNK for part in merge.merged)
