"""Applying one log entry on this server: the SOW, the record's expiry timer, the fan-out.

Both logs end here: the local one (``local_log.py``) applies a change as its command runs, and a
cluster node (``replica.py``) applies each entry of the shared log as it reads it back. So a
change reaches subscribers the same way whichever node made it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .changes import apply_entry
from .records import RecordVersion
from .txlog import EXPIRE, PUBLISH, Entry

if TYPE_CHECKING:
    from .timers import Timers
    from .topic import Topic


def apply_change(topic: Topic, entry: Entry, timers: Timers) -> None:
    """Apply ``entry`` (numbered) to ``topic`` and tell its subscribers."""
    if topic.key_spec is None:  # a plain topic keeps nothing: a publish is only delivered
        if entry.op == PUBLISH:
            version = RecordVersion("", entry.data, entry.lsn, entry.timestamp, entry.expires_at)
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
