"""The group table: input records in, group records out (docs/protocol.md, Aggregated views).

``apply`` takes one input record's new state (None: it is no longer an input, deleted, expired or
no longer passing the filters) and updates the group it left and the group it joined, in
constant time per aggregate (logarithmic for MIN and MAX). What each record contributed is kept
with it, so a record that leaves is taken out without reading it again.

Changes are collected, not sent: ``drain`` answers one change per group touched since the last
drain, from the group's record before the first change to its record now. The aggregation drains
once when a unit of work (a frame, a transaction) ends, so it changes each group once, however
many of its records the group holds.

A group's key is derived from its grouping values alone, canonically and hashed as a SowKey is
(records/keys.py): the same on every node and after a restart.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..filters.functions import EvalContext
from ..records.paths import MISSING, PathSteps, get_path, set_path
from .functions import FAMILY, Accumulator, Count, Distinct, Extreme, Sum
from .parse import Spec
from .readers import Reader, aggregate_reader, plain_reader

MATCH = "match"


def _canonical(value: Any) -> str:
    # Tagged as SowKeys are (1 and 1.0 one group, "1" and true others); NULL and missing are one
    # group; objects and arrays by their JSON with sorted keys.
    kind = type(value)
    if value is MISSING or value is None:
        return "z:"
    if kind is str:
        return "s:" + value  # type: ignore[no-any-return]
    if kind is bool:
        return "b:1" if value else "b:0"
    if kind is int:
        return f"n:{value}"
    if kind is float:
        return f"n:{int(value)}" if value.is_integer() else f"n:{value!r}"
    return "j:" + orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def group_key(values: tuple[Any, ...]) -> str:
    """The ``k`` of the group of these grouping values."""
    # Marked as a group's, so that it is never the SowKey of a record of the same topic (a socket
    # queue conflates by topic and key, and a socket may hold both views).
    canonical = "group\x00" + "\x00".join(_canonical(value) for value in values)
    return hashlib.blake2b(canonical.encode(), digest_size=10).hexdigest()


@dataclass(slots=True)
class Group:
    key: str
    accumulators: list[Accumulator]
    # record key -> what it contributed (one item per input: _Inputs), in order of last change
    members: dict[str, tuple[Any, ...]] = field(default_factory=dict)


@dataclass(slots=True)  # not frozen: one is made per group written, and frozen costs 1 us more
class GroupChange:
    key: str
    new: bool  # the group did not exist before the changes drained
    after: dict[str, Any] | None  # now (None: its last record left)
    gone: str  # why it went, when it went: match, deleted or expired
    seq: int
    timestamp: float


_COUNT_ALL = -1  # COUNT(*): the group's members, counted by the group itself
_CACHED_KEYS = 1 << 16  # group keys remembered by grouping values, at most


class GroupTable:
    def __init__(self, spec: Spec, ctx: EvalContext) -> None:
        self.spec = spec
        self.ctx = ctx
        self.groups: dict[str, Group] = {}
        self._where: dict[str, str] = {}  # input record key -> its group's key
        # What a record contributes: one value per input (a plain field's, or an accumulator's
        # prepared value). Inputs shared: one per family and argument.
        self._readers: list[Reader] = []
        self._accumulated: list[tuple[int, str, bool]] = []  # (input, family, any STDDEV)
        inputs: dict[tuple[str, str], int] = {}
        # How each field's value is found, as the group's record is written (record): a
        # top-level field's name (None: a deeper path), its path, its kind (plain; all: COUNT(*);
        # of: the accumulator's ``of`` the argument; result), the input or accumulator slot, and
        # the argument of ``of`` (SUM, AVG and the deviations by name, MIN or MAX by ``least``).
        self._outputs: list[tuple[str | None, PathSteps, str, int, Any]] = []
        for f in spec.fields:
            output = f.output
            name = output[0] if len(output) == 1 and isinstance(output[0], str) else None
            if f.function is None:
                self._outputs.append((name, output, "plain", len(self._readers), None))
                self._readers.append(plain_reader(f, ctx))
            elif f.argument is None:
                self._outputs.append((name, output, "all", _COUNT_ALL, None))
            else:
                family = FAMILY[f.function]
                share = (family, f.argument.text)
                slot = inputs.get(share)
                if slot is None:
                    slot = inputs[share] = len(self._accumulated)
                    self._accumulated.append((len(self._readers), family, False))
                    self._readers.append(aggregate_reader(family, f.argument, ctx))
                if f.function.startswith("STDDEV"):
                    index, _, _ = self._accumulated[slot]
                    self._accumulated[slot] = (index, family, True)
                if family == "sum":
                    self._outputs.append((name, output, "of", slot, f.function))
                elif family == "extreme":
                    self._outputs.append((name, output, "of", slot, f.function == "MIN"))
                else:
                    self._outputs.append((name, output, "result", slot, None))
        self._slots = [(index, slot) for slot, (index, _, _) in enumerate(self._accumulated)]
        grouping = spec.grouping
        self._group_name = grouping[0][0] if len(grouping) == 1 and len(grouping[0]) == 1 else None
        self._keys: dict[Any, str] = {}  # grouping values -> group key (no booleans: True == 1)
        # Touched since the last drain: group key -> [whether it existed, how its last record
        # left, the seq and time of the last change that touched it].
        self._touched: dict[str, list[Any]] = {}
        self._last = (0, 0.0)  # the latest change applied

    def __len__(self) -> int:
        return len(self.groups)

    def _new_accumulators(self) -> list[Accumulator]:
        out: list[Accumulator] = []
        for _, family, stddev in self._accumulated:
            if family == "sum":
                out.append(Sum("SUM", stddev))
            elif family == "extreme":
                out.append(Extreme(True))
            elif family == "count":
                out.append(Count())
            else:
                out.append(Distinct())
        return out

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
        return group_key(tuple(get_path(data, steps) for steps in self.spec.grouping))

    def contribution(self, data: Any) -> tuple[Any, ...]:
        """What record ``data`` contributes: one value per input."""
        return tuple([read(data) for read in self._readers])

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
        given = tuple([read(data) for read in self._readers])
        if was == now:  # the common case: a record that stays in its group
            self._update(now, key, given)
            return
        if was is not None:
            self._leave(was, key, MATCH)
        self._join(now, key, given)

    def load(self, records: Iterable[tuple[str, Any, int, float]]) -> None:
        """The first pass: every input record at once (none is in the table yet); each group's
        MIN and MAX values gathered unsorted and sorted once, at the end."""
        where, groups, readers, touched = self._where, self.groups, self._readers, self._touched
        group_of, new_accumulators = self.group_of, self._new_accumulators
        assert not groups, "load fills an empty table"
        # (input, slot, whether its values wait for the one sort)
        plan = [
            (index, slot, family == "extreme") for slot, (index, family, _) in enumerate(self._accumulated)
        ]
        seq, timestamp = self._last
        for key, data, seq, timestamp in records:
            gkey = group_of(data)
            given = tuple([read(data) for read in readers])
            group = groups.get(gkey)
            if group is None:
                group = groups[gkey] = Group(gkey, new_accumulators())
                touched[gkey] = [False, MATCH, seq, timestamp]
            elif seq >= (mark := touched[gkey])[2]:
                mark[2], mark[3] = seq, timestamp
            accumulators = group.accumulators
            for index, slot, gathered in plan:
                value = given[index]
                if value is not None:
                    if gathered:
                        accumulators[slot].gather(value)  # type: ignore[attr-defined]
                    else:
                        accumulators[slot].add(value)
            group.members[key] = given
            where[key] = gkey
        self._last = (seq, timestamp)
        for slot, (_, family, _) in enumerate(self._accumulated):
            if family == "extreme":
                for group in groups.values():
                    extreme = group.accumulators[slot]
                    assert isinstance(extreme, Extreme)
                    extreme.settle()

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
            group = self.groups[gkey] = Group(gkey, self._new_accumulators())
        accumulators = group.accumulators
        for index, slot in self._slots:
            value = given[index]
            if value is not None:
                accumulators[slot].add(value)
        group.members[key] = given
        self._where[key] = gkey

    def _update(self, gkey: str, key: str, given: tuple[Any, ...]) -> None:
        """A record that stays in its group: what changed of its contribution is replaced."""
        self._touch(gkey)
        group = self.groups[gkey]
        members = group.members
        before = members.pop(key)
        members[key] = given  # the latest record now
        accumulators = group.accumulators
        for index, slot in self._slots:
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
        given = group.members.pop(key)
        del self._where[key]
        if not group.members:
            del self.groups[gkey]
            touched[1] = gone
            return
        accumulators = group.accumulators
        for index, slot in self._slots:
            value = given[index]
            if value is not None:
                accumulators[slot].remove(value)

    def record(self, group: Group) -> dict[str, Any]:
        """The group's record: its projected fields, in projection order."""
        out: dict[str, Any] = {}
        members = group.members
        latest = next(reversed(members.values()))
        accumulators = group.accumulators
        for name, output, kind, slot, argument in self._outputs:
            if kind == "of":
                value = accumulators[slot].of(argument)  # type: ignore[attr-defined]
            elif kind == "plain":
                # A plain field, grouping fields too, is the latest record's (1 and 1.0 are one group).
                value = latest[slot]
                if value is MISSING:
                    continue
            elif kind == "all":
                value = len(members)
            else:
                value = accumulators[slot].result()
            if name is not None:
                out[name] = value
            else:
                set_path(out, output, value)
        return out

    def drain(self) -> list[GroupChange]:
        """One change per group touched since the last drain (a group that came and went in
        between: none), each versioned by the last change that touched it (a transaction's
        changes share its LSN), in the order of those versions, as a topic's history keeps them
        (a group first touched earlier goes after one last touched earlier)."""
        touched, self._touched = self._touched, {}
        changes: list[GroupChange] = []
        groups = self.groups
        for gkey, (existed, gone, seq, timestamp) in sorted(touched.items(), key=_by_seq):
            group = groups.get(gkey)
            if group is None:
                if existed:
                    changes.append(GroupChange(gkey, False, None, gone, seq, timestamp))
                continue
            changes.append(GroupChange(gkey, not existed, self.record(group), gone, seq, timestamp))
        return changes


def _by_seq(item: tuple[str, list[Any]]) -> int:
    return item[1][2]  # type: ignore[no-any-return]
