"""Applying one change to a topic's SOW: the one step every path takes.

A live publish, delete or expiry, recovery reading the transaction log back, and a cluster node
reading the shared log, each build a log ``LogEntry`` and apply it here. Applying uses nothing but
the entry and the SOW it applies to (its LSN is the record version's sequence, its timestamp the
version's time and its expiry the one the entry carries): no clock, no randomness, no node
identity, so the same ordered entries give the same SOW wherever they are applied. That is what
a shared ordered log needs.
"""

from __future__ import annotations

from ..records.version import RecordVersion
from .history import Past
from .store import Sow
from .txlog import DELETE, EXPIRE, PUBLISH, LogEntry

VersionChange = tuple[RecordVersion | None, RecordVersion | None]  # (what was there, what is there now)


def apply_entry(sow: Sow, entry: LogEntry) -> VersionChange:
    """Apply ``entry`` to ``sow``; the version it replaced or removed, and the new one. The
    topic's history (when it keeps one) notes every change."""
    old, new = _apply(sow, entry)
    history = sow.history
    if history is not None:
        if old is None:
            if new is not None:
                history.note(new)  # a new record: its version says what the change was
        else:
            gone = None if new is not None else "expired" if entry.op == EXPIRE else "deleted"
            history.note(Past(entry.lsn, entry.key, old, gone, entry.timestamp))
    return old, new


def _apply(sow: Sow, entry: LogEntry) -> VersionChange:
    op = entry.op
    if op == PUBLISH:
        new = RecordVersion(
            entry.key, entry.data, entry.lsn, entry.timestamp, entry.expires_at, entry.encoded
        )
        return sow.put(new), new
    if op == DELETE:
        return sow.remove(entry.key), None
    if op == EXPIRE:
        version = entry.data  # the version that expires (a cluster's entry), or None: whatever is there
        current = sow.records.get(entry.key)
        if current is None or (version is not None and current.seq != version):
            return None, None  # expired already, or replaced since: a later lifetime
        return sow.remove(entry.key), None
    return None, None  # an entry that changes no record (a sequence, a client name's owner)
