"""An aggregation as a derived topic (docs/protocol.md, Aggregated views).

An ``Aggregation`` is fed every change of its source topic's records as it is applied
(broker/applying.py), keeps the group table of the records that pass its filters and its user's
entitlement, and writes each group's change into a ``Topic`` of its own: a SOW of group records
under the source topic's name, keyed by group. Aggregated subscriptions subscribe to that topic,
so everything the fan-out does for records it does for groups, unchanged: windows and their
positions, deltas, OOFs, subscription and socket-queue conflation, hidden views, transactions.

Identical aggregations (topic, filter, grouping, projection and the user's entitlement, with the
user and client name a filter or the projection may name) share one, and the last subscriber's
leaving releases it. Aggregations that differ only in their projections share more: one
``GroupIndex`` per grouping of the same input records (topic, filter, entitlement) holds the
group table they all write from (groups.py), fed each change once; each aggregation writes its
own fields (projection.py). A change updates the table at once, and the groups it touched are
written when the unit of work ends (an inbound frame, a transaction, or before a command that
reads views: fanout/run.py), so the changes of one frame or one transaction change each group
once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..fanout.orders import WindowOrders
from ..fanout.topic import Topic
from ..fanout.tx_frames import TxFrames
from ..filters import Filter
from ..filters.entitlement import Entitlement, gate_share
from ..filters.functions import EvalContext
from ..limits import MAX_SHARED_GROUP_INPUTS
from ..records.keys import KeySpec
from ..records.paths import MISSING, PathSteps
from ..records.version import RecordVersion
from ..sow.history import History
from ..sow.store import Sow
from .groups import MATCH, GroupTable
from .parse import Spec
from .projection import GroupChange, Projection

Share = tuple[Any, ...]
Admit = Callable[[int], None]  # a new aggregation's groups weighed: it refuses by raising
log = logging.getLogger("server.aggregate")


class GroupKeys(KeySpec):
    """The key fields of a group record, for ``delta=merge`` messages: its projected grouping
    fields (a group whose grouping value is missing has none)."""

    def key_values(self, record: Any) -> list[tuple[PathSteps, Any]]:
        return [(steps, value) for steps, value in super().key_values(record) if value is not MISSING]


def _caller(spec: Spec, ctx: EvalContext) -> tuple[str | None, str | None] | None:
    """The caller, when a projected expression's value depends on it (USER(), CLIENT_NAME())."""
    reads = any(f.argument is not None and f.argument.reads_caller for f in spec.fields)
    return (ctx.user, ctx.client_name) if reads else None


def share_of(spec: Spec, filters: tuple[Filter, ...], entitlement: Entitlement, ctx: EvalContext) -> Share:
    """What identical aggregations share one by."""
    return (spec.text, *gate_share(filters, entitlement, ctx), _caller(spec, ctx))


def index_share(spec: Spec, filters: tuple[Filter, ...], entitlement: Entitlement, ctx: EvalContext) -> Share:
    """What aggregations share one group table by: the input records and their grouping."""
    return ("groups", spec.grouping, *gate_share(filters, entitlement, ctx), _caller(spec, ctx))


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

    @property
    def change_cost(self) -> int:
        """An aggregated view's per-change work: its aggregation's filters and projection (200
        views of 64 fields were free to one socket's budget, and held everyone 14 to 27 s)."""
        origin = self.origin
        return origin.spec.cost + sum(f.cost for f in origin.filters)


