"""An aggregation's first pass in slices (handlers/preparing.py): its group table and its group
records made a slice at a time while every other socket runs between the slices.

The first subscription of an aggregation read every record of its topic, grouped, accumulated,
sorted and wrote every group in one step that every other socket waited for (four projections
grouped by ``/order`` over 200,000 records: 2 to 5 s each). A ``GroupBuild`` does the same work in
stages, each a slice at a time: it reads the records as they were at its first slice (a list of
their versions: versions are never changed, only replaced), settles each group (its MIN and MAX
values sorted, its members put in the order of their last change), orders the groups by the change
that last touched them, and writes them into a SOW of group records nobody reads yet.

Meanwhile it is fed every change of the topic as an aggregation is (a ``Derived`` of the topic),
and keeps the last change of each record. At its end, in the step in which its command runs,
``install`` gives the table those changes and writes the groups they touched: the aggregation
starts from what it would hold had it been made when the pass began and fed every change since,
each group as the changes left it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import count, islice
from typing import TYPE_CHECKING, Any

from ..errors import CommandError
from ..fanout.runs import CHUNK, Run, RunMerge
from ..limits import RECORD_UNITS, SLICE_UNITS
from ..records.version import RecordVersion
from ..sow.store import Sow
from .groups import Group, TableLoad
from .projection import Projection
from .view import BuiltGroups, GroupIndex, Share, store_quietly

if TYPE_CHECKING:
    from ..fanout.topic import Topic
    from .parse import Spec

# A record's last change during the pass: its version before and after (None: it went), and how
# it went.
Change = tuple[RecordVersion | None, RecordVersion | None, str]
_BEGAN = count()  # in which order the builds began reading (session/held.py: the earlier go first)


class GroupBuild:
    """The pass in slices that makes aggregation ``share``'s groups over ``index`` (a table of its
    own, not yet fed): ``advance`` until it answers True, ``install`` in the step its command runs
    in (``built`` then holds what the aggregation starts from), then ``close``. ``units``: the
    estimated cost of one record (session/quota.py's units), which sizes the slices."""

    __slots__ = (
        "_admit",
        "_batch",
        "_changes",
        "_groups",
        "_loading",
        "_next",
        "_offset",
        "_ordered",
        "_ordering",
        "_stage",
        "_to_order",
        "_versions",
        "_write_batch",
        "began",
        "built",
        "index",
        "projection",
        "refusal",
        "share",
        "source",
        "sow",
    )

    def __init__(
        self,
        source: Topic,
        share: Share,
        index: GroupIndex,
        spec: Spec,
        units: int,
        admit: Callable[[int, GroupBuild], None],
    ) -> None:
        """``admit``: asked with how many groups there are after each slice read and once they are
        settled, before any is written: when it refuses, the pass ends, nothing is written, and
        the command is refused (``refusal``)."""
        self.source = source
        self._admit = admit
        self.refusal: CommandError | None = None
        self.share = share
        self.index = index
        self.projection = Projection(index.table, spec)  # (the table is empty: nothing to read)
        self.sow = Sow()
        self.built: BuiltGroups | None = None
        self.began = -1  # (numbered when it begins reading)
        self._batch = max(1, SLICE_UNITS // max(1, units))
        self._write_batch = max(1, SLICE_UNITS // (RECORD_UNITS + spec.cost))  # (a group: its fields)
        self._stage = self._start
        self._versions: list[RecordVersion] = []
        self._next = 0
        self._offset = 0
        self._loading = TableLoad(index.table)
        self._groups: list[list[Group]] = []  # in the table's order, in chunks of CHUNK
        self._to_order: Iterator[Group] = iter(())
        self._ordering: RunMerge = RunMerge(list.sort)
        self._ordered: Run = []
        self._changes: dict[str, Change] = {}

    # What the source tells the aggregations it feeds (fanout/ports.py, Derived).

    def source_changed(
        self, key: str, old: RecordVersion | None, new: RecordVersion | None, gone: str
    ) -> None:
        changes = self._changes
        changes.pop(key, None)  # (last changed last)
        changes[key] = (old, new, gone)

    @property
    def groups_weight(self) -> int:
        """The groups it holds so far, as the server counts them (session/held.py)."""
        return len(self.index.table.groups) * self.projection.spec.group_weight

    def flush(self) -> None:
        """Nothing to write: the changes wait for ``install``."""

    def change_cost(self) -> int:
        return 0  # (kept, not read: the gates read them at the end)

    def advance(self) -> bool:
        """Do one slice; True when only the end is left."""
        return self._stage()

    def _start(self) -> bool:
        """Take the records as they are (at the first slice: a build waiting for its turn holds no
        copy) and be fed every change from now on."""
        self._versions = list(self.source.records.values())
        self.source.derived[self] = self
        self.began = next(_BEGAN)
        self._stage = self._read
        return False

    def _read(self) -> bool:
        versions, start = self._versions, self._next
        end = min(len(versions), start + self._batch)
        self._loading.feed(self.index.inputs(versions[start:end]))
        self._next = end
        # Weighed as it goes: the groups are only more at the end, so a refusal now is the one
        # the end would make, and the pass holds no more groups than it may.
        if not self._admitted():
            return True
        if end >= len(versions):
            self._versions = []
            self._stage = self._settle
        return False

    def _admitted(self) -> bool:
        """Whether the groups so far are admitted; if not, the pass ends here (``refusal``: what
        its command will say, unless what it is weighed against changes)."""
        # At least this many groups are left at the end: each record changed meanwhile (its
        # change is applied only then) takes at most one group away.
        surely = len(self.index.table.groups) - len(self._changes)
        try:
            self._admit(surely, self)
        except CommandError as refusal:
            self.refusal = refusal
            self._versions = []
            self._stage = self._done
            return False
        return True

    def _settle(self) -> bool:
        if self._loading.settle_some(SLICE_UNITS):
            if not self._admitted():
                return True
            # (The table changes no more until ``install``: its changes wait for it.)
            self._to_order = iter(self.index.table.groups.values())
            self._stage = self._order
        return False

    def _order(self) -> bool:
        """The groups by the change that last touched them (as ``Projection.everything`` orders
        them): taken a chunk at a time (``_groups``: never one list of them all, which every young
        collection would walk while it is young), each sorted, then the chunks merged a slice at a
        time."""
        chunk = list(islice(self._to_order, CHUNK))
        if chunk:
            first = len(self._groups) * CHUNK
            run = [(group.seq, first + at) for at, group in enumerate(chunk)]
            run.sort()
            self._groups.append(chunk)
            self._ordering.add(run)
            return False
        if self._ordering.advance():
            self._ordered = self._ordering.result()
            self._next = 0
            self._stage = self._write
        return False

    def _write(self) -> bool:
        """Write a slice of the groups, in order, told to nobody (``_next``: the chunk of
        ``_ordered``, ``_offset``: the place in it)."""
        ordered = self._ordered
        if self._next >= len(ordered):
            self._ordered, self._groups = [], []
            self._stage = self._done
            return True
        chunk: list[tuple[int, int]] = ordered[self._next]
        start = self._offset
        end = min(len(chunk), start + self._write_batch)
        groups, record, put = self._groups, self.projection.record, self.sow.put
        for _, place in chunk[start:end]:
            at, offset = divmod(place, CHUNK)
            group = groups[at][offset]
            _, new = put(RecordVersion(group.key, record(group), group.seq, group.timestamp))
            if new is not None:
                new.compact()
        if end < len(chunk):
            self._offset = end
        else:
            self._next, self._offset = self._next + 1, 0
        return False

    def _done(self) -> bool:
        return True

    def install(self) -> None:
        """Finish the pass (the stages left, in this step) and take the changes of the source made
        during it: ``built`` holds the table and the groups, current."""
        while not self.advance():
            pass
        self._unfeed()
        if self.refusal is not None:
            return
        index, changes = self.index, self._changes
        self._changes = {}
        for key, (old, new, gone) in changes.items():
            index.take(key, old, new, gone)
        store_quietly(self.sow, self.projection.changes(index.table.drain()))
        index.loaded = True
        self.built = BuiltGroups(index, self.projection, self.sow)

    def close(self) -> None:
        """No longer fed (a build whose command will not use it, or one installed)."""
        self._unfeed()
        self._versions, self._groups, self._ordered = [], [], []
        self._to_order = iter(())

    def _unfeed(self) -> None:
        derived: dict[Any, Any] = self.source.derived
        if derived.get(self) is self:
            del derived[self]
