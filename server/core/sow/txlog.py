"""The transaction log's format: what one entry holds and how it is framed on disk.

Every frame is ``length (4 bytes, big-endian) | CRC-32 of the payload (4 bytes) | payload``,
where the payload is JSON. A torn or corrupted frame fails its length or CRC check. In the log,
one frame holds one group commit: a JSON array of entries, written and synced together, so a torn
LAST frame is a write that was never acknowledged as persisted, while a bad frame anywhere else is
damage to acknowledged data: ``scan_segment`` skips it and finds every intact frame after it.

LogEntry payloads: ``[lsn, op, topic, key, data, client_name, s, timestamp, expires_at]`` with
``op`` one of ``p`` (a publish or delta publish: ``data`` is the stored, merged record), ``d`` (a
delete), ``x`` (an expiry; in a cluster's shared log ``data`` is the LSN of the version that
expires, and the entry changes nothing once that version is gone), ``n`` (a durable command that
changed nothing but carried ``s``) and ``o`` (with ``[auth]``: ``client_name`` now belongs to
the user ``data``; ``topic`` and ``key`` are empty). Readers skip ops they do not know, so logs
written before ``o`` existed read the same. The LSN (log sequence number) is the record
version's apply sequence: unique, increasing across restarts (each start claims a new epoch: see
broker/bookmarks.py), and what a bookmark names.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

PUBLISH, DELETE, EXPIRE, SEQUENCE = "p", "d", "x", "n"  # n: only a publisher sequence to remember
OWNER = "o"  # a client name's owner (with [auth]): it goes where the name's sequences go
# A transaction (docs/protocol.md, Transactions): one entry, one LSN; its data is the list of its
# changes, each ``[op, topic, key, data, expires_at]`` (``transaction_changes`` makes them entries
# again).
TX = "t"


def changed_topics(entry: LogEntry) -> Iterable[str]:
    """The topics whose records ``entry`` changes (none for a sequence or an owner)."""
    if entry.op == TX:
        return {change[1] for change in entry.data}
    return (entry.topic,) if entry.op in (PUBLISH, DELETE, EXPIRE) else ()


_HEADER = struct.Struct(">II")
HEADER_SIZE = _HEADER.size
MAX_FRAME = 256 * 1024 * 1024


@dataclass(slots=True)
class LogEntry:
    lsn: int
    op: str
    topic: str
    key: str
    data: Any
    client_name: str | None
    seq: int | None
    timestamp: float
    expires_at: float | None
    # ``data`` encoded, when the publish that made the entry has it (never part of the payload).
    encoded: bytes | None = None

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
    def from_payload(cls, payload: Any) -> LogEntry:
        lsn, op, topic, key, data, client_name, seq, timestamp, expires_at = payload
        return cls(lsn, op, topic, key, data, client_name, seq, timestamp, expires_at)


def transaction_changes(entry: LogEntry) -> list[LogEntry]:
    """The changes of a transaction entry, as entries of its LSN, time and (no) sequence."""
    return [
        LogEntry(entry.lsn, op, topic, key, data, None, None, entry.timestamp, expires_at)
        for op, topic, key, data, expires_at in entry.data
    ]


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


# -- reading a log segment that may be damaged ----------------------------------------------
#
# ``scan`` above stops at the first bad frame, which is right for a snapshot (an incomplete one is
# not used). A log segment is read on past damage instead: every frame after a damaged one was
# acknowledged as persisted too, so losing it with the damaged one would lose acked data.


@dataclass(frozen=True, slots=True)
class Damage:
    """Bytes ``start`` to ``end`` (exclusive) of a segment hold no readable frame."""

    start: int
    end: int


@dataclass(slots=True)
class SegmentScan:
    """What a reader found in a log segment: every intact frame, the damaged stretches between them,
    and a torn last frame (a write a crash cut short, so never acknowledged)."""

    frames: list[tuple[int, int, Any]]  # (start, end, payload) of each intact frame, in order
    damaged: list[Damage]
    torn_at: int | None  # where the torn last frame starts; the segment's good part ends there
    size: int

    @property
    def payloads(self) -> list[Any]:
        return [payload for _, _, payload in self.frames]


_OPEN = ord("[")  # every frame's payload is a JSON array (a group commit, or a snapshot frame)


def scan_segment(buffer: bytes, last: bool = True) -> SegmentScan:
    """Every intact frame of ``buffer``, resynchronising after damage. Only the end of the ``last``
    segment (the one being written when the server stopped) can hold a torn frame."""
    found = SegmentScan([], [], None, len(buffer))
    position = 0
    while position < found.size:
        read = frame_at(buffer, position)
        if read is not None:
            found.frames.append((position, *read))
            position = read[0]
            continue
        following = _next_frame(buffer, position + 1)
        if following is None:
            if last and _torn(buffer, position):
                found.torn_at = position
            else:
                found.damaged.append(Damage(position, found.size))
            break
        found.damaged.append(Damage(position, following))
        position = following
    return found


def frame_at(buffer: bytes, position: int) -> tuple[int, Any] | None:
    """The end and payload of an intact frame starting at ``position``, or None."""
    if len(buffer) - position < HEADER_SIZE:
        return None
    length, crc = _HEADER.unpack_from(buffer, position)
    start = position + HEADER_SIZE
    end = start + length
    # Cheap tests first: resynchronisation tries this at many positions inside damaged bytes.
    if length == 0 or length > MAX_FRAME or end > len(buffer) or buffer[start] != _OPEN:
        return None
    payload = memoryview(buffer)[start:end]
    if zlib.crc32(payload) != crc:
        return None
    try:
        return end, orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None


def _next_frame(buffer: bytes, start: int) -> int | None:
    """The first position at or after ``start`` where an intact frame begins. The damaged frame's
    length field is not trusted (it may be the damaged part): every position whose payload would
    open with ``[`` is tried. Frames cannot hide inside a payload: JSON text has no NUL byte, and
    every header of a frame under 16 MiB has one."""
    starts = frame_starts(buffer, start, len(buffer))
    return next((at for at in starts if frame_at(buffer, at) is not None), None)


def frame_starts(buffer: bytes, start: int, stop: int) -> Iterator[int]:
    """The positions from ``start`` to before ``stop`` where a frame may begin: its header is in
    ``buffer`` and its payload would open with ``[``."""
    candidate = buffer.find(b"[", start + HEADER_SIZE)
    while candidate != -1 and candidate - HEADER_SIZE < stop:
        yield candidate - HEADER_SIZE
        candidate = buffer.find(b"[", candidate + 1)


def announced_size(buffer: bytes, position: int) -> int | None:
    """The size (header and payload) of the frame whose header is at ``position``, when the header
    is whole and could be a frame's; None when it cannot."""
    if len(buffer) - position < HEADER_SIZE:
        return None
    length: int = _HEADER.unpack_from(buffer, position)[0]
    start = position + HEADER_SIZE
    if length == 0 or length > MAX_FRAME or (start < len(buffer) and buffer[start] != _OPEN):
        return None
    return HEADER_SIZE + length


# -- reading a segment a piece at a time (bookmark replays: logreader.py) --------------------


@dataclass(slots=True)
class Piece:
    """The intact frames at the start of a piece of a segment, and where and why reading stopped."""

    payloads: list[Any]  # each a group commit: a list of entry payloads
    end: int  # where the first frame not read begins, in the piece
    wanted: int  # the frame at ``end`` runs past the piece: its whole size (0: it does not)
    bad: bool  # the frame at ``end`` is damaged (resynchronise: ``frame_starts``, ``frame_at``)


def read_piece(buffer: bytes, complete: bool, max_entries: int) -> Piece:
    """The frames from the start of ``buffer`` until its end, ``max_entries`` entries (after the
    frame that reaches it), a frame that runs past the buffer (when the buffer is not ``complete``,
    i.e. the rest of the segment follows; at the end a frame cut short is damage) or a damaged one."""
    found = Piece([], 0, 0, False)
    entries = 0
    while found.end < len(buffer) and entries < max_entries:
        read = frame_at(buffer, found.end)
        if read is not None:
            found.payloads.append(read[1])
            entries += len(read[1])
            found.end = read[0]
            continue
        size = announced_size(buffer, found.end) if len(buffer) - found.end >= HEADER_SIZE else HEADER_SIZE
        if not complete and size is not None and found.end + size > len(buffer):
            found.wanted = size
        else:
            found.bad = True
        break
    return found


def _torn(buffer: bytes, position: int) -> bool:
    """Whether the bytes from ``position`` to the end are a frame a crash cut short: a header cut
    short, a frame announced longer than what follows, or zeros (space the file system allotted but
    the write never filled). A complete frame whose length field alone was damaged is damage: a
    prefix of what follows its header still has its CRC."""
    rest = memoryview(buffer)[position:]
    if len(rest) < HEADER_SIZE or not buffer[position:].strip(b"\0"):
        return True
    length, crc = _HEADER.unpack_from(rest)
    if _ends_before_the_end(buffer, position + HEADER_SIZE, crc):
        return False
    starts_well = len(rest) == HEADER_SIZE or rest[HEADER_SIZE] == _OPEN
    return HEADER_SIZE + length > len(rest) and length <= MAX_FRAME and starts_well


def _ends_before_the_end(buffer: bytes, start: int, crc: int) -> bool:
    """Whether some payload from ``start`` (a JSON array, so ending with ``]``) has the CRC ``crc``:
    the CRC is computed on, one ``]`` at a time, so the search costs one pass."""
    view = memoryview(buffer)
    running, done = 0, start
    close = buffer.find(b"]", done)
    while close != -1:
        running = zlib.crc32(view[done : close + 1], running)
        if running == crc:
            return True
        done = close + 1
        close = buffer.find(b"]", done)
    return False
