"""Where a change may fold in a keyed socket queue (outbox.py, conflation.py): each
subscription's queued messages about each record, oldest first, and each record's newest entry.

One owner for both, because they must agree: a snapshot or a transaction queued for a record
cuts both at once (``passed``), so what was queued before it stays where it is and takes nothing
more; a later change of the record starts a new entry after it.

A cut stops folding, never what a later message starts from: that is what the client will hold,
which a merge (the older kept, or a merged record) decides at once (``Net.sends`` corrects the
subscription's ``held``, from which the fan-out computes the next message). What is not cut is
``replaced``, those corrections, for a message made before the merge that decided them: a relief
decides merges over messages queued already, and the message that did not fit is pushed after
it. One socket's index and its merged blocks' share it; a relief starts it again (``anew``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .conflation import Net, RecordEntry, Replaced
    from .reader import Reader

Record = tuple[str, str]  # (topic, SowKey)


class QueuedRecords:
    __slots__ = ("latest", "nets", "replaced")

    def __init__(self, replaced: Replaced | None = None) -> None:
        self.nets: dict[tuple[Record, Reader], list[Net]] = {}
        self.latest: dict[Record, RecordEntry] = {}  # every later change of the record goes there
        self.replaced: Replaced = {} if replaced is None else replaced  # shared: never cut

    def clear(self) -> None:
        self.nets.clear()
        self.latest.clear()
        self.replaced.clear()

    def anew(self) -> QueuedRecords:
        """An empty index for the queue a relief rebuilds (which decides its merges again), with
        the same ``replaced``: the socket's merged blocks share it."""
        self.replaced.clear()
        return QueuedRecords(self.replaced)

    def passed(self, records: Iterable[Record], whole: Reader | None = None) -> None:
        """A snapshot or a transaction sending ``records`` is queued: later changes of them must
        go after it, in new entries, and never fold into a message queued ahead of it. (Folded
        into one, they would send the block's older state after the newer one; or move that
        message, an insert, behind the block's deltas about the record.)

        ``whole``: the subscription the snapshot is the whole view of (a ``replace``'s, a
        viewport's move). Its client rebuilds the view from the snapshot alone and drops every
        record the snapshot does not name, so none of the subscription's queued messages, about
        any record, may take a later change either: one folded into an OOF queued before the
        snapshot would bring its record back before the snapshot, which then drops it."""
        nets, latest = self.nets, self.latest
        if nets or latest:
            passed = set(records)
            for record in passed:
                latest.pop(record, None)
            for key in [key for key in nets if key[0] in passed or key[1] is whole]:
                del nets[key]  # the messages stay queued where they are; nothing folds into them

    def keep(self, entry: RecordEntry) -> None:
        """``entry`` is queued again (a relief rebuilds the queue): index it as the newest."""
        for net in entry.nets:
            self.nets.setdefault((entry.record, net.sub), []).append(net)
        self.latest[entry.record] = entry

    def taken(self, entry: RecordEntry) -> None:
        """The writer took ``entry``: its messages are no longer queued."""
        nets = self.nets
        for net in entry.nets:
            queued = nets.get((entry.record, net.sub))
            # The oldest, as the queue is taken in order (unless a snapshot or a transaction
            # passed it: then it is no longer indexed).
            if queued and queued[0] is net:
                del queued[0]
                if not queued:
                    del nets[(entry.record, net.sub)]
        if self.latest.get(entry.record) is entry:
            del self.latest[entry.record]
