"""An aggregation as a derived topic (docs/protocol.md, Aggregated views).

An ``Aggregation`` is fed every change of its source topic's records as it is applied
(broker/applying.py), keeps the group table of the records that pass its filters and its user's
entitlement, and writes each group's change into a ``Topic`` of its own: a SOW of group records
under the source topic's name, keyed by group. Aggregated subscriptions subscribe to that topic,
so everything the fan-out does for records it does for groups, unchanged: windows and their
positions, deltas, OOFs, subscription and socket-queue conflation, hidden views, transactions.

Identical aggregations (topic, filter, grouping, projection and the user's entitlement, with the
user and client name a filter may name) share one: the source topic keeps them by ``share``,
and the last subscriber's leaving releases it. A change updates the group table at once, and the
groups it touched are written when the unit of work ends (an inbound frame, a transaction, or
before a command that reads views: fanout/run.py), so the changes of one frame or one
transaction change each group once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..fanout.orders import WindowOrders
from ..fanout.topic import Topic
from ..fanout.tx_frames import TxFrames
from ..filters import Filter
from ..filters.entitlement import Entitlement, gate_share
from ..filters.functions import EvalContext
from ..records.keys import KeySpec
from ..records.paths import MISSING, PathSteps
from ..records.version import RecordVersion
from ..sow.history import History
from .groups import MATCH, GroupTable
from .parse import Spec

Share = tuple[Any, ...]


class GroupKeys(KeySpec):
    """The key fields of a group record, for ``delta=merge`` messages: its projected grouping
    fields (a group whose grouping value is missing has none)."""

    def key_values(self, record: Any) -> list[tuple[PathSteps, Any]]:
        return [(steps, value) for steps, value in super().key_values(record) if value is not MISSING]


def share_of(spec: Spec, filters: tuple[Filter, ...], entitlement: Entitlement, ctx: EvalContext) -> Share:
    return (spec.text, *gate_share(filters, entitlement, ctx))


class GroupTopic(Topic):
    """The topic of groups of an aggregation: a topic whose records are groups, fed by its
    aggregation (``origin``) and subscribed to by aggregated subscriptions."""

    def __init__(self, source: Topic, origin: Aggregation, key_spec: KeySpec) -> None:
        # The source's queue policy, but not its structural merge: that function merges records
        # of the source, not groups (a group is conflated to its latest state).
        super().__init__(source.name, source.config, source._run)
        self.key_spec = key_spec
        self.origin = origin
        self.orders = WindowOrders()  # the orders the source's configuration keeps sort records


class Aggregation:
    def __init__(
        self,
        source: Topic,
        share: Share,
        spec: Spec,
        filters: tuple[Filter, ...],
        entitlement: Entitlement,
        ctx: EvalContext,
        frames: TxFrames,
        live: bool = True,
        history: History | None = None,
    ) -> None:
        """``live``: fed from now on (shared by subscriptions); otherwise a one-shot ``sow``'s
        groups, computed once and dropped. ``history``: the topic of groups keeps its changes
        from now on, to resume views from (docs/protocol.md, Resuming a view)."""
        self.source = source
        self.share = share
        self.spec = spec
        self.filters = filters
        self.entitlement = entitlement
        self.ctx = ctx
        self.frames = frames
        self.table = GroupTable(spec, ctx)
        self._owed = False  # whether the fan-out run knows it has changes to write (flush)
        # What a record passes to be an input: the user's entitlement, then the filters.
        gate = entitlement.filter
        gates = [(gate, entitlement.ctx)] if gate is not None else []
        self._gates = tuple(gates + [(f, ctx) for f in filters])
        keys = tuple(f.output for f in spec.fields if f.group_index is not None)
        self.topic = topic = GroupTopic(source, self, GroupKeys(keys))
        # The groups of the records there are now, told to nobody: nobody subscribes yet.
        self.table.load(self._inputs())
        self._write(told=False)
        topic.sow.history = history
        if live:
            source.derived[share] = self

    def _inputs(self) -> Iterator[tuple[str, Any, int, float]]:
        """The source's records that are inputs now, each decoded once (a stored version keeps
        only its encoding, and ``data`` decodes it afresh on each use)."""
        admits = self.admits if self._gates else None
        for key, version in self.source.records.items():
            data = version.data
            if admits is None or admits(data):
                yield key, data, version.seq, version.timestamp

    def admits(self, data: Any) -> bool:
        """Whether a record is an input: it passes the filters and the user's entitlement."""
        gates = self._gates
        return not gates or all(gate.matches(data, ctx) for gate, ctx in gates)

    def source_changed(
        self, key: str, old: RecordVersion | None, new: RecordVersion | None, gone: str
    ) -> None:
        version = new if new is not None else old
        if version is None:
            return
        data, reason = None, gone
        if new is not None:
            data, reason = new.data, MATCH
            if not self.admits(data):
                data = None
        self.table.apply(key, data, version.seq, version.timestamp, reason)
        # Written when the unit of work (or the transaction) ends: each group once. Said once
        # per unit of work, not once per change.
        if not self._owed:
            self._owed = True
            self.frames.derived(self)

    def flush(self) -> None:
        self._owed = False
        self._write(told=True)

    def _write(self, told: bool) -> None:
        """Store each group change in the topic of groups, and tell its subscribers."""
        topic = self.topic
        sow = topic.sow
        for change in self.table.drain():
            key = change.key
            if change.after is None:
                old, _ = sow.remove(key, change.seq, change.timestamp, change.gone)
                if told and old is not None:
                    # The OOF's body is the group's last state, its bookmark the change's.
                    last = RecordVersion(key, old.data, change.seq, change.timestamp)
                    topic.fan_out(key, last, None, gone=change.gone)
                continue
            old, new = sow.put(RecordVersion(key, change.after, change.seq, change.timestamp))
            if told:
                topic.fan_out(key, old, new)
            elif new is not None:
                new.compact()

    def release(self) -> None:
        """Its last subscriber left: no longer fed."""
        if self.source.derived.get(self.share) is self:
            del self.source.derived[self.share]


def aggregation_for(
    source: Topic,
    spec: Spec,
    filters: tuple[Filter, ...],
    entitlement: Entitlement,
    ctx: EvalContext,
    frames: TxFrames,
    history: History | None = None,
) -> Aggregation:
    """The aggregation these subscribers share: the one that exists, or a new one (one pass over
    the source's records) that keeps ``history``."""
    share = share_of(spec, filters, entitlement, ctx)
    found = source.derived.get(share)
    if isinstance(found, Aggregation):
        return found
    return Aggregation(source, share, spec, filters, entitlement, ctx, frames, history=history)
