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
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..filters.functions import EvalContext
from ..records.paths import MISSING, get_path, set_path
from .functions import Accumulator, accumulator, prepare
from .parse import Spec

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
    # record key -> what it contributed (one item per projected field), in order of last change
    members: dict[str, tuple[Any, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GroupChange:
    key: str
    new: bool  # the group did not exist before the changes drained
    after: dict[str, Any] | None  # now (None: its last record left)
    gone: str  # why it went, when it went: match, deleted or expired
    seq: int
    timestamp: float


class GroupTable:
    def __init__(self, spec: Spec, ctx: EvalContext) -> None:
        self.spec = spec
        self.ctx = ctx
        self.groups: dict[str, Group] = {}
        self._where: dict[str, str] = {}  # input record key -> its group's key
        self._aggregates = spec.aggregates
        self._slots = {i: slot for slot, i in enumerate(self._aggregates)}  # field -> its accumulator
        # Touched since the last drain: group key -> [whether it existed, how its last record
        # left, the seq and time of the last change that touched it].
        self._touched: dict[str, list[Any]] = {}
        self._last = (0, 0.0)  # the latest change applied

    def __len__(self) -> int:
        return len(self.groups)

    def apply(self, key: str, data: Any | None, seq: int, timestamp: float, gone: str = MATCH) -> None:
        """Input record ``key`` is now ``data`` (None: no longer an input, for the reason
        ``gone``: ``deleted``, ``expired`` or ``match``) as of change ``seq``."""
        self._last = (seq, timestamp)
        was = self._where.get(key)
        if data is None:
            if was is not None:
                self._leave(was, key, gone)
            return
        now = group_key(tuple(get_path(data, steps) for steps in self.spec.grouping))
        if was is not None:
            self._leave(was, key, MATCH)
        self._join(now, key, self._contribution(data))

    def _contribution(self, data: Any) -> tuple[Any, ...]:
        ctx = self.ctx
        out: list[Any] = []
        for f in self.spec.fields:
            if f.function is None:
                # A bare path is copied as it is (a missing field stays missing); an expression
                # is evaluated.
                if f.path is not None:
                    out.append(get_path(data, f.path))
                else:
                    out.append(f.argument.evaluate(data, ctx) if f.argument is not None else None)
            elif f.argument is None:
                out.append(True)  # COUNT(*): every record
            else:
                out.append(prepare(f.function, f.argument.evaluate(data, ctx)))
        return tuple(out)

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
            functions = [self.spec.fields[i].function or "" for i in self._aggregates]
            group = self.groups[gkey] = Group(gkey, [accumulator(function) for function in functions])
        for slot, i in enumerate(self._aggregates):
            value = given[i]
            if value is not None:
                group.accumulators[slot].add(value)
        group.members[key] = given
        self._where[key] = gkey

    def _leave(self, gkey: str, key: str, gone: str) -> None:
        touched = self._touch(gkey)
        group = self.groups[gkey]
        given = group.members.pop(key)
        del self._where[key]
        for slot, i in enumerate(self._aggregates):
            value = given[i]
            if value is not None:
                group.accumulators[slot].remove(value)
        if not group.members:
            del self.groups[gkey]
            touched[1] = gone

    def record(self, group: Group) -> dict[str, Any]:
        """The group's record: its projected fields, in projection order."""
        out: dict[str, Any] = {}
        latest = next(reversed(group.members.values()))
        slots = self._slots
        for i, f in enumerate(self.spec.fields):
            # A plain field, grouping fields too, is the latest record's (1 and 1.0 are one group).
            value = group.accumulators[slots[i]].result() if f.function is not None else latest[i]
            if value is not MISSING:
                set_path(out, f.output, value)
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
