"""Reading the transaction log back for a bookmark replay (docs/protocol.md, Durability), a chunk at a time.

A replay used to read its whole range into memory before it sent anything, and every bookmark
subscription did so at once: a thousand of them over a 20 MB log grew the server by gigabytes.
Now a replay holds a ``Cursor`` (a segment and the byte its next frame starts at) and asks for
one chunk at a time: about ``CHUNK_BYTES`` of frames, or ``CHUNK_ENTRIES`` entries, decoded and
filtered (a frame is read whole, so a chunk is at least one group commit). The log store runs
``LogReader.chunk`` on its I/O thread, in turn with the writes, so a chunk never sees a frame
half written.

Damage (a frame that fails its checks) is skipped: the reader finds the next intact frame a
window at a time, reports the stretch once per server run and counts it, and reads on.

Retention removes the oldest segments first (logstore.py), and only those a snapshot covers. A
replay that is slower than retention may find its segment gone: it then goes on from the oldest
entry the log still holds, as a bookmark older than the retained log does, and says so in the
server's log.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..core.sow.txlog import HEADER_SIZE, LogEntry, Piece, announced_size, frame_at, frame_starts, read_piece

log = logging.getLogger("server.txlog")

CHUNK_BYTES = 256 * 1024  # frames read for one chunk (~1 ms to decode), unless one frame is larger
CHUNK_ENTRIES = 1000  # entries decoded for one chunk, at a frame's end
RESYNC_WINDOW = 64 * 1024  # bytes searched at a time for the next intact frame after damage


@dataclass(slots=True)
class Cursor:
    """Where one replay is in the log, and what it reads: entries with ``after_lsn < lsn <=
    until_lsn`` (and a timestamp at or after ``since``)."""

    after_lsn: int
    since: float | None
    until_lsn: int
    segment: str | None = None  # the file name of the segment read next; None: not started
    offset: int = 0  # where the next frame in it starts
    done: bool = False


class LogReader:
    """Reads chunks of the log in ``log_dir`` for cursors; ``on_damage`` counts a damaged stretch."""

    def __init__(self, log_dir: Path, on_damage: Callable[[], None]) -> None:
        self.log_dir = log_dir
        self.on_damage = on_damage
        self._damage_seen: set[tuple[str, int]] = set()

    def chunk(self, cursor: Cursor) -> list[LogEntry]:
        """The next entries of ``cursor``, in log order (perhaps none: the frames read were all
        before the bookmark), and the cursor moved past them. On the log's I/O thread."""
        entries: list[LogEntry] = []
        read = 0
        while not cursor.done and read < CHUNK_BYTES and len(entries) < CHUNK_ENTRIES:
            if cursor.segment is None:
                self._start(cursor)
                continue
            try:
                with (self.log_dir / cursor.segment).open("rb") as handle:
                    read += self._read(handle, cursor, entries)
            except FileNotFoundError:
                self._vanished(cursor)
        return entries

    def _names(self) -> list[str]:
        return sorted(path.name for path in self.log_dir.glob("*.log"))

    def _start(self, cursor: Cursor) -> None:
        """The first segment that may hold an entry after the bookmark."""
        names = self._names()
        if not names:
            cursor.done = True
            return
        cursor.segment = names[0]
        for following in names[1:]:
            if _first_lsn(following) - 1 > cursor.after_lsn:
                break
            cursor.segment = following  # every entry of the one before is before the bookmark

    def _read(self, handle: BinaryIO, cursor: Cursor, entries: list[LogEntry]) -> int:
        """Read one piece of the cursor's segment into ``entries``; the bytes it moved on."""
        size = os.fstat(handle.fileno()).st_size
        start = cursor.offset
        if start >= size:
            self._next_segment(cursor)
            return 0
        found = _piece(handle, start, size, CHUNK_ENTRIES - len(entries))
        for batch in found.payloads:
            for payload in batch:
                entry = LogEntry.from_payload(payload)
                if entry.lsn > cursor.until_lsn:
                    cursor.done = True
                    return found.end
                if entry.lsn > cursor.after_lsn and (cursor.since is None or entry.timestamp >= cursor.since):
                    entries.append(entry)
        cursor.offset = start + found.end
        if found.bad:
            following = _resync(handle, cursor.offset, size)
            self._report(cursor.segment, cursor.offset, following)
            cursor.offset = following
        moved = cursor.offset - start
        if cursor.offset >= size:
            self._next_segment(cursor)
        return moved

    def _next_segment(self, cursor: Cursor) -> None:
        """Past the end of a segment: the next one, or the end of the replay at the end of the log
        (everything up to ``until_lsn`` was on disk before the replay began)."""
        later = [name for name in self._names() if cursor.segment is not None and name > cursor.segment]
        if later:
            cursor.segment, cursor.offset = later[0], 0
        else:
            cursor.done = True

    def _vanished(self, cursor: Cursor) -> None:
        """Retention removed the segment the cursor is in (and every older one): on from the
        oldest entry kept, as for a bookmark older than the retained log."""
        missing, offset = cursor.segment, cursor.offset
        self._next_segment(cursor)
        log.warning(
            "a bookmark replay was slower than log retention: segment %s was removed before it read "
            "it past byte %d; it goes on from the oldest entry kept (%s)",
            missing,
            offset,
            "none left" if cursor.done else cursor.segment,
        )

    def _report(self, segment: str | None, start: int, end: int) -> None:
        """A damaged stretch: logged and counted once, however many replays read it."""
        if (segment, start) in self._damage_seen or segment is None:
            return
        self._damage_seen.add((segment, start))
        self.on_damage()
        log.error(
            "TRANSACTION LOG DAMAGED: %s bytes %d-%d hold no readable frame; bookmark replays skip "
            "the changes in them",
            self.log_dir / segment,
            start,
            end,
        )


def _first_lsn(name: str) -> int:
    """A segment is named after the LSN that follows the last one before it."""
    return int(Path(name).stem)


def _piece(handle: BinaryIO, start: int, size: int, max_entries: int) -> Piece:
    """The frames of a piece of the segment from ``start`` (of ``size`` bytes in all)."""
    piece = _pread(handle, start, CHUNK_BYTES)
    found = read_piece(piece, start + len(piece) >= size, max_entries)
    if found.end == 0 and found.wanted:  # one frame larger than a piece: read it whole
        if start + found.wanted > size:
            return Piece([], 0, 0, True)  # a length no frame of this segment can have: damage
        found = read_piece(_pread(handle, start, found.wanted), True, max_entries)
    return found


def _pread(handle: BinaryIO, position: int, size: int) -> bytes:
    handle.seek(position)
    return handle.read(size)


def _resync(handle: BinaryIO, position: int, size: int) -> int:
    """The first position after the damaged frame at ``position`` where an intact frame begins
    (or the segment's end), searched a window at a time; a candidate that runs past its window is
    read whole to be checked."""
    start = position + 1
    while start < size:
        window = _pread(handle, start, RESYNC_WINDOW + HEADER_SIZE)
        for candidate in frame_starts(window, 0, RESYNC_WINDOW):
            whole = announced_size(window, candidate)
            if whole is None or start + candidate + whole > size:
                continue
            if candidate + whole <= len(window):
                intact = frame_at(window, candidate) is not None
            else:
                intact = frame_at(_pread(handle, start + candidate, whole), 0) is not None
            if intact:
                return start + candidate
        start += RESYNC_WINDOW
    return size
