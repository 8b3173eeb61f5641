"""One topic's State of the World: its records by SowKey, and the only writer of them.

Every change of a record goes through ``put`` or ``remove``, which return what they replaced:
publishes, deletes, expiries and recovery all write here, and everything else reads
``records``, a read-only view (mypy refuses a write through it). One owner is what lets a
cluster apply an ordered log of changes deterministically.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..records.version import RecordVersion
from .history import History


class Sow:
    __slots__ = ("_records", "history")

    def __init__(self) -> None:
        self._records: dict[str, RecordVersion] = {}
        # The recent changes, to resume views from (history.py); set for the topics that keep one.
        self.history: History | None = None

    @property
    def records(self) -> Mapping[str, RecordVersion]:
        return self._records

    def __len__(self) -> int:
        return len(self._records)

    def put(self, version: RecordVersion) -> RecordVersion | None:
        """Store ``version`` under its key; the version it replaced (None: a new record)."""
        old = self._records.get(version.key)
        self._records[version.key] = version
        return old

    def remove(self, key: str) -> RecordVersion | None:
        """Remove the record of ``key``; the version removed (None: there was none)."""
        return self._records.pop(key, None)

    def clear(self) -> None:
        self._records.clear()