class GroupIndex:
    """The group table of one grouping of a source topic's records through one set of gates,
    shared by the aggregations over it (``views``, by their share), and fed every change of the
    source once (a ``Derived`` of the source, fanout/ports.py)."""

    def __init__(
        self,
        source: Topic,
        share: Share,
        grouping: tuple[PathSteps, ...],
        filters: tuple[Filter, ...],
        entitlement: Entitlement,
        ctx: EvalContext,
        frames: TxFrames,
    ) -> None:
        self.source = source
        self.share = share
        self.frames = frames
        self.table = GroupTable(grouping, ctx)
        self.views: dict[Share, Aggregation] = {}
        self.loaded = False
        self._owed = False  # whether the fan-out run knows it has changes to write (flush)
        # What a record passes to be an input: the user's entitlement, then the filters.
        gate = entitlement.filter
        gates = [(gate, entitlement.ctx)] if gate is not None else []
        self._gates = tuple(gates + [(f, ctx) for f in filters])

    def inputs(
        self, versions: Iterable[RecordVersion] | None = None
    ) -> Iterator[tuple[str, Any, int, float]]:
        """Which of ``versions`` (None: the source's records now) are inputs, each decoded once (a
        stored version keeps only its encoding, and ``data`` decodes it afresh on each use)."""
        admits = self.admits if self._gates else None
        for version in self.source.records.values() if versions is None else versions:
            data = version.data
            if admits is None or admits(data):
                yield version.key, data, version.seq, version.timestamp

    def adopt(self, spec: Spec) -> Projection:
        """``spec``'s projection over the table: the first fills the table (one pass over the
        source); a later one that needs inputs the table lacks reads them (one pass)."""
        if self._owed:
            self.flush()  # the views over it are told what changed before one more joins
        if not self.loaded:
            projection = Projection(self.table, spec)
            self.table.load(self.inputs())
            self.loaded = True
            return projection
        return Projection(self.table, spec, self._data_of)

    def _data_of(self, key: str) -> Any:
        """The data of source record ``key`` now (every record the table holds is there: its
        delete is fed to the table as it is applied)."""
        version = self.source.records.get(key)
        return version.data if version is not None else None

    def admits(self, data: Any) -> bool:
        """Whether a record is an input: it passes the filters and the user's entitlement."""
        gates = self._gates
        return not gates or all(gate.matches(data, ctx) for gate, ctx in gates)

    def source_changed(
        self, key: str, old: RecordVersion | None, new: RecordVersion | None, gone: str
    ) -> None:
        self.take(key, old, new, gone)
        # Written when the unit of work (or the transaction) ends: each group once. Said once
        # per unit of work, not once per change.
        if not self._owed:
            self._owed = True
            self.frames.derived(self)

    def take(self, key: str, old: RecordVersion | None, new: RecordVersion | None, gone: str) -> None:
        """Record ``key`` of the source changed from ``old`` to ``new`` (None: it went, ``gone``
        says how): the table takes it, to be written when its views are next flushed."""
        version = new if new is not None else old
        if version is None:
            return
        data, reason = None, gone
        if new is not None:
            data, reason = new.data, MATCH
            if not self.admits(data):
                data = None
        self.table.apply(key, data, version.seq, version.timestamp, reason)

    def change_cost(self) -> int:
        """Each change of the source: its gates, and every projection over the table."""
        return sum(gate.cost for gate, _ in self._gates) + sum(view.spec.cost for view in self.views.values())

    def flush(self) -> None:
        self._owed = False
        touched = self.table.drain()
        if not touched:
            return
        for view in list(self.views.values()):
            try:
                view.write(view.projection.changes(touched), told=True)
            except Exception:  # a defect: the views after it still get the changes drained for them
                log.exception(
                    "aggregation %.200s on %r failed to write its groups", view.spec.text, view.topic.name
                )

    def release(self, view: Aggregation | None) -> None:
        """``view`` no longer uses the table (None: one that failed to join): the last one's
        leaving drops it."""
        if view is not None and self.views.get(view.share) is view:
            del self.views[view.share]
        if not self.views:
            if self.source.derived.get(self.share) is self:
                del self.source.derived[self.share]
        else:  # the inputs only it read (or one that failed to join added) are read no more
            self.table.compact([each.projection.outputs for each in self.views.values()])


def usable_index(
    source: Topic,
    spec: Spec,
    filters: tuple[Filter, ...],
    entitlement: Entitlement,
    ctx: EvalContext,
    live: bool,
) -> GroupIndex | None:
    """The existing group table an aggregation of ``spec`` would write from, if any: the shared
    one of its grouping and gates while it holds at most MAX_SHARED_GROUP_INPUTS inputs with
    ``spec``'s (each costs every change of the source a read), else one of ``spec``'s own; a
    one-shot ``sow`` uses the shared one only when it has every input it needs (it reads, and
    adds nothing)."""
    share = index_share(spec, filters, entitlement, ctx)
    found = source.derived.get(share)
    if isinstance(found, GroupIndex):
        missing = found.table.missing(spec)
        if (missing == 0 or live) and found.table.inputs + missing <= MAX_SHARED_GROUP_INPUTS:
            return found
    found = source.derived.get((*share, spec.text)) if live else None
    return found if isinstance(found, GroupIndex) else None


def _index_for(
    source: Topic,
    spec: Spec,
    filters: tuple[Filter, ...],
    entitlement: Entitlement,
    ctx: EvalContext,
    frames: TxFrames,
    live: bool,
) -> GroupIndex:
    """The group table an aggregation of ``spec`` writes from (``usable_index``), made when there
    is none: shared while it is the first of its grouping and gates."""
    found = usable_index(source, spec, filters, entitlement, ctx, live)
    if found is not None:
        return found
    share = index_share(spec, filters, entitlement, ctx)
    index = GroupIndex(source, share, spec.grouping, filters, entitlement, ctx, frames)
    if live:
        _register(index, spec)
    return index


