"""Applying one change to a topic's SOW: the one step every path takes.

A live publish, delete or expiry, and recovery reading the transaction log back, each build a
log ``Entry`` and apply it here. Applying uses nothing but the entry (its LSN is the record
version's sequence, its timestamp the version's time and its expiry the one the entry carries):
no clock, no randomness, no node identity, so the same ordered entries give the same SOW
wherever they are applied. That is what a shared ordered log needs of every node.
"""

from __future__ import annotations

from .records import RecordVersion
from .sow import Sow
from .txlog import DELETE, EXPIRE, PUBLISH, Entry

Change = tuple[RecordVersion | None, RecordVersion | None]  # (what was there, what is there now)


def apply_entry(sow: Sow, entry: Entry) -> Change:
    """Apply ``entry`` to ``sow``; the version it replaced or removed, and the new one."""
    if entry.op == PUBLISH:
        new = RecordVersion(entry.key, entry.data, entry.lsn, entry.timestamp, entry.expires_at)
        return sow.put(new), new
    if entry.op in (DELETE, EXPIRE):
        return sow.remove(entry.key), None
    return None, None  # an entry that changes no record (a sequence, a client name's owner)
