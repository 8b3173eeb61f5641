"""The group table: input records in, groups out (docs/protocol.md, Aggregated views).

``apply`` takes one input record's new state (None: it is no longer an input, deleted, expired or
no longer passing the filters) and updates the group it left and the group it joined, in
constant time per aggregate (logarithmic for MIN and MAX). What each record contributed is kept
with it, so a record that leaves is taken out without reading it again.

One table serves every projection over one grouping of the same input records (projection.py
writes each projection's group records from it): its inputs are the union of theirs, each read
once per change however many projections use it, and a projection that needs an input the table
lacks adds it with one pass over the input records (``adopt``).

Changes are collected, not sent: ``drain`` answers the groups touched since the last drain. The
aggregations drain once when a unit of work (a frame, a transaction) ends, so they change each
group once, however many of its records the group holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from ..fanout.runs import CHUNK, Run, RunMerge
from ..filters.functions import EvalContext
from ..records.paths import MISSING, PathSteps, get_path
from .functions import Accumulator
from .group_keys import group_key
from .inputs import Output, TableInputs, settle
from .parse import Spec

MATCH = "match"


@dataclass(slots=True)
class Group:
    key: str
    accumulators: list[Accumulator]
    # record key -> what it contributed (one item per input of the table), in order of last change
    members: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    seq: int = 0  # the last change that touched it: the version of its records
    timestamp: float = 0.0


@dataclass(slots=True)
class Touched:
    """A group touched since the last drain: whether it existed before, how its last record left
    (when it is gone), and the change that last touched it."""

    key: str
    existed: bool
    gone: str
    seq: int
    timestamp: float


_CACHED_KEYS = 1 << 16  # group keys remembered by grouping values, at most


class GroupTable:
    def __init__(self, grouping: tuple[PathSteps, ...], ctx: EvalContext) -> None:
        self.grouping = grouping
        self.ctx = ctx
        self.groups: dict[str, Group] = {}
        self._where: dict[str, str] = {}  # input record key -> its group's key
        self.layout = TableInputs(ctx)  # what it reads of each record and keeps per group
        self._group_name = grouping[0][0] if len(grouping) == 1 and len(grouping[0]) == 1 else None
        self._keys: dict[Any, str] = {}  # grouping values -> group key (no booleans: True == 1)
        # Touched since the last drain: group key -> [whether it existed, how its last record
        # left, the seq and time of the last change that touched it].
        self._touched: dict[str, list[Any]] = {}
        self._last = (0, 0.0)  # the latest change applied

    @property
    def inputs(self) -> int:
        """How many values each input record contributes (the union of the projections' inputs)."""
        return len(self.layout.readers)

    def missing(self, spec: Spec) -> int:
        """How many inputs and accumulators ``spec`` needs that the table does not keep yet."""
        return self.layout.missing(spec)

    def adopt(self, spec: Spec, read: Callable[[str], Any] | None = None) -> list[Output]:
        """Where each of ``spec``'s fields comes from, the inputs it needs that the table lacks
        added first: read from every record the table holds (``read``: a record's data now, by
        its key; one pass), which may be None only while the table is empty."""
        added, new_slots, outputs = self.layout.register(spec)
        if (added or new_slots) and self._where:
            assert read is not None, "a table that holds records adds inputs by a pass over them"
            self._extend(added, new_slots, read)
        return outputs

    def _extend(self, added: list[int], new_slots: list[int], read: Callable[[str], Any]) -> None:
        """Read the ``added`` inputs of every record the table holds (its data now: ``read``) and
        fill every group's accumulators ``new_slots`` from them. The members are read, not what
        passes the gates now: a gate that reads the clock may have changed its mind since."""
        layout = self.layout
        readers = [layout.readers[index] for index in added]
        first = len(layout.readers) - len(added)  # inputs are added at the end, in order
        accumulated = layout.accumulated
        plan = [(accumulated[slot][0], slot, accumulated[slot][1] == "extreme") for slot in new_slots]
        groups, accumulate = self.groups, self._accumulate
        for group in groups.values():
            group.accumulators.extend(layout.new_accumulators(new_slots))
        # In the order the table took its records in, much the order they are stored in: read
        # from all over memory instead (group by group), the pass took twice as long.
        for key, gkey in self._where.items():
            group = groups[gkey]
            members = group.members
            data = read(key)
            given = members[key][:first] + tuple([read_input(data) for read_input in readers])
            members[key] = given  # keeps its place: the order of last change
            accumulate(group, given, plan)
        for group in groups.values():
            settle(group.accumulators[slot] for slot in new_slots)

    def compact(self, outputs: list[list[Output]]) -> None:
        """Keep only the inputs and accumulators the projections left use (``outputs``: each
        one's, renumbered in place): a projection that left, or was refused after it joined, took
        the inputs only it read with it, so no change reads them any more."""
        kept = self.layout.renumber(outputs)
        if kept is None:
            return
        keep_inputs, keep_slots = kept
        for group in self.groups.values():
            members = group.members
            for key, given in members.items():  # values replaced, none added: the order stays
                members[key] = tuple([given[index] for index in keep_inputs])
            group.accumulators = [group.accumulators[slot] for slot in keep_slots]

    @staticmethod
    def _accumulate(group: Group, given: tuple[Any, ...], plan: list[tuple[int, int, bool]]) -> None:
        accumulators = group.accumulators
        for index, slot, gathered in plan:
            value = given[index]
            if value is not None:
                if gathered:
                    accumulators[slot].gather(value)  # type: ignore[attr-defined]
                else:
                    accumulators[slot].add(value)

    def group_of(self, data: Any) -> str:
        """The key of the group record ``data`` belongs to."""
        name = self._group_name
        if name is not None:  # one top-level grouping field: the common case
            value = data.get(name, MISSING) if type(data) is dict else MISSING
            kind = type(value)
            if kind is str or kind is int or kind is float or value is None or value is MISSING:
                found = self._keys.get(value)
                if found is None:
                    if len(self._keys) >= _CACHED_KEYS:
                        self._keys.clear()
                    found = self._keys[value] = group_key((value,))
                return found
            return group_key((value,))
        return group_key(tuple(get_path(data, steps) for steps in self.grouping))

    def apply(self, key: str, data: Any | None, seq: int, timestamp: float, gone: str = MATCH) -> None:
        """Input record ``key`` is now ``data`` (None: no longer an input, for the reason
        ``gone``: ``deleted``, ``expired`` or ``match``) as of change ``seq``."""
        self._last = (seq, timestamp)
        was = self._where.get(key)
        if data is None:
            if was is not None:
                self._leave(was, key, gone)
            return
        now = self.group_of(data)
        given = tuple([read(data) for read in self.layout.readers])
        if was == now:  # the common case: a record that stays in its group
            self._update(now, key, given)
            return
        if was is not None:
            self._leave(was, key, MATCH)
        self._join(now, key, given)

    def load(self, records: Iterable[tuple[str, Any, int, float]]) -> None:
        """The first pass: every input record at once (none is in the table yet), told to nobody
        (``drain`` answers none of them). ``TableLoad`` does it in parts."""
        loading = TableLoad(self)
        loading.feed(records)
        while not loading.settle_some(1 << 62):
            pass

    def _touch(self, gkey: str) -> list[Any]:
        seq, timestamp = self._last
        touched = self._touched.get(gkey)
        if touched is None:
            touched = self._touched[gkey] = [gkey in self.groups, MATCH, seq, timestamp]
        elif seq >= touched[2]:
            touched[2], touched[3] = seq, timestamp
        return touched

    def _join(self, gkey: str, key: str, given: tuple[Any, ...]) -> None:
        self._touch(gkey)
        group = self.groups.get(gkey)
        if group is None:
            group = self.groups[gkey] = Group(gkey, self.layout.new_accumulators())
        group.seq, group.timestamp = self._last
        accumulators = group.accumulators
        for index, slot in self.layout.slots:
            value = given[index]
            if value is not None:
                accumulators[slot].add(value)
        group.members[key] = given
        self._where[key] = gkey

    def _update(self, gkey: str, key: str, given: tuple[Any, ...]) -> None:
        """A record that stays in its group: what changed of its contribution is replaced."""
        self._touch(gkey)
        group = self.groups[gkey]
        group.seq, group.timestamp = self._last
        members = group.members
        before = members.pop(key)
        members[key] = given  # the latest record now
        accumulators = group.accumulators
        for index, slot in self.layout.slots:
            old, new = before[index], given[index]
            if old is new:
                continue
            if old is None:
                accumulators[slot].add(new)
            elif new is None:
                accumulators[slot].remove(old)
            else:
                accumulators[slot].replace(old, new)

    def _leave(self, gkey: str, key: str, gone: str) -> None:
        touched = self._touch(gkey)
        group = self.groups[gkey]
        group.seq, group.timestamp = self._last
        given = group.members.pop(key)
        del self._where[key]
        if not group.members:
            del self.groups[gkey]
            touched[1] = gone
            return
        accumulators = group.accumulators
        for index, slot in self.layout.slots:
            value = given[index]
            if value is not None:
                accumulators[slot].remove(value)

    def drain(self) -> list[Touched]:
        """The groups touched since the last drain (a group that came and went in between is
        among them, not existing before or now), in the order of the changes that last touched
        them, as a topic's history keeps them (a group first touched earlier goes after one last
        touched earlier)."""
        touched, self._touched = self._touched, {}
        return [
            Touched(gkey, existed, gone, seq, timestamp)
            for gkey, (existed, gone, seq, timestamp) in sorted(touched.items(), key=_by_seq)
        ]


class TableLoad:
    """The first pass of an empty table in parts: ``feed`` it the input records (in the order the
    SOW keeps them), as many times as there are parts, then ``settle_some`` until it answers True.
    Each group's MIN and MAX values are gathered unsorted and sorted once, when it settles. A SOW
    keeps its records in the order they were first stored, so a group whose records came out of
    the order of their last change has its members put in that order as it settles (a plain field
    is the latest changed record's)."""

    __slots__ = ("_plan", "_reordering", "_seq_of", "_settled", "_table", "_unordered")

    def __init__(self, table: GroupTable) -> None:
        assert not table.groups, "a load fills an empty table"
        self._table = table
        # (input, slot, whether its values wait for the one sort)
        self._plan = [
            (index, slot, family == "extreme")
            for slot, (index, family, _) in enumerate(table.layout.accumulated)
        ]
        self._seq_of: dict[str, int] = {}
        self._unordered: set[str] = set()
        self._settled: Iterator[Group] | None = None  # the groups left to settle, once fed
        self._reordering: _Reorder | None = None  # a big group being put in order

    def feed(self, records: Iterable[tuple[str, Any, int, float]]) -> None:
        """More input records, each new to the table."""
        table = self._table
        where, groups, readers = table._where, table.groups, table.layout.readers
        group_of, new_accumulators, accumulate = (
            table.group_of,
            table.layout.new_accumulators,
            table._accumulate,
        )
        plan, seq_of, unordered = self._plan, self._seq_of, self._unordered
        last_seq, last_time = table._last
        for key, data, seq, timestamp in records:
            gkey = group_of(data)
            given = tuple([read(data) for read in readers])
            group = groups.get(gkey)
            if group is None:
                group = groups[gkey] = Group(gkey, new_accumulators(), seq=seq, timestamp=timestamp)
            elif seq >= group.seq:
                group.seq, group.timestamp = seq, timestamp
            else:
                unordered.add(gkey)
            accumulate(group, given, plan)
            group.members[key] = given
            where[key] = gkey
            seq_of[key] = seq
            if seq >= last_seq:
                last_seq, last_time = seq, timestamp
        table._last = (last_seq, last_time)

    def settle_some(self, members: int) -> bool:
        """Settle groups of about ``members`` records in all (at least one group); True once
        every group is settled and the table is ready for ``apply``."""
        pending = self._settled
        if pending is None:  # (the table is fed no more: the groups are walked as they are)
            pending = self._settled = iter(self._table.groups.values())
        seq_of, unordered = self._seq_of, self._unordered
        while members > 0:
            reordering = self._reordering
            if reordering is not None:
                if reordering.advance():
                    self._reordering = None
                members -= CHUNK
                continue
            group = next(pending, None)
            if group is None:
                self._settled = iter(())
                return True
            if group.key in unordered:
                if len(group.members) > CHUNK:
                    self._reordering = _Reorder(group, seq_of)
                    continue
                group.members = dict(sorted(group.members.items(), key=lambda item: seq_of[item[0]]))
            settle(group.accumulators)
            members -= len(group.members)
        return False


class _Reorder:
    """A big group's members put in the order of their last change, a slice at a time (each chunk
    of them sorted, the sorted chunks merged, the members taken again a chunk at a time), then
    settled: one sort of them all was one step (60 ms a group of 28,000 records whose records
    had changed out of their order, 0.2 to 0.4 s for every other socket over 200,000)."""

    __slots__ = ("_at", "_group", "_keys", "_merge", "_order", "_put", "_seq_of")

    def __init__(self, group: Group, seq_of: dict[str, int]) -> None:
        self._group = group
        self._seq_of = seq_of
        self._keys: Iterator[str] | None = iter(group.members)  # (the table is fed no more)
        self._merge = RunMerge(list.sort)
        self._order: Run | None = None
        self._at = 0
        self._put: dict[str, tuple[Any, ...]] = {}

    def advance(self) -> bool:
        """One slice; True once the group is in order and settled."""
        keys = self._keys
        if keys is not None:
            chunk = [(self._seq_of[key], key) for key in islice(keys, CHUNK)]
            if chunk:
                chunk.sort()
                self._merge.add(chunk)
                return False
            self._keys = None
        order = self._order
        if order is None:
            if self._merge.advance():
                self._order = self._merge.result()
            return False
        group = self._group
        if self._at < len(order):
            members = group.members
            self._put.update([(key, members[key]) for _, key in order[self._at]])
            self._at += 1
            return False
        group.members = self._put
        settle(group.accumulators)
        return True


def _by_seq(item: tuple[str, list[Any]]) -> int:
    return item[1][2]  # type: ignore[no-any-return]
