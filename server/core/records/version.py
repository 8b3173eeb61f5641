"""Record versions: immutable once stored, so a queued message can hold the version it was
computed from and a delta can be taken against "what this socket last received" without copies."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from ..errors import BAD_MESSAGE, CommandError

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


def check_encodable(data: Any) -> bytes:
    """``data`` encoded, or ``bad message`` unless it can be stored: written by the encoder inside
    every message and log entry that may carry it, so nothing that is acked can fail later."""
    try:
        encoded = orjson.dumps(data)
        # A record n levels deep is at least 2n bytes: a shorter one needs no second pass (most
        # records; the first pass costs ~0.2 us, the chain ~1 us more).
        if len(encoded) > 2 * MAX_RECORD_DEPTH:
            _BOTTOM[0] = data
            orjson.dumps(_CHAIN)
        return trimmed(encoded)  # kept by the record version it becomes
    except orjson.JSONEncodeError as error:
        if str(error) == "Recursion limit reached":
            detail = f"data nested more than {MAX_RECORD_DEPTH} levels deep"
        else:
            detail = f"data cannot be written as JSON ({error})"
        raise CommandError(BAD_MESSAGE, detail) from None
    finally:
        _BOTTOM[0] = None


_COMPACT: Any = object()  # stands for the record while only its encoding is kept


_NOTHING = b""


def trimmed(encoded: bytes) -> bytes:
    """``encoded`` in a bytes object of its own size. orjson (3.12 and later) returns its result
    in a buffer it never shrinks, 4 KB for a record of 140 bytes: whatever is kept beyond the
    moment (a stored record, a queued message) is trimmed first."""
    # A join of two parts is a copy of exactly their size, in half the time of a copy through a
    # memoryview (75 against 170 ns: a publish trims its record once, and its messages): a join
    # of one part, like bytes(encoded), would hand back the same oversized object.
    return _NOTHING.join((encoded, _NOTHING))


class RecordVersion:
    """One version of a record. A stored version is kept *compact*: its JSON encoding alone, a
    third of what the decoded dict of a small record costs. A fresh version holds both until
    its fan-out is done (``compact``), so that every message about it splices in the one
    encoding, and the changes of a publish read the dict it was published as.

    ``data`` decodes a compact version afresh on each use and leaves it compact: a scan, a
    filter, a merge only read it on the way. Whoever keeps the record (a subscription holding
    each record's state for its deltas and OOFs) takes it with ``hold``: the version then keeps
    its dict for good, so every holder shares one object, as messages naming several
    subscriptions need (they are grouped by the identity of what each holds)."""

    # A version is one of the three objects a stored record costs. Compiled (mypyc), its numbers
    # and the flag are C fields inside it, with no objects of their own.
    __slots__ = ("_data", "_encoded", "expires_at", "held", "key", "seq", "timestamp")

    def __init__(
        self,
        key: str,
        data: Any,
        seq: int,
        timestamp: float,
        expires_at: float | None = None,
        encoded: bytes | None = None,
    ) -> None:
        self.key = key
        self._data = data  # never mutated after construction
        self._encoded = encoded  # data encoded, once known, in a bytes object of its own size
        self.seq = seq  # the server's apply order, unique and increasing
        self.timestamp = timestamp
        self.expires_at = expires_at
        self.held = False  # someone keeps the dict (``hold``): compacting keeps it too

    @property
    def data(self) -> Any:
        data = self._data
        return orjson.loads(self._encoded) if data is _COMPACT else data  # type: ignore[arg-type]

    def hold(self) -> Any:
        """The record, for keeping: the version keeps this same dict from now on."""
        if self._data is _COMPACT:
            self._data = orjson.loads(self._encoded)  # type: ignore[arg-type]
        self.held = True
        return self._data

    @property
    def is_compact(self) -> bool:
        return self._data is _COMPACT

    @property
    def encoded(self) -> bytes:
        encoded = self._encoded
        if encoded is None:
            encoded = self._encoded = trimmed(orjson.dumps(self._data))
        return encoded

    def compact(self) -> None:
        """Keep only the encoding from now on, unless someone holds the dict: then the version
        stays decoded for good, so that every holder shares the one object."""
        self.encoded  # noqa: B018 (encodes it, once)
        if not self.held:
            self._data = _COMPACT

    def __repr__(self) -> str:
        return f"RecordVersion({self.key!r}, seq={self.seq})"


def format_timestamp(seconds: float) -> str:
    """ISO-8601 UTC with milliseconds, as every ``ts`` field carries it."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
