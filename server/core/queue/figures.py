"""What a socket's queue tells the metrics: how long its messages about changes waited, and how
many of each topic's are waiting. Read by the outbox as it writes, and by the status page."""

from __future__ import annotations

from collections.abc import Iterable

from .conflation import RecordEntry
from .delivery import Delivery, RunBatch, TxBlock
from .tx_merge import TxMerge, held


def observe_written(entry: Delivery | RunBatch | RecordEntry | TxBlock | TxMerge, now: float) -> None:
    """``entry`` is being written at ``now``: observe, in its topic's ``written`` latency, the
    time since each change it sends was made (its ``ts``).

    A run (RunBatch) is one settle's changes: its first is its oldest and stands for all of them,
    so the fast lane pays one observation per frame, not per message. A conflated entry is timed
    from the newest change it folded: the state the client is shown."""
    if isinstance(entry, RunBatch):
        if entry.versions:
            entry.policy.latency.written.observe(now - entry.versions[0].timestamp, len(entry.versions))
    elif isinstance(entry, Delivery):
        if entry.version is not None and entry.timed:
            entry.policy.latency.written.observe(now - entry.version.timestamp)
    elif isinstance(entry, RecordEntry):
        lasts = {id(net.last): net.last for net in entry.nets if not net.sub.dropped}
        for delivery in lasts.values():
            observe_written(delivery, now)
    else:
        for item in held(entry):
            observe_written(item, now)


def count_sent(entry: TxBlock | TxMerge, written: int) -> None:
    """A transaction's ``written`` bytes (its marks included) are sent: shared among the topics of
    its messages by their queued sizes, so that the topics' counts add up to what was written (a
    transaction of one topic's changes, the usual one, counts exactly)."""
    items = held(entry)
    estimated = sum(item.size for item in items)
    if not written or not estimated:
        return
    counted = 0
    for item in items[:-1]:
        share = written * item.size // estimated
        item.policy.counters["sent_bytes"] += share
        counted += share
    items[-1].policy.counters["sent_bytes"] += written - counted


def depth_by_topic(entries: Iterable[object]) -> dict[str, int]:
    """Messages about each topic's changes among a queue's ``entries`` (snapshots and acks are
    not counted)."""
    depth: dict[str, int] = {}
    for entry in entries:
        if isinstance(entry, (TxBlock, TxMerge)):
            for item in held(entry):
                _count(depth, item)
        elif isinstance(entry, (Delivery, RunBatch, RecordEntry)):
            _count(depth, entry)
    return depth


def _count(depth: dict[str, int], entry: Delivery | RunBatch | RecordEntry) -> None:
    if isinstance(entry, RunBatch):
        count = len(entry.bodies)
    elif isinstance(entry, RecordEntry):
        count = entry.count
    else:
        count = 1
    name = entry.policy.name
    depth[name] = depth.get(name, 0) + count
