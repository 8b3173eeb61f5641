"""A view derived from a topic's changes (an aggregation: aggregate/view.py), as the fan-out
sees it: fed every change of its source topic's records as it is applied, and flushed, once, at
the end of a transaction (tx_frames.py), so that a transaction changes what it derives once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..records.version import RecordVersion


class Derived(Protocol):
    def source_changed(
        self, key: str, old: RecordVersion | None, new: RecordVersion | None, gone: str
    ) -> None:
        """Record ``key`` of the source changed from ``old`` to ``new`` (None: gone, ``gone`` says
        how: deleted or expired)."""

    def flush(self) -> None:
        """Send what the changes fed since the last flush made of the view."""

    def release(self) -> None:
        """Its last subscriber left: stop being fed."""
