"""One topic's State of the World: its records by SowKey, and the only writer of them.

Every change of a record is made here, and each write answers with the ``VersionChange`` it made
(what was there, what is there now), so what follows a change on a server (an expiry timer, the
fan-out: broker/applying.py) acts on the store's answer, never on a second look at the records.
Two doors lead in:

- ``apply``: one log ``LogEntry``. A live publish, delete or expiry, recovery reading the
  transaction log back, and a cluster node reading the shared log, each build an entry and apply
  it here (``put`` and ``remove`` are its two halves).
- ``load``: a whole SOW as a snapshot holds it (recovery's on disk, a cluster's in Redis).

Everything else reads ``records``, a read-only view (mypy refuses a write through it). The
topic's history (history.py), when it keeps one, is written here too, by the same writes, so it
cannot disagree with the records.

Applying uses nothing but the entry and the SOW it applies to (its LSN is the record version's
sequence, its timestamp the version's time and its expiry the one the entry carries): no clock,
no randomness, no node identity, so the same ordered entries give the same SOW wherever they are
applied. That is what a shared ordered log needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..records.version import RecordVersion
from .history import Held, History, Past
from .txlog import DELETE, EXPIRE, PUBLISH, LogEntry

# The keys written since a pass began, each True when the record was made (again) since
# (``Sow.watch``), in the order they were last made.
Watched = dict[str, bool]
VersionChange = tuple[RecordVersion | None, RecordVersion | None]  # (what was there, what is there now)
NO_CHANGE: VersionChange = (None, None)


class Sow:
    __slots__ = ("_every", "_records", "_watchers", "changes", "history")

    def __init__(self) -> None:
        self._records: dict[str, RecordVersion] = {}
        self.changes = 0  # records put or removed since the server started (its metrics' rates)
        # The recent changes, to resume views from (history.py); set for the topics that keep one.
        self.history: History | None = None
        self._every: list[RecordVersion] | None = None  # every_version's, until the next change
        # The keys changed since each pass in slices began (``watch``: fanout/passes.py).
        self._watchers: list[Watched] = []

    @property
    def records(self) -> Mapping[str, RecordVersion]:
        return self._records

    def every_version(self) -> list[RecordVersion]:
        """Every record's version, in the records' order: one list, shared by every snapshot of
        the whole topic taken before the next change, which no one may change. (A reconnect storm
        of 2,048 dashboards on a topic of a million records held a list of a million pointers
        each, 16 GB, until each was written.) Kept until the next change: 8 bytes a record."""
        every = self._every
        if every is None:
            every = self._every = list(self._records.values())
        return every

    def __len__(self) -> int:
        return len(self._records)

    def watch(self) -> Watched:
        """From now on, note every key written here in the answer, until ``unwatch``: a pass that
        reads the records in slices, other sockets' changes between them, takes those keys again
        at its end (fanout/passes.py). True: the record was (re)made, so it now comes after every
        record that was here before in the records' order; False: changed in place, or removed."""
        watched: Watched = {}
        self._watchers.append(watched)
        return watched

    def unwatch(self, watched: Watched) -> None:
        self._watchers = [other for other in self._watchers if other is not watched]

    def _noted(self, key: str, made: bool) -> None:
        for watched in self._watchers:
            if made:
                watched.pop(key, None)  # (re)made last: it goes after every other one noted
                watched[key] = True
            elif key not in watched:
                watched[key] = False

    def put(self, version: RecordVersion) -> VersionChange:
        """Store ``version`` under its key, by the change its ``seq`` numbers."""
        key = version.key
        old = self._records.get(key)
        self._records[key] = version
        self._every = None
        self.changes += 1
        if self._watchers:
            self._noted(key, old is None)
        history = self.history
        if history is not None:
            # A new record's version says what the change was: it costs the history no tuple.
            history.note(version if old is None else Past(version.seq, key, old, None, version.timestamp))
        return old, version

    def remove(self, key: str, lsn: int, timestamp: float, gone: str = "deleted") -> VersionChange:
        """Remove the record of ``key`` by the change ``lsn`` made at ``timestamp``; ``gone`` says
        how (``deleted`` or ``expired``: what resuming a view tells, docs/protocol.md, Resuming a view)."""
        old = self._records.pop(key, None)
        if old is None:
            return NO_CHANGE
        self._every = None
        self.changes += 1
        if self._watchers:
            self._noted(key, False)
        if self.history is not None:
            self.history.note(Past(lsn, key, old, gone, timestamp))
        return old, None

    def apply(self, entry: LogEntry) -> VersionChange:
        """Apply one log entry's change of a record (a transaction's changes one at a time:
        ``txlog.transaction_changes``)."""
        op = entry.op
        if op == PUBLISH:
            return self.put(
                RecordVersion(
                    entry.key, entry.data, entry.lsn, entry.timestamp, entry.expires_at, entry.encoded
                )
            )
        if op == DELETE:
            return self.remove(entry.key, entry.lsn, entry.timestamp)
        if op == EXPIRE:
            version = entry.data  # the version that expires (a cluster's entry), or None: whatever is there
            current = self._records.get(entry.key)
            if current is None or (version is not None and current.seq != version):
                return NO_CHANGE  # expired already, or replaced since: a later lifetime
            return self.remove(entry.key, entry.lsn, entry.timestamp, "expired")
        return NO_CHANGE  # an entry that changes no record (a sequence, a client name's owner)

    def load(
        self, versions: Iterable[RecordVersion], floor: int, changes: Iterable[Held] = ()
    ) -> list[VersionChange]:
        """Make the records ``versions``, the SOW as of the change ``floor`` (a snapshot's); the
        changes that made it so, in order: the versions stored (a record already at its version
        is left as it is), then the records removed. The history starts again at ``floor`` with
        ``changes``, the ones the snapshot kept: a snapshot stands for every other change before
        it, and those are not known one by one, so a bookmark before ``floor`` cannot resume."""
        records = self._records
        self._every = None
        made: list[VersionChange] = []
        # An empty store (a server starting) has nothing a snapshot could leave out: a million
        # keys need not be remembered to find none.
        loaded: set[str] | None = set() if records else None
        for version in versions:
            key = version.key
            if loaded is not None:
                loaded.add(key)
            current = records.get(key)
            if current is not None and current.seq == version.seq:
                continue
            version.compact()  # stored records keep only their encoding (records/version.py)
            records[key] = version
            made.append((current, version))
            if self._watchers:
                self._noted(key, current is None)
        if loaded is not None and len(loaded) < len(records):
            for key in [key for key in records if key not in loaded]:
                made.append((records.pop(key), None))
                if self._watchers:
                    self._noted(key, False)
        history = self.history
        if history is not None:
            history.reset(floor)
            for change in changes:
                history.note(change)
        return made
