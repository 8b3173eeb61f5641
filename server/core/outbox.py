"""The bounded outbound queue of one socket, and its conflation (PROTOCOL 6.3).

Entries, in order: plain messages (acks and the like, never conflated), ``RunBatch``es (a run of
whole records for a stateless subscription), ``Delivery``s (one message about one record) and
lazy snapshot streams (encoded as the writer drains them). The queue is bounded in bytes and in
messages, and everything in it counts: a snapshot counts its records as messages and an estimate
of their encoded size as bytes from the moment it is queued, each record's share coming off as it
is written. (What one snapshot counts is capped at half of each bound: it holds only a pointer a
record until it is written, and a snapshot bigger than the whole queue must still be possible,
with room left for the live messages behind it.) A push that does not fit is refused; the
session then calls ``relieve``, which conflates what is queued by the topics' policies, and
pushes again.

After a relief the outbox stays *keyed* until it drains: each new delivery for a conflated topic
folds straight into the queued ``RecordEntry`` of its record (conflation.py), so a stalled socket
costs O(1) per message instead of a pass over its queue, and holds at most one entry per record.
Deliveries of ``always`` topics are keyed all the time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from . import queue_figures
from .conflation import RecordEntry
from .delivery import Delivery, RunBatch, TxBlock
from .keyed import fold
from .queue_index import QueuedRecords
from .snapshots import SnapshotStream

if TYPE_CHECKING:
    from .ports import Reader

# A stream may yield this to end the current frame early (the ``bs`` batch size of a query).
FRAME_BREAK = b""

CONFLATED_POLICIES = ("conflate", "always")


Entry = bytes | RunBatch | Delivery | RecordEntry | SnapshotStream | TxBlock


class Outbox:
    def __init__(self, max_bytes: int, max_messages: int) -> None:
        self.max_bytes = max_bytes
        self.max_messages = max_messages
        self._entries: deque[Entry] = deque()
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

    def _add(self, entry: Entry, size: int, count: int) -> int:
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
        count = len(batch.bodies)
        if (
            self.keyed
            or (batch.policy.conflation == "always" and self.conflation)
            or not self._fits(batch.size, count)
        ):
            return 0
        return self._add(batch, batch.size, count)

    def push_delivery(self, delivery: Delivery) -> int:
        if delivery.record is not None and self._merging(delivery):
            return self._keyed(delivery, check_room=True)
        if not self._fits(delivery.size):
            return 0
        return self._add(delivery, delivery.size, 1)

    def push_tx(self, block: TxBlock) -> int:
        """Queue a transaction's messages as one entry; 0 when it does not fit. Like a snapshot
        it counts at most half of each bound: a transaction bigger than the whole queue, which
        cannot be conflated or split, must still be possible."""
        if self.max_messages <= 0:
            return 0  # closed
        self._count_block(block)
        if not self._fits(block.counted_size, block.counted):
            return 0
        self._queued.passed(block.records)
        return self._add(block, block.counted_size, block.counted)

    def _count_block(self, block: TxBlock) -> None:
        block.counted = min(block.count, max(1, self.max_messages // 2))
        block.counted_size = min(block.size, self.max_bytes // 2)

    def push_stream(
        self,
        messages: Iterator[bytes],
        count: int = 0,
        size: int = 0,
        records: Iterable[tuple[str, str]] = (),
    ) -> int:
        """Queue a lazy snapshot of ``count`` records, about ``size`` bytes once encoded, that
        sends ``records`` (topic, key); the number now queued, or 0 when it does not fit. It
        counts at most half of each bound."""
        if self.max_messages <= 0:
            return 0  # closed
        counted = min(count, self.max_messages // 2)
        unit = -(-min(size, self.max_bytes // 2) // counted) if counted else 0
        if counted and not self._fits(counted * unit, counted):
            return 0
        self._queued.passed(records)
        # At least 1: an empty snapshot is queued too (and the writer must wake for it).
        return max(1, self._add(SnapshotStream(messages, counted, unit, records), counted * unit, counted))

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
        ``drop`` False (conflating early, the queue not full): nothing is dropped.
        """
        old = self._entries
        self._entries = deque()
        self._queued = QueuedRecords()
        self.queued_bytes = self.queued_messages = 0
        self.keyed = True
        # The subscriptions dropped, first: a transaction queued anywhere keeps none of their
        # messages (its delta about a record may follow their dropped insert of it).
        # A transaction's block is never conflated, but its messages for a subscription of an
        # ``unsubscribe`` topic are that subscription's queued updates like any others.
        dropped: dict[Reader, None] = {}
        if drop:
            for entry in old:
                in_block = isinstance(entry, TxBlock)
                for item in entry.held if isinstance(entry, TxBlock) else (entry,):
                    if isinstance(item, Delivery | RunBatch) and item.policy.conflation == "unsubscribe":
                        dropped.update(dict.fromkeys(item.subs))
                        if in_block:  # (the others are counted as they are dropped, below)
                            messages = 1 if isinstance(item, Delivery) else len(item.bodies)
                            item.policy.counters["dropped"] += messages
        for entry in old:
            if isinstance(entry, RunBatch):
                for delivery in entry.deliveries():
                    self._relieve_one(delivery, drop)
            elif isinstance(entry, Delivery):
                self._relieve_one(entry, drop)
            elif isinstance(entry, RecordEntry):
                if not entry.dead:
                    self._queued.keep(entry)
                    self._add(entry, entry.size, entry.count)
            elif isinstance(entry, bytes):
                self._add(entry, len(entry) + 1, 1)
            elif isinstance(entry, TxBlock):  # never conflated: a transaction goes whole
                kept = entry.without(dropped) if dropped else entry
                if kept is not None:
                    self._count_block(kept)
                    self._queued.passed(kept.records)
                    self._add(kept, kept.counted_size, kept.counted)
            else:
                self._queued.passed(entry.records)
                self._add(entry, entry.size, entry.messages)
        return list(dropped)

    def _relieve_one(self, delivery: Delivery, drop: bool) -> None:
        policy = delivery.policy
        if policy.conflation == "unsubscribe" and drop:
            policy.counters["dropped"] += 1  # its subscriptions are dropped (relieve)
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
        """The next array frame: as many queued messages as fit in ``max_frame_bytes`` (at least one).

        With ``now`` (the clock of the changes' ``ts``), each message about a change is observed in
        its topic's ``written`` latency (snapshots, replays and acks are not changes)."""
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
                self._queued.taken(entry)
                if now is not None:
                    queue_figures.observe_written(entry, now)
            elif isinstance(entry, TxBlock):
                if parts and size + entry.size > max_frame_bytes:
                    break  # a transaction is one frame, of its own when it must be
                entries.popleft()
                parts.extend(entry.parts)
                size += entry.size
                self.queued_bytes -= entry.counted_size
                self.queued_messages -= entry.counted
                self.sent += entry.count
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
                if taken < count:
                    break  # the rest of the run goes in the next frame
                entries.popleft()
            else:
                streamed = entry.peek()
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
                self.sent += 1
                if entry.messages:
                    self._written(entry, 1)
        if not entries:
            self.keyed = False
            self._queued.clear()
        if not parts:
            return None
        return b"[" + b",".join(parts) + b"]"

    def _written(self, stream: SnapshotStream, records: int) -> None:
        """``records`` of ``stream`` are written (or will never be): they count no more."""
        stream.messages -= records
        self.queued_messages -= records
        self.queued_bytes -= records * stream.unit
