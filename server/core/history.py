"""The recent changes of one topic, each with the version it replaced: what resuming a view
(PROTOCOL 11.1) reads.

A resume from bookmark B needs, for every record changed after B, how it was at B (the version
its first change after B replaced: was it in the view then?) and how it is now (the SOW). So the
history keeps, per change, its LSN, the record's key, the version it replaced and how it ended
the record (a delete or an expiry). It is bounded in changes, in the encoded bytes of the
versions it keeps alive (a feed of big records must not hold gigabytes) and in age; ``floor`` is
the LSN after which it holds every change, so a bookmark below it cannot be resumed.

Versions are immutable and shared with the SOW and the queues: a change costs a tuple here,
and keeps its replaced version alive until the change leaves the history.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import islice
from typing import NamedTuple

from .records import RecordVersion

ENTRY_BYTES = 100  # what one change costs the history besides its replaced version's data


class Past(NamedTuple):
    lsn: int
    key: str
    old: RecordVersion | None  # what the change replaced or removed (None: a new record)
    gone: str | None  # "deleted" or "expired" when the change removed the record
    timestamp: float


@dataclass(slots=True)
class Then:
    """A record changed after a bookmark: how it was at the bookmark, and how its last change
    removed it (when it did)."""

    old: RecordVersion | None
    gone: str | None  # how the last change removed it, when it did
    removed: RecordVersion | None  # the version the last change removed, when it did


class History:
    def __init__(self, max_changes: int, max_age_s: float, max_bytes: int, floor: int = 0) -> None:
        self.max_changes = max_changes
        self.max_age_s = max_age_s
        self.max_bytes = max_bytes
        self.bytes = 0  # what the changes held cost, about: their replaced versions encoded
        self._sizes: list[int] = []
        self.floor = floor  # every change with a greater LSN is held
        self._changes: list[Past] = []
        self._lsns: list[int] = []  # the changes' LSNs, for bisecting
        self._start = 0  # changes before this index have left (compacted in bulk)

    def __len__(self) -> int:
        return len(self._changes) - self._start

    def note(self, past: Past) -> None:
        size = ENTRY_BYTES + (len(past.old.encoded) if past.old is not None else 0)
        self._changes.append(past)
        self._lsns.append(past.lsn)
        self._sizes.append(size)
        self.bytes += size
        if len(self) > self.max_changes:
            self._drop(len(self) - self.max_changes)
        if self.bytes > self.max_bytes:
            excess, count = self.bytes - self.max_bytes, 0
            while excess > 0:
                excess -= self._sizes[self._start + count]
                count += 1
            self._drop(count)
        if self._changes[self._start].timestamp < past.timestamp - self.max_age_s:
            self.trim(past.timestamp)

    def trim(self, now: float) -> None:
        """Forget the changes older than ``max_age_s``."""
        changes, start, horizon = self._changes, self._start, now - self.max_age_s
        end = start
        while end < len(changes) and changes[end].timestamp < horizon:
            end += 1
        if end > start:
            self._drop(end - start)

    def _drop(self, count: int) -> None:
        last = self._start + count - 1
        self.floor = max(self.floor, self._lsns[last])
        self.bytes -= sum(self._sizes[self._start : last + 1])
        self._start += count
        if self._start > 1024 and self._start * 2 > len(self._changes):
            del self._changes[: self._start]
            del self._lsns[: self._start]
            del self._sizes[: self._start]
            self._start = 0

    def reset(self, floor: int) -> None:
        """Forget every change: the topic was rebuilt as of LSN ``floor`` (a cluster's snapshot)."""
        self._changes, self._lsns, self._sizes, self._start, self.floor = [], [], [], 0, floor
        self.bytes = 0

    def holds(self, lsn: int) -> bool:
        """Whether every change after ``lsn`` is here."""
        return lsn >= self.floor

    def since(self, lsn: int) -> dict[str, Then]:
        """The records changed after ``lsn``, in the order of their first change after it."""
        changed: dict[str, Then] = {}
        first = max(self._start, bisect_right(self._lsns, lsn, lo=self._start))
        for past in islice(self._changes, first, None):
            then = changed.get(past.key)
            if then is None:
                then = changed[past.key] = Then(past.old, None, None)
            then.gone = past.gone
            then.removed = past.old if past.gone is not None else None
        return changed

    def held(self) -> list[Past]:
        """Every change held, oldest first (for a snapshot of the durable state)."""
        return self._changes[self._start :]
