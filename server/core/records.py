"""Record versions: immutable once stored, so a queued message can hold the version it was
computed from and a delta can be taken against "what this socket last received" without copies."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


class RecordVersion:
    __slots__ = ("data", "expires_at", "key", "seq", "timestamp")

    def __init__(
        self, key: str, data: Any, seq: int, timestamp: float, expires_at: float | None = None
    ) -> None:
        self.key = key
        self.data = data  # never mutated after construction
        self.seq = seq  # the server's apply order, unique and increasing
        self.timestamp = timestamp
        self.expires_at = expires_at

    def __repr__(self) -> str:
        return f"RecordVersion({self.key!r}, seq={self.seq})"


def format_timestamp(seconds: float) -> str:
    """ISO-8601 UTC with milliseconds, as every ``ts`` field carries it."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
