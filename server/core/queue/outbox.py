"""The bounded outbound queue of one socket, and its conflation (docs/protocol.md, Conflation).

Entries, in order: plain messages (acks and the like, never conflated), ``RunBatch``es (a run of
whole records for a stateless subscription), ``Delivery``s (one message about one record), lazy
snapshot streams (encoded as the writer drains them) and transactions (a ``TxBlock`` each, or a
``TxMerge`` of several once relieved: tx_merge.py). The queue is bounded in bytes and in
messages, and everything in it counts: a snapshot counts its records as messages and an estimate
of their encoded size as bytes from the moment it is queued, each record's share coming off as it
is written. (What one snapshot counts is capped (snapshots.py): it holds only a pointer a record
until it is written, and a snapshot bigger than the whole queue must still be possible.) A push
that does not fit is refused; the session then calls ``relieve``, which conflates what is queued
by the topics' policies, and pushes again.

After a relief the outbox stays *keyed* until it drains: each new delivery for a conflated topic
folds straight into the queued ``RecordEntry`` of its record (conflation.py), so a stalled socket
costs O(1) per message instead of a pass over its queue, and holds at most one entry per record.
Deliveries of ``always`` topics are keyed all the time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from . import figures as queue_figures
from .conflation import RecordEntry
from .delivery import CONFLATED_POLICIES, Delivery, QueuePolicy, RunBatch, TxBlock
from .frames import array_frame
from .index import QueuedRecords
from .keyed import fold
from .snapshots import FRAME_BREAK, SnapshotStream, counted_against
from .tx_merge import TxMerge, records_of
from .unsubscribing import dropped_by_relief

if TYPE_CHECKING:
    from .reader import Reader

QueueItem = bytes | RunBatch | Delivery | RecordEntry | SnapshotStream | TxBlock | TxMerge
Joinable = TxBlock | TxMerge | Delivery | RunBatch | RecordEntry  # what a merged block takes in


class Outbox:
    def __init__(self, max_bytes: int, max_messages: int) -> None:
        self.max_bytes = max_bytes
        self.max_messages = max_messages
        self._entries: deque[QueueItem] = deque()
        self.queued_bytes = 0
        self.queued_messages = 0
        self.keyed = False
        self._queued = QueuedRecords()  # where a change of a keyed record may fold
        self.conflation = True  # a session may turn conflation off for itself
        # Since the socket opened: messages taken into frames, and messages merged into newer ones.
        self.sent = 0
        self.conflated = 0

    def __bool__(self) -> bool:
        return bool(self._entries)

    def _fits(self, size: int, count: int = 1) -> bool:
        return (
            self.queued_messages + count <= self.max_messages and self.queued_bytes + size <= self.max_bytes
        )

    def _add(self, entry: QueueItem, size: int, count: int) -> int:
        self._entries.append(entry)
        self.queued_bytes += size
        self.queued_messages += count
        return self.queued_messages

    # -- pushing --------------------------------------------------------------------------

    def push(self, message: bytes, force: bool = False) -> int:
        """Queue one plain message; the number now queued, or 0 (nothing queued) when it does not fit.

        ``force`` queues it whatever the bounds (a few bytes the server must say, like ``unsubscribed``).
        """
        size = len(message) + 1
        if not force and not self._fits(size):
            return 0
        return self._add(message, size, 1)

    def push_run(self, batch: RunBatch) -> int:
        """Queue a whole run in one entry; 0 when it must go one delivery at a time instead
        (it does not fit whole, or its messages are to be merged as they come)."""
        count, always = len(batch.bodies), batch.policy.conflation == "always" and self.conflation
        if self.keyed or always or not self._fits(batch.size, count):
            return 0
        return self._add(batch, batch.size, count)

    def push_delivery(self, delivery: Delivery) -> int:
        # It joins the merged transactions queued last (tx_merge.py; only ever in a keyed queue).
        if self.keyed and (merge := self._open_merge()) is not None:
            return self._into(merge, delivery, check_room=True)
        if delivery.record is not None and self._merging(delivery):
            return self._keyed(delivery, check_room=True)
        if not self._fits(delivery.size):
            return 0
        return self._add(delivery, delivery.size, 1)

    def push_tx(self, block: TxBlock, squeeze: bool = False) -> int:
        """Queue a transaction's messages as one entry; 0 when it does not fit. Like a snapshot
        it counts at most half of each bound: a transaction bigger than the whole queue, which
        cannot be split, must still be possible.

        Once the queue is keyed it merges with the transactions queued last (tx_merge.py) when
        nothing else was queued since. ``squeeze`` (the last try before a 4001 close, after a
        relief): it merges even when it would not fit as a block of its own, and fits when each
        of its messages would as a plain publish."""
        if self.max_messages <= 0:
            return 0  # closed
        self._count_block(block)
        fits = self._fits(block.counted_size, block.counted)
        if not (self.keyed and self.conflation):
            if not fits:
                return 0
            self._queued.passed(block.records)
            return self._add(block, block.counted_size, block.counted)
        if not (fits or squeeze):
            return 0
        merge = self._open_merge()
        if merge is None:
            merge = TxMerge(self._queued.replaced)
            self._entries.append(merge)
        # It fits whole, so it fits merged; squeezed, each of its messages that needs room asks,
        # as it would as a plain publish (0: one found none, and the socket is closed).
        return self._into(merge, block, check_room=squeeze)

    def _open_merge(self) -> TxMerge | None:
        """The merged transactions queued last, that what comes next may join."""
        entries = self._entries
        last = entries[-1] if entries else None
        return last if isinstance(last, TxMerge) else None

    def _into(self, merge: TxMerge, entry: Joinable, check_room: bool = False) -> int:
        """``entry`` joins ``merge``; 0 when it needs room that is not there (TxMerge.take)."""
        counted, counted_size = merge.counted, merge.counted_size

        def room(size: int) -> bool:  # for one message more, with what joined so far
            grown, grown_size = merge.counted - counted, merge.counted_size - counted_size
            return self._fits(grown_size + size, grown + 1)

        conflated = merge.take(entry, room if check_room else None)
        if conflated is None:
            return 0
        # Later changes of its records go after the block, never into a message queued before it.
        self._queued.passed(records_of(entry))
        self.conflated += conflated
        self.queued_messages += merge.counted - counted
        self.queued_bytes += merge.counted_size - counted_size
        return self.queued_messages

    def _count_block(self, block: TxBlock) -> None:
        block.counted = min(block.count, max(1, self.max_messages // 2))
        block.counted_size = min(block.size, self.max_bytes // 2)

    def push_stream(
        self,
        messages: Iterator[bytes],
        count: int = 0,
        size: int = 0,
        records: Iterable[tuple[str, str]] = (),
        whole: Reader | None = None,
        opening: bytes = b"",
        closing: bytes = b"",
        policy: QueuePolicy | None = None,
    ) -> int:
        """Queue a lazy snapshot of ``count`` messages (``opening`` and ``closing`` included),
        about ``size`` bytes encoded, of ``policy``'s topic, that sends ``records`` (topic, key),
        the whole view of subscription ``whole`` (if any); the number now queued, or 0 when it
        does not fit (what it counts: snapshots.py, ``counted_against``)."""
        if self.max_messages <= 0:
            return 0  # closed
        counted, unit = counted_against(self.max_messages, self.max_bytes, count, size, opening, closing)
        if counted and not self._fits(counted * unit, counted):
            return 0
        self._queued.passed(records, whole)
        stream = SnapshotStream(messages, counted, unit, records, whole, opening, closing, policy)
        # At least 1: an empty snapshot is queued too (and the writer must wake for it).
        return max(1, self._add(stream, counted * unit, counted))

    def _merging(self, delivery: Delivery) -> bool:
        policy = delivery.policy.conflation
        return self.conflation and (policy == "always" or (self.keyed and policy == "conflate"))

    def _keyed(self, delivery: Delivery, check_room: bool) -> int:
        """Queue ``delivery`` into its record's entries (keyed.py); 0 (and nothing changed) when
        a new message does not fit."""
        folded = fold(self._entries, self._queued, delivery, self._fits if check_room else None)
        if folded is None:
            return 0
        self.conflated += folded.conflated
        self.queued_bytes += folded.size
        self.queued_messages += folded.messages
        return self.queued_messages

    # -- relief ---------------------------------------------------------------------------

    @property
    def crowded(self) -> bool:
        """Past a quarter of a bound and not conflated yet: worth conflating early, while the
        server has nothing else to do (background conflation)."""
        return (
            self.conflation
            and not self.keyed
            and (self.queued_messages * 4 > self.max_messages or self.queued_bytes * 4 > self.max_bytes)
        )

    def relieve(self, drop: bool = True) -> list[Reader]:
        """Conflate the whole queue by each topic's policy, once.

        ``conflate`` and ``always`` topics: one entry per record (its net effect, conflation.py).
        ``unsubscribe`` topics: their queued deliveries are dropped; the subscriptions are
        returned so the session can drop them and say so (whether or not this session turned
        conflation off: dropping a subscription is not conflating). ``off``: left as they are.
        Transactions: consecutive ones, and what is queued between and after them, merge into
        one block (tx_merge.py). ``drop`` False (conflating early, the queue not full): nothing
        is dropped.
        """
        old = self._entries
        self._entries = deque()
        self._queued = self._queued.anew()
        self.queued_bytes = self.queued_messages = 0
        self.keyed = True
        dropped = dropped_by_relief(old) if drop else {}
        merging = self.conflation  # (a session without conflation keeps its blocks apart)
        for entry in old:
            merge = self._open_merge() if merging else None
            if isinstance(entry, RunBatch):
                for delivery in entry.deliveries():
                    self._relieve_one(delivery, drop, merge)
            elif isinstance(entry, Delivery):
                self._relieve_one(entry, drop, merge)
            elif isinstance(entry, RecordEntry):
                if entry.dead:
                    continue
                if merge is not None:
                    self._into(merge, entry)
                else:
                    self._queued.keep(entry)
                    self._add(entry, entry.size, entry.count)
            elif isinstance(entry, bytes):
                self._add(entry, len(entry) + 1, 1)
            elif isinstance(entry, (TxBlock, TxMerge)):
                kept = entry.without(dropped) if dropped else entry
                if kept is None:
                    continue
                if isinstance(kept, TxBlock):
                    self._count_block(kept)
                if merging and not (merge is None and isinstance(kept, TxMerge)):
                    if merge is None:
                        merge = TxMerge(self._queued.replaced)
                        self._entries.append(merge)
                    self._into(merge, kept)
                else:  # a transaction (or transactions merged before) goes as it came
                    self._queued.passed(kept.records)
                    self._add(kept, kept.counted_size, kept.counted)
            else:
                self._queued.passed(entry.records, entry.whole)
                self._add(entry, entry.size, entry.messages)
        return list(dropped)

    def _relieve_one(self, delivery: Delivery, drop: bool, merge: TxMerge | None) -> None:
        policy = delivery.policy
        if policy.conflation == "unsubscribe" and drop:
            policy.counters["dropped"] += 1  # its subscriptions are dropped (relieve)
            return
        if merge is not None:
            self._into(merge, delivery)
            return
        if delivery.record is not None and self.conflation and policy.conflation in CONFLATED_POLICIES:
            self._keyed(delivery, check_room=False)
            return
        self._add(delivery, delivery.size, 1)

    def depth_by_topic(self) -> dict[str, int]:
        """Messages about each topic's changes waiting here (snapshots and acks are not counted)."""
        return queue_figures.depth_by_topic(self._entries)

    def close(self) -> None:
        """Drop everything queued and refuse every later push."""
        self._entries.clear()
        self._queued.clear()
        self.queued_bytes = 0
        self.queued_messages = 0
        self.max_messages = 0

    # -- draining -------------------------------------------------------------------------

    def take_frame(self, max_frame_bytes: int, now: float | None = None) -> bytes | None:
        """The next array frame: as many queued messages as fit in ``max_frame_bytes`` (at least
        one), each counted in its topic's ``sent_bytes``. With ``now`` (the clock of the changes'
        ``ts``), each message about a change is observed in its topic's ``written`` latency."""
        parts: list[bytes] = []
        size = 1
        entries = self._entries
        while entries:
            entry = entries[0]
            if isinstance(entry, bytes):
                if parts and size + len(entry) + 1 > max_frame_bytes:
                    break
                entries.popleft()
                parts.append(entry)
                size += len(entry) + 1
                self.queued_bytes -= len(entry) + 1
                self.queued_messages -= 1
                self.sent += 1
            elif isinstance(entry, Delivery):
                entries.popleft()
                if parts and size + entry.size > max_frame_bytes:
                    entries.appendleft(entry)
                    break
                parts.append(entry.head)
                parts.append(entry.body)
                size += entry.size
                self.queued_bytes -= entry.size
                self.queued_messages -= 1
                self.sent += 1
                entry.policy.counters["sent_bytes"] += entry.size
                if now is not None:
                    queue_figures.observe_written(entry, now)
            elif isinstance(entry, RecordEntry):
                if entry.dead:
                    entries.popleft()
                    continue
                rendered = entry.render()
                rendered_size = sum(len(part) for part in rendered) + len(rendered)
                if parts and size + rendered_size > max_frame_bytes:
                    break
                entries.popleft()
                parts.extend(rendered)
                size += rendered_size
                self.queued_bytes -= entry.size
                self.queued_messages -= entry.count
                self.sent += len(rendered) // 2
                entry.policy.counters["sent_bytes"] += rendered_size
                self._queued.taken(entry)
                if now is not None:
                    queue_figures.observe_written(entry, now)
            elif isinstance(entry, (TxBlock, TxMerge)):
                if parts and size + entry.size > max_frame_bytes:
                    break  # a transaction is one frame, of its own when it must be
                entries.popleft()
                rendered = entry.render()  # (nothing, when nothing is left for anyone)
                written = sum(len(part) + 1 for part in rendered)
                parts.extend(rendered)
                size += written
                self.queued_bytes -= entry.counted_size
                self.queued_messages -= entry.counted
                self.sent += len(rendered) // 2 + 1 if rendered else 0
                queue_figures.count_sent(entry, written)
                if now is not None:
                    queue_figures.observe_written(entry, now)
            elif isinstance(entry, RunBatch):
                count = len(entry.bodies)
                first = entry.versions[0] if count else None  # the run's oldest change
                taken_bytes, taken = entry.take_into(parts, size, max_frame_bytes)
                if now is not None and first is not None:
                    entry.policy.latency.written.observe(now - first.timestamp, taken)
                size += taken_bytes
                self.queued_bytes -= taken_bytes
                self.queued_messages -= taken
                self.sent += taken
                entry.policy.counters["sent_bytes"] += taken_bytes
                if taken < count:
                    break  # the rest of the run goes in the next frame
                entries.popleft()
            else:
                streamed = entry.peek(max_frame_bytes - size - 1)
                if streamed is None:
                    entries.popleft()
                    self._written(entry, entry.messages)  # fewer records than counted
                    continue
                if streamed == FRAME_BREAK:
                    entry.head = None
                    if parts:
                        break
                    continue
                if parts and size + len(streamed) + 1 > max_frame_bytes:
                    break
                entry.head = None
                parts.append(streamed)
                size += len(streamed) + 1
                self.sent += entry.head_count
                if entry.policy is not None:
                    entry.policy.counters["sent_bytes"] += len(streamed) + 1
                if entry.messages:
                    self._written(entry, min(entry.head_count, entry.messages))
        if not entries:
            self.keyed = False
            self._queued.clear()
        if not parts:
            return None
        return array_frame(parts)

    def _written(self, stream: SnapshotStream, records: int) -> None:
        """``records`` of ``stream`` are written (or will never be): they count no more."""
        stream.messages -= records
        self.queued_messages -= records
        self.queued_bytes -= records * stream.unit
