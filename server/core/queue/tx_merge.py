"""Transactions merged in a conflating socket queue (docs/protocol.md, Transactions and Conflation).

A transaction reaches a socket as one block (``TxBlock``), delivered whole. When the socket's
queue is relieved (a message does not fit, or background conflation), consecutive blocks, and
the messages about changes queued between and after them, become one ``TxMerge``: one block,
between one ``tx_begin`` and one ``tx_end`` (the latest transaction's ID), whose messages are
conflated per record and view by the rules of the socket queue (conflation.py, keyed.py):

    what joins the merged block             what it becomes in it
    a message of a ``conflate`` or          folded into the record's message in the block
    ``always`` topic                        (its place for ``replace``, the end for
                                            ``append``): the final state, a composite delta,
                                            or the last OOF
    a message of an ``off`` or              kept as it is, after what is already in the block
    ``unsubscribe`` topic, or of a
    topic without keys
    a message already conflated outside     its nets fold in like the messages they end
    (a queued ``RecordEntry``)

So the client goes from the state before the first transaction to the state after the last
change in one step: a state that existed, with the in-between states skipped as conflation may
skip them, and never part of a transaction. What was queued between two blocks joins them:
left outside, it would be written either before the first block (a change seen before a
transaction applied before it) or after the second (a transaction seen before a change applied
before it). Anything else in the queue (an ack, a snapshot, an ``unsubscribed``) ends the merged
block: a later one starts after it, so a subscription's first message never passes its ack.

While the queue stays keyed and the merged block is its last entry, every new message about a
change, and every new transaction, joins it at once (so a stalled socket holds one message per
record and view, as it does for plain publishes).

What it counts against the queue's bounds: never more than its parts counted when queued one by
one (a transaction counted at most half of each bound, outbox.py), nor more than its messages
about records (its ``tx_begin`` and ``tx_end`` are framing, as a frame's brackets are). So it
never counts more than the same changes would as plain publishes, conflated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from .conflation import Net, RecordEntry
from .delivery import CONFLATED_POLICIES, Delivery, RunBatch, TxBlock, kept_for
from .index import QueuedRecords
from .keyed import fold

if TYPE_CHECKING:
    from collections.abc import Container

    from .conflation import Replaced
    from .reader import Reader

Record = tuple[str, str]
Joining = TxBlock | Delivery | RunBatch | RecordEntry


class TxMerge:
    __slots__ = (
        "allowance",
        "allowance_size",
        "begin",
        "compact_at",
        "count",
        "end",
        "entries",
        "queued",
        "records",
        "size",
    )

    def __init__(self, replaced: Replaced | None = None) -> None:
        self.begin = self.end = b""  # the latest transaction's marks
        self.entries: list[Delivery | RecordEntry] = []
        # Where a change of a record in the block folds; what merges replaced is the socket's.
        self.queued = QueuedRecords(replaced)
        self.records: set[Record] = set()
        # Its messages about records and their bytes, as estimated for conflated entries
        # (conflation.py); and what its parts counted when they were queued.
        self.count = self.size = 0
        self.allowance = self.allowance_size = 0
        self.compact_at = 16  # entries: past this many, the emptied ones are let go

    @property
    def counted(self) -> int:
        return min(self.count, self.allowance)

    @property
    def counted_size(self) -> int:
        return min(self.size, self.allowance_size)

    def take(self, entry: Joining | TxMerge, room: Callable[[int], bool] | None = None) -> int | None:
        """``entry`` joins the block: the number of its messages conflated with queued ones. With
        ``room``, each message that needs a message more (a new one, not one folded into a queued
        one) first asks it, as a plain publish would, and None says one found none: nothing
        changed for a delivery, but a block or entry is left part-merged (only the last try
        before a 4001 close, which drops everything, asks for those)."""
        if isinstance(entry, (TxBlock, TxMerge)):
            self._mark(entry.begin, entry.end)
            weight, weight_size = entry.counted, entry.counted_size
        elif isinstance(entry, RecordEntry):
            weight, weight_size = entry.count, entry.size
        elif isinstance(entry, RunBatch):
            weight, weight_size = len(entry.bodies), entry.size
        else:
            weight, weight_size = 1, entry.size
        # What it counted outside is allowed first: a message that joins never needs more room
        # in the block than it had on its own.
        self.allowance += weight
        self.allowance_size += weight_size
        conflated = 0
        for message in _messages(entry):
            one = self._one(message, room)
            if one is None:
                if isinstance(entry, Delivery):  # nothing changed
                    self.allowance -= weight
                    self.allowance_size -= weight_size
                return None
            conflated += one
        return conflated

    def _mark(self, begin: bytes, end: bytes) -> None:
        """The block now ends with a later transaction: its marks carry that one's ID. (They
        are its framing, as a frame's brackets are, and not counted: a merged block never
        counts more than the same changes would as plain publishes.)"""
        self.begin, self.end = begin, end

    def _one(self, message: Delivery | Net, room: Callable[[int], bool] | None = None) -> int | None:
        """One message joins (a delivery, or a net queued elsewhere): folded when its topic
        conflates, else kept as it is, after everything in the block."""
        delivery = message if isinstance(message, Delivery) else message.last
        record = delivery.record
        if record is not None and delivery.policy.conflation in CONFLATED_POLICIES:
            moving = message if isinstance(message, Net) else None
            folded = fold(self.entries, self.queued, delivery, room, moving)
            if folded is None:
                return None
            self.count += folded.messages
            self.size += folded.size
            conflated = int(folded.conflated)
            if len(self.entries) > self.compact_at:
                # In mode append every change of a record empties its entry for a new one at
                # the end: a stalled socket would keep them all. Half live, amortised O(1).
                self.entries = [e for e in self.entries if not (isinstance(e, RecordEntry) and e.dead)]
                self.compact_at = 2 * len(self.entries) + 16
        elif room is not None and not room(delivery.size):
            return None
        else:
            self.entries.append(delivery)  # (a net is only ever of a conflated topic)
            self.count += 1
            self.size += delivery.size
            conflated = 0
        if record is not None:
            self.records.add(record)
        return conflated

    def without(self, gone: Container[Reader]) -> TxMerge | None:
        """The block without the messages of subscriptions being dropped for back pressure
        (``gone``: their topics' messages are never folded, so only kept ones are); None when
        nothing is left."""
        kept: list[Delivery | RecordEntry] = []
        for entry in self.entries:
            if isinstance(entry, RecordEntry):
                kept.append(entry)
                continue
            left = kept_for(entry, gone)
            if not isinstance(left, Delivery):  # None: it was for them alone
                self.count -= 1
                self.size -= entry.size
            else:
                self.size += left.size - entry.size
                kept.append(left)
        self.entries = kept
        return self if any(not (isinstance(e, RecordEntry) and e.dead) for e in kept) else None

    def render(self) -> list[bytes]:
        """Its messages as parts (head and body each), between its marks; none when nothing is
        left for anyone (every subscription dropped since)."""
        parts = [self.begin]
        for entry in self.entries:
            if isinstance(entry, RecordEntry):
                if not entry.dead:
                    parts.extend(entry.render())
                continue
            kept = kept_for(entry, ())
            if isinstance(kept, Delivery):
                parts += (kept.head, kept.body)
        if len(parts) == 1:
            return []
        parts.append(self.end)
        return parts


def _messages(entry: Joining | TxMerge) -> Iterator[Delivery | Net]:
    """What joins a merged block when ``entry`` does, one message at a time, in order."""
    if isinstance(entry, RecordEntry):
        yield from list(entry.nets)
    elif isinstance(entry, RunBatch):
        yield from entry.deliveries()
    elif isinstance(entry, TxMerge):
        for item in entry.entries:
            if isinstance(item, RecordEntry):
                yield from list(item.nets)
            else:
                yield item
    elif isinstance(entry, TxBlock):
        for held in entry.held:
            yield from held.deliveries() if isinstance(held, RunBatch) else (held,)
    else:
        yield entry


def held(entry: TxBlock | TxMerge) -> list[Delivery | RunBatch] | list[Delivery | RecordEntry]:
    """The messages of a transaction's block, or of merged ones, as queued in it."""
    return entry.held if isinstance(entry, TxBlock) else entry.entries


def records_of(entry: Joining | TxMerge) -> Iterable[Record]:
    """The records (topic, key) that ``entry`` sends messages about."""
    if isinstance(entry, (TxBlock, TxMerge)):
        return entry.records
    if isinstance(entry, RecordEntry):
        return (entry.record,)
    if isinstance(entry, Delivery):
        return () if entry.record is None else (entry.record,)
    name = entry.policy.name
    return [(name, key) for key in entry.keys if key is not None]
