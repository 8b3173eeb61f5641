"""What a pass in slices over a topic's records reads (``Frozen``): the records as they were when
it began (a list of their versions: versions are never changed, only replaced), and every key
written since, which the SOW notes for it (``Sow.watch``). Once read, a pass catches up
(``catch_up``): it takes the keys written meanwhile a slice at a time, each as the record is now,
until a slice or less is left, so a topic written while it was read does not make its end a step
as long as those writes (passes.py, sorted_pass.py)."""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice
from typing import Any

from ..limits import SLICE_UNITS
from ..records.version import RecordVersion
from ..sow.store import Sow, Watched

# A record as it is now, when it passes (else None), with the view of it its subscription
# remembers (None without ``view_of``).
Seen = tuple[RecordVersion, Any] | None
# Writes noted, oldest first: each key, and whether the write (re)made its record.
Writes = list[tuple[str, bool]]


class Frozen:
    """What a pass in slices reads: the records as they were at its first slice (``_start``: not
    when the pass is made, so a pass waiting for its turn holds no copy), and the keys written
    since (``watched``), until ``close``. ``units``: the estimated cost of one record
    (session/quota.py's units), which sizes the slices (``batch`` records)."""

    def __init__(self, sow: Sow, units: int) -> None:
        self._sow = sow
        self.records = sow.records
        self._versions: list[RecordVersion] = []
        self.watched: Watched = {}
        self._started = False
        self.batch = max(1, SLICE_UNITS // max(1, units))
        self._writes_taken = 0  # (while catching up)

    def catch_up(self, take: Callable[[Writes], None]) -> bool:
        """Once read: hand ``take`` the oldest slice of the writes noted, while more than a slice
        is noted and fewer were taken so far than the pass read records (a topic written faster
        than its writes are taken still ends: its end takes the rest); True when caught up."""
        if len(self.watched) <= self.batch or self._writes_taken >= len(self._versions):
            return True
        take(self.take_noted(self.batch))
        return False

    def take_noted(self, count: int | None = None) -> Writes:
        """The ``count`` oldest writes noted (None: all), forgotten here: the caller takes each
        record as it is now."""
        watched = self.watched
        keys = list(watched) if count is None else list(islice(watched, count))
        self._writes_taken += len(keys)
        return [(key, watched.pop(key)) for key in keys]

    def _start(self) -> None:
        self._started = True
        self._versions = list(self._sow.records.values())
        self.watched = self._sow.watch()

    def close(self) -> None:
        """Stop noting writes (a pass whose command will not use it, or one finished)."""
        self._sow.unwatch(self.watched)
