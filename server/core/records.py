"""Record versions: immutable once stored, so a queued message can hold the version it was
computed from and a delta can be taken against "what this socket last received" without copies."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from .errors import BAD_MESSAGE, CommandError

# orjson reads 1,024 levels of nesting but writes only 254, and every message, log entry and
# snapshot row carries a record inside a few levels of its own (a patch's value: 3). A record that
# cannot be written there poisons its topic: a snapshot query stops its socket's writer, a
# durable topic cannot log it or snapshot it. So a record is refused unless it is at most
# MAX_RECORD_DEPTH deep, which leaves room for envelopes that do not exist yet.
MAX_RECORD_DEPTH = 200
_ENCODER_DEPTH = 254  # what orjson.dumps writes; past it: "Recursion limit reached"

# To measure depth, the record is encoded again at the bottom of this chain of lists, so that
# orjson itself finds a record deeper than MAX_RECORD_DEPTH, in C. The chain is built once and its
# last slot borrowed for each check (the core runs on one thread, and nothing runs between
# filling the slot and emptying it).
_CHAIN: list[Any] = [None]
_BOTTOM = _CHAIN
for _ in range(_ENCODER_DEPTH - MAX_RECORD_DEPTH - 1):
    _CHAIN = [_CHAIN]


def check_encodable(data: Any) -> None:
    """``bad message`` unless ``data`` can be stored: written by the encoder inside every message
    and log entry that may carry it, so nothing that is acked can fail later."""
    try:
        size = len(orjson.dumps(data))
        # A record n levels deep is at least 2n bytes: a shorter one needs no second pass (most
        # records; the first pass costs ~0.2 us, the chain ~1 us more).
        if size > 2 * MAX_RECORD_DEPTH:
            _BOTTOM[0] = data
            orjson.dumps(_CHAIN)
    except orjson.JSONEncodeError as error:
        if str(error) == "Recursion limit reached":
            detail = f"data nested more than {MAX_RECORD_DEPTH} levels deep"
        else:
            detail = f"data cannot be written as JSON ({error})"
        raise CommandError(BAD_MESSAGE, detail) from None
    finally:
        _BOTTOM[0] = None


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