def _register(index: GroupIndex, spec: Spec) -> None:
    """Feed ``index`` the changes of its source from now on: shared while it is the first of its
    grouping and gates (``usable_index`` found no table to use)."""
    derived = index.source.derived
    if index.share in derived:
        index.share = (*index.share, spec.text)
    derived[index.share] = index


@dataclass(slots=True)
class BuiltGroups:
    """An aggregation's group table and its topic's group records, made by a pass in slices
    before the aggregation (building.py), and current: the aggregation starts from them."""

    index: GroupIndex
    projection: Projection
    sow: Sow


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
        built: BuiltGroups | None = None,
        admit: Admit | None = None,
    ) -> None:
        """``live``: fed from now on (shared by subscriptions); otherwise a one-shot ``sow``'s
        groups, computed once and dropped. ``history``: the topic of groups keeps its changes
        from now on, to resume views from (docs/protocol.md, Resuming a view). ``built``: its
        groups, made already (else made now, in one pass over the source). ``admit``: asked with
        how many groups it has before they are written (it refuses by raising)."""
        self.source = source
        self.share = share
        self.spec = spec
        self.filters = filters
        self.entitlement = entitlement
        self.ctx = ctx
        keys = tuple(f.output for f in spec.fields if f.group_index is not None)
        self.topic = topic = GroupTopic(source, self, GroupKeys(keys))
        if built is not None:
            if admit is not None:
                admit(len(built.sow.records))
            self.index = index = built.index
            self.projection = built.projection
            topic.sow = built.sow
            if live:
                _register(index, spec)
        else:
            self.index = index = _index_for(source, spec, filters, entitlement, ctx, frames, live)
            try:
                self.projection = index.adopt(spec)
                if admit is not None:
                    admit(len(index.table.groups))
                # The groups of the records there are now, told to nobody: nobody subscribes yet.
                self.write(self.projection.everything(), told=False)
            except BaseException:
                index.release(None)  # made for this one alone: not left fed
                raise
        topic.sow.history = history
        if live:
            index.views[share] = self

    def write(self, changes: list[GroupChange], told: bool) -> None:
        """Store each group change in the topic of groups, and tell its subscribers."""
        topic = self.topic
        if not told:
            store_quietly(topic.sow, changes)
            return
        sow = topic.sow
        for change in changes:
            key = change.key
            if change.after is None:
                old, _ = sow.remove(key, change.seq, change.timestamp, change.gone)
                if old is not None:
                    # The OOF's body is the group's last state, its bookmark the change's.
                    last = RecordVersion(key, old.data, change.seq, change.timestamp)
                    topic.fan_out(key, last, None, gone=change.gone)
                continue
            old, new = sow.put(RecordVersion(key, change.after, change.seq, change.timestamp))
            topic.fan_out(key, old, new)

    def release(self) -> None:
        """Its last subscriber left: no longer fed."""
        self.index.release(self)


def store_quietly(sow: Sow, changes: list[GroupChange]) -> None:
    """Store each group change in ``sow``, told to nobody (nobody subscribes yet), each group
    record kept as its encoding only."""
    for change in changes:
        if change.after is None:
            sow.remove(change.key, change.seq, change.timestamp, change.gone)
            continue
        _, new = sow.put(RecordVersion(change.key, change.after, change.seq, change.timestamp))
        if new is not None:
            new.compact()


def aggregations_of(source: Topic) -> list[Aggregation]:
    """The live aggregations ``source`` feeds."""
    indexes = [index for index in source.derived.values() if isinstance(index, GroupIndex)]
    return [view for index in indexes for view in index.views.values()]


def shared_aggregation(source: Topic, share: Share) -> Aggregation | None:
    """The live aggregation of ``share`` over ``source``, if there is one."""
    for index in source.derived.values():
        if isinstance(index, GroupIndex):
            found = index.views.get(share)
            if found is not None:
                return found
    return None


def aggregation_for(
    source: Topic,
    spec: Spec,
    filters: tuple[Filter, ...],
    entitlement: Entitlement,
    ctx: EvalContext,
    frames: TxFrames,
    history: History | None = None,
) -> Aggregation:
    """The aggregation these subscribers share: the one that exists, or a new one (reading the
    source's records unless its group table exists and has every input) that keeps ``history``."""
    share = share_of(spec, filters, entitlement, ctx)
    found = shared_aggregation(source, share)
    if found is not None:
        return found
    return Aggregation(source, share, spec, filters, entitlement, ctx, frames, history=history)
