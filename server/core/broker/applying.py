"""What follows a change of a SOW on this server: the record's expiry timer, and the fan-out.

The SOW's store makes the change and says what it made (sow/store.py); this module acts on that
answer and on nothing else. Both logs end here: the local one (``log/local.py``) applies a change
as its command runs, and a cluster node (``log/replica.py``) applies each entry of the shared log
as it reads it back. So a change reaches subscribers the same way whichever node made it. A whole
SOW loaded from a cluster's snapshot (runtime/redis_snapshots.py) comes through ``load``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..records.version import RecordVersion
from ..sow.txlog import EXPIRE, PUBLISH, LogEntry, transaction_changes

if TYPE_CHECKING:
    from ..fanout.topic import Topic
    from ..fanout.tx_frames import TxFrames
    from ..sow.history import Held
    from .timers import Timers


def apply_change(topic: Topic, entry: LogEntry, timers: Timers) -> None:
    """Apply ``entry`` (numbered) to ``topic`` and tell its subscribers."""
    if topic.key_spec is None:  # a plain topic keeps nothing: a publish is only delivered
        if entry.op == PUBLISH:
            version = RecordVersion(
                "", entry.data, entry.lsn, entry.timestamp, entry.expires_at, entry.encoded
            )
            topic.fan_out(None, None, version)
        return
    old, new = topic.sow.apply(entry)
    gone = "expired" if entry.op == EXPIRE else "deleted"
    _follow(topic, timers, old, new, entry.lsn, entry.timestamp, gone)


def apply_transaction(
    topic_of: Callable[[str], Topic | None], entry: LogEntry, timers: Timers, frames: TxFrames
) -> None:
    """Apply a transaction entry (numbered), its messages held and queued as one block per socket."""
    frames.begin(str(entry.lsn))
    try:
        for change in transaction_changes(entry):
            topic = topic_of(change.topic)
            if topic is not None:  # None: a plain topic nobody listens to
                apply_change(topic, change, timers)
    finally:
        frames.end()  # aggregations write their groups' changes in the block: each group once


def load(
    topic: Topic,
    versions: Iterable[RecordVersion],
    floor: int,
    timers: Timers,
    changes: Iterable[Held] = (),
    told_at: float | None = None,
) -> None:
    """Load ``topic``'s SOW from a snapshot as of the change ``floor`` (``Sow.load``) and arm the
    expiries of the versions it stored. With ``told_at``, subscribers are told every difference
    too, a record the snapshot no longer holds as deleted by ``floor`` at ``told_at``; without it
    nobody is listening yet (a server or node starting), and a fan-out per record would be waste."""
    for old, new in topic.sow.load(versions, floor, changes):
        if told_at is not None:
            _follow(topic, timers, old, new, floor, told_at, "deleted")
        elif new is not None and new.expires_at is not None:
            timers.expire_at(topic.name, new.key, new.expires_at)
    if told_at is None:
        topic.orders.rebuild(topic.records)  # the orders kept with no window heard nothing


def _follow(
    topic: Topic,
    timers: Timers,
    old: RecordVersion | None,
    new: RecordVersion | None,
    lsn: int,
    timestamp: float,
    gone: str,
) -> None:
    """What follows a record's change from ``old`` to ``new``, made by ``lsn`` at ``timestamp``:
    the topic's aggregations fed, the new version's expiry armed, the subscribers told."""
    if topic.derived:
        _feed(topic, old, new, lsn, timestamp, gone)
    if new is not None:
        if new.expires_at is not None:
            timers.expire_at(topic.name, new.key, new.expires_at)
        topic.fan_out(new.key, old, new, gone=gone)
    elif old is not None:
        # The OOF's body is the last state, its bookmark the delete's (as a replay sends it): a
        # client that resumes from the last bm it received must not be sent the delete again.
        last = RecordVersion(old.key, old.data, lsn, timestamp, old.expires_at)
        topic.fan_out(old.key, last, None, gone=gone)


def _feed(
    topic: Topic, old: RecordVersion | None, new: RecordVersion | None, lsn: int, timestamp: float, gone: str
) -> None:
    """Feed the change to the topic's aggregations (aggregate/view.py). A record that went is told
    as of its delete or expiry: the versions of the groups it leaves are that change's."""
    if new is not None:
        key, told = new.key, old
    elif old is not None:
        key, told = old.key, RecordVersion(old.key, None, lsn, timestamp)
    else:
        return
    for view in list(topic.derived.values()):
        view.source_changed(key, told, new, gone)
