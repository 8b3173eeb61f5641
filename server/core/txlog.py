"""The transaction log's format: what one entry holds and how it is framed on disk.

Every frame is ``length (4 bytes, big-endian) | CRC-32 of the payload (4 bytes) | payload``,
where the payload is JSON. A torn or corrupted frame fails its length or CRC check, so a reader
finds exactly where the good part of a file ends. In the log, one frame holds one group commit:
a JSON array of entries, written and synced together, so a torn frame is a write that was never
acknowledged as persisted.

Entry payloads: ``[lsn, op, topic, key, data, client_name, s, timestamp, expires_at]`` with
``op`` one of ``p`` (a publish or delta publish: ``data`` is the stored, merged record), ``d`` (a
delete), ``x`` (an expiry), ``n`` (a durable command that changed nothing but carried ``s``) and
``o`` (with ``[auth]``: ``client_name`` now belongs to the user ``data``; ``topic`` and ``key`` are
empty). Readers skip ops they do not know, so logs written before ``o`` existed read the same.
The LSN (log sequence number) is the record version's apply sequence: unique, increasing
across restarts, and what a bookmark names.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any

import orjson

PUBLISH, DELETE, EXPIRE, SEQUENCE = "p", "d", "x", "n"  # n: only a publisher sequence to remember
OWNER = "o"  # a client name's owner (with [auth]): it goes where the name's sequences go

_HEADER = struct.Struct(">II")
HEADER_SIZE = _HEADER.size
MAX_FRAME = 256 * 1024 * 1024


@dataclass(slots=True)
class Entry:
    lsn: int
    op: str
    topic: str
    key: str
    data: Any
    client_name: str | None
    seq: int | None
    timestamp: float
    expires_at: float | None

    def encode(self) -> bytes:
        """The entry's payload (framed later, with the rest of its group commit)."""
        return encode_entry(
            self.lsn,
            self.op,
            self.topic,
            self.key,
            self.data,
            self.client_name,
            self.seq,
            self.timestamp,
            self.expires_at,
        )

    @classmethod
    def from_payload(cls, payload: Any) -> Entry:
        lsn, op, topic, key, data, client_name, seq, timestamp, expires_at = payload
        return cls(lsn, op, topic, key, data, client_name, seq, timestamp, expires_at)


def encode_entry(
    lsn: int,
    op: str,
    topic: str,
    key: str,
    data: Any,
    client_name: str | None,
    seq: int | None,
    timestamp: float,
    expires_at: float | None,
) -> bytes:
    return orjson.dumps([lsn, op, topic, key, data, client_name, seq, timestamp, expires_at])


def frame(value: Any) -> bytes:
    return frame_payload(orjson.dumps(value))


def frame_payload(payload: bytes) -> bytes:
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def frame_entries(payloads: list[bytes]) -> bytes:
    """One group commit: the entries' payloads as one JSON array in one frame."""
    return frame_payload(b"[" + b",".join(payloads) + b"]")


def entries_in(frames: list[Any]) -> list[Any]:
    """The entry payloads of log frames, in order."""
    return [entry for batch in frames for entry in batch]


@dataclass(slots=True)
class Scan:
    """What a reader found in a buffer: the payloads of the good frames, and where they end."""

    payloads: list[Any]
    good_bytes: int
    problem: str | None  # why reading stopped before the end, or None


def scan(buffer: bytes | memoryview, offset: int = 0) -> Scan:
    """Read frames from ``buffer`` until its end or the first frame that is torn or corrupt."""
    view = memoryview(buffer)
    payloads: list[Any] = []
    position, size = offset, len(view)
    while position < size:
        if size - position < HEADER_SIZE:
            return Scan(payloads, position, f"torn frame header at byte {position}")
        length, crc = _HEADER.unpack_from(view, position)
        start, end = position + HEADER_SIZE, position + HEADER_SIZE + length
        if length > MAX_FRAME or end > size:
            return Scan(payloads, position, f"torn frame at byte {position} ({length} bytes announced)")
        payload = view[start:end]
        if zlib.crc32(payload) != crc:
            return Scan(payloads, position, f"checksum mismatch at byte {position}")
        try:
            payloads.append(orjson.loads(payload))
        except orjson.JSONDecodeError:
            return Scan(payloads, position, f"unreadable frame at byte {position}")
        position = end
    return Scan(payloads, position, None)
