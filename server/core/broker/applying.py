"""Applying one log entry on this server: the SOW, the record's expiry timer, the fan-out.

Both logs end here: the local one (``log/local.py``) applies a change as its command runs, and a
cluster node (``log/replica.py``) applies each entry of the shared log as it reads it back. So a
change reaches subscribers the same way whichever node made it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..records.version import RecordVersion
from ..sow.changes import apply_entry
from ..sow.txlog import EXPIRE, PUBLISH, LogEntry, transaction_changes

if TYPE_CHECKING:
    from ..fanout.topic import Topic
    from ..fanout.tx_frames import TxFrames
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
    old, new = apply_entry(topic.sow, entry)
    if new is not None and new.expires_at is not None:
        timers.expire_at(topic.name, new.key, new.expires_at)
    if new is None and old is not None:
        # The OOF's body is the last state, its bookmark the delete's (as a replay sends it): a
        # client that resumes from the last bm it received must not be sent the delete again.
        old = RecordVersion(old.key, old.data, entry.lsn, entry.timestamp, old.expires_at)
    if old is not None or new is not None:
        topic.fan_out(entry.key, old, new, gone="expired" if entry.op == EXPIRE else "deleted")


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
        frames.end()
