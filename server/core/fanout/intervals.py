"""Subscription conflation (``conflation=250ms``, ``conflation_key=[...]``, docs/protocol.md, Conflation).

Per conflation key, the changes that arrive within one interval wait here and become one
delivery at the interval's end, computed against what the subscriber held before the interval:
- the final state, as data or a delta; a ``delta=merge`` delta carries every field that any
  change in the interval carried, with its final value (the AMPS rule);
- in-then-out within the interval: the OOF, carrying the state delivered before the interval;
- out-then-in: the final state, and no OOF.

The interval of a key starts with the first change after its last delivery. The key is the
SowKey, or the values at the ``conflation_key`` paths when the subscription names them.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from dataclasses import dataclass, field
from itertools import count
from typing import Any

from ..records.paths import PathSteps, get_path
from ..records.version import RecordVersion

_ARRIVALS = count()  # the order changes arrive in, across every subscription


@dataclass(slots=True)
class Held:
    key: str | None  # the SowKey of the latest change (None on a plain topic)
    latest: RecordVersion | None  # the latest version, None when the record was deleted
    deleted_from: RecordVersion | None  # the last version before a delete
    due: float
    carried: set[str] = field(default_factory=set)  # top-level fields any change carried
    gone: str = "deleted"  # why the record went away, when it did: deleted or expired
    # The transaction(s) it holds a change of: released with every other key they changed.
    group: TxGroup | None = None
    # When its first change arrived, in the engine's order: what several subscriptions release
    # together is merged by it (a transaction's block goes in the order of its commands).
    order: int = field(default_factory=lambda: next(_ARRIVALS))


@dataclass(slots=True, eq=False)
class TxGroup:
    """The keys of one subscription whose pending changes came from one transaction, or from
    transactions that share a key (merged): they are released together, never part of them."""

    tx: str
    keys: set[Hashable] = field(default_factory=set)


def conflation_key(paths: tuple[PathSteps, ...] | None, key: str | None, data: Any) -> Hashable:
    if paths is None:
        return key
    return tuple(repr(get_path(data, steps)) for steps in paths)


def changed_fields(before: Any, after: Any) -> set[str]:
    """Top-level fields of ``after`` that differ from ``before``'s (all of them, when there is none)."""
    if type(after) is not dict:
        return set()
    if type(before) is not dict:
        return set(after)
    return {name for name, value in after.items() if name not in before or before[name] != value}


class Waiting:
    """One subscription's changes waiting for the end of their interval, per conflation key, and
    the transactions they belong to."""

    __slots__ = ("_dues", "_groups", "pending")

    def __init__(self) -> None:
        self.pending: dict[Hashable, Held] = {}
        self._groups: dict[str, TxGroup] = {}  # transactions with changes pending, by ID
        # When each pending key falls due, soonest first: taking what is due reads only that.
        # (A scan of every pending key at each key's due time took a hidden tab's 20,000
        # changes 15 to 29 s in one step.) A key released early, with its transaction, leaves
        # its entry here; it is skipped when it comes up.
        self._dues: list[tuple[float, int, Hashable]] = []

    def add(
        self,
        ckey: Hashable,
        key: str | None,
        old: RecordVersion | None,
        new: RecordVersion | None,
        gone: str,
        due: float,
        tx: str | None,
    ) -> Held | None:
        """Fold a change into the key's waiting one; the new entry when there was none (its
        interval ends at ``due``: the caller schedules it)."""
        entry = self.pending.get(ckey)
        created = entry is None
        if entry is None:
            entry = self.pending[ckey] = Held(key, new, old if new is None else None, due)
            heapq.heappush(self._dues, (due, entry.order, ckey))
        else:
            entry.key, entry.latest = key, new
            entry.deleted_from = old if new is None else None
        entry.gone = gone
        if new is not None:
            entry.carried |= changed_fields(old.data if old is not None else None, new.data)
        if tx is not None:
            self._join(ckey, entry, tx)
        return entry if created else None

    def _join(self, ckey: Hashable, entry: Held, tx: str) -> None:
        """A transaction's change waits: its keys are released together (docs/protocol.md, Transactions)."""
        group = self._groups.get(tx)
        if group is None:
            group = self._groups[tx] = TxGroup(tx)
        earlier = entry.group
        if earlier is not None and earlier is not group:  # two transactions share a key: one group
            for key in earlier.keys:
                joined = self.pending.get(key)
                if joined is not None:
                    joined.group = group
                    group.keys.add(key)
            self._groups.pop(earlier.tx, None)
        entry.group = group
        group.keys.add(ckey)

    def due(self, now: float) -> tuple[list[Held], str | None]:
        """Take the entries whose interval has ended by ``now``, with every key of a transaction
        any of them belongs to, and that transaction's ID (None: none)."""
        dues, pending = self._dues, self.pending
        due: list[Hashable] = []
        while dues and dues[0][0] <= now:
            _, order, ckey = heapq.heappop(dues)
            entry = pending.get(ckey)
            if entry is not None and entry.order == order:  # not released early since
                due.append(ckey)
        due.sort(key=lambda ckey: pending[ckey].order)  # in the order their first changes came
        tx = None
        for ckey in list(due):
            group = self.pending[ckey].group
            if group is not None and self._groups.pop(group.tx, None) is not None:
                tx = group.tx
                due += [key for key in group.keys if key in self.pending and self.pending[key].due > now]
        return [self.pending.pop(ckey) for ckey in due], tx

    def clear(self) -> None:
        self.pending.clear()
        self._dues.clear()
        self._groups.clear()
