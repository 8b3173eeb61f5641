"""Snapshot messages (``sow`` records) as the writer drains them (``SnapshotStream``, the
outbox's entry for a queued snapshot), and what a queued snapshot counts against its socket's
queue before they exist (outbox.py counts a snapshot from the moment it is
queued, but its records are encoded only when they are written)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

import orjson

from ..protocol import wire
from ..records.version import RecordVersion, format_timestamp

if TYPE_CHECKING:
    from .delivery import QueuePolicy
    from .reader import Reader

log = logging.getLogger("server.core")

# A stream may yield this to end the current frame early (the ``bs`` batch size of a query).
FRAME_BREAK = b""
BOOKMARK = b',"bm":"'  # (its closing quote ends the message: JoinedRows)

SIZE_SAMPLE = 8  # records encoded to estimate what a whole snapshot will come to
UNKNOWN_SIZE = 256  # the estimate of a record that cannot be encoded


def counted_against(
    max_messages: int, max_bytes: int, count: int, size: int, opening: bytes, closing: bytes
) -> tuple[int, int]:
    """What a snapshot of ``count`` messages and ``size`` bytes (its ``opening`` and ``closing``
    included) counts against a queue's bounds: its messages, and the bytes each. Its records
    count at most half of each bound, its opening and closing messages beside them, and the
    whole never more than the bounds, so that it fits an empty queue."""
    framing = (opening != b"") + (closing != b"")
    framing_size = len(opening) + len(closing) + framing
    counted = min(count, max_messages // 2 + framing, max_messages)
    bytes_counted = min(size, max_bytes // 2 + framing_size, max_bytes)
    return counted, bytes_counted // counted if counted else 0  # (rounded down: within bounds)


class SnapshotStream:
    """A lazy snapshot, and what it still counts against the bounds: ``messages`` records (each
    ``unit`` bytes), the first to be written; ``records`` are the (topic, key) it sends;
    ``whole`` the subscription whose whole view it is, if any (index.py, ``passed``)."""

    __slots__ = (
        "closing", "head", "head_count", "messages", "opening", "policy", "records", "source", "unit",
        "whole",
    )  # fmt: skip

    def __init__(
        self,
        source: Iterator[bytes],
        messages: int,
        unit: int,
        records: Iterable[tuple[str, str]],
        whole: Reader | None = None,
        opening: bytes = b"",
        closing: bytes = b"",
        policy: QueuePolicy | None = None,
    ) -> None:
        self.source = source
        self.policy = policy  # the topic whose bytes these are (None: an ack's, say)
        self.head: bytes | None = None
        self.head_count = 1  # the messages ``head`` holds (JoinedRows: several)
        self.messages = messages
        self.unit = unit
        self.records = records
        self.whole = whole
        # Written before and after the source (a snapshot's group_begin and group_end): one
        # item of the queue, so that nothing queued while it is (an ``unsubscribed``, say)
        # can come between them.
        self.opening = opening
        self.closing = closing

    def peek(self, room: int) -> bytes | None:
        """The next bytes to write (taken off by setting ``head`` to None): one message, a
        ``FRAME_BREAK``, or from ``JoinedRows`` as many messages as ``room`` bytes hold."""
        source = self.source
        if self.head is None:
            if self.opening:
                self.head, self.opening, self.head_count = self.opening, b"", 1
            elif isinstance(source, JoinedRows):
                self.head = source.take(room)
                self.head_count = source.taken
            else:
                self.head = next(source, None)
            if self.head is None and self.closing:
                self.head, self.closing, self.head_count = self.closing, b"", 1
        elif isinstance(source, Rerendered):
            # Looked at before, left for the next frame: written as it is when it is written.
            self.head = source.again()
        return self.head

    @property
    def size(self) -> int:
        return self.messages * self.unit


class Rerendered(Iterator[bytes]):
    """A stream of one message rendered again whenever the writer looks at it, so that what is
    written is what is true then, even when a frame was cut right before it (a count message:
    counts.py). ``next`` gives it once; ``again`` renders it anew (None: nothing to say)."""

    __slots__ = ()

    def again(self) -> bytes | None:
        raise NotImplementedError


class JoinedRows(Iterator[bytes]):
    """The messages of a snapshot of whole records, a frame's worth at a time: each record's
    stored encoding and key (and its ``ts`` and ``bm`` when the view carries them), joined in C
    between copies of the subscription's head. A snapshot is the same bytes for every socket
    but that head, so nothing is encoded per record and no object is made per message
    (``record_message`` makes five). For views that show each record as it is stored: no
    select list, no position (those go through ``record_message``).

    ``take(room)`` gives the next messages, comma-joined, as many as fit in ``room`` bytes (at
    least one), ``FRAME_BREAK`` where a query's batch size ends a frame, or None at the end;
    ``taken`` is how many messages that was."""

    __slots__ = (
        "_batch",
        "_between",
        "_bookmarks",
        "_break",
        "_close",
        "_end",
        "_next",
        "_open",
        "_show_key",
        "_timestamps",
        "taken",
        "versions",
    )

    def __init__(
        self,
        head: bytes,
        versions: list[RecordVersion],
        show_key: bool,
        batch: int | None,
        timestamps: bool = False,
        bookmarks: bool = False,
    ) -> None:
        self.versions = versions
        self._show_key = show_key
        self._timestamps = timestamps
        self._bookmarks = bookmarks
        # head ,"k":"KEY","data":DATA ,"ts":"TS" ,"bm":"SEQ" }: the quotes around the key and
        # the bookmark are in the separators; the fields in record_body's order.
        self._open = head + (b',"k":"' if show_key else b',"data":')
        self._close = b'","data":' if show_key else b""
        self._end = b'"}' if bookmarks else b"}"
        self._between = self._end + b"," + self._open
        self._batch = batch or 0
        self._break = False
        self._next = 0
        self.taken = 0

    def __next__(self) -> bytes:
        taken = self.take(0)
        if taken is None:
            raise StopIteration
        return taken

    def take(self, room: int) -> bytes | None:
        versions = self.versions
        start = self._next
        end = len(versions)
        self.taken = 0
        if start >= end:
            return None
        batch = self._batch
        if batch:
            if self._break:
                self._break = False
                return FRAME_BREAK
            end = min(end, (start // batch + 1) * batch)
        parts: list[bytes] = []
        show_key, timestamps, bookmarks = self._show_key, self._timestamps, self._bookmarks
        close, between = self._close, self._between
        fixed = len(between) + len(close)
        size = len(self._open) - len(between) + len(self._end)  # (the last message's end)
        index = start
        count = 0
        written = stamp = mark = b""
        while index < end:
            version = versions[index]
            index += 1
            try:
                encoded = version.encoded
            except orjson.JSONEncodeError as error:
                log.warning("a snapshot record could not be encoded and was left out: %s", error)
                continue
            length = fixed + len(encoded)
            if show_key:
                key = version.key
                # A SowKey is hex; a key a publisher chose may need escaping.
                written = key.encode() if key.isalnum() else orjson.dumps(key)[1:-1]
                length += len(written)
            if timestamps:
                stamp = b',"ts":"%b"' % format_timestamp(version.timestamp).encode()
                length += len(stamp)
            if bookmarks:
                mark = str(version.seq).encode()
                length += len(BOOKMARK) + len(mark)
            size += length
            if parts and size > room:
                index -= 1  # for the next piece
                break
            parts.append(between)
            if show_key:
                parts.append(written)
                parts.append(close)
            parts.append(encoded)
            if timestamps:
                parts.append(stamp)
            if bookmarks:
                parts.append(BOOKMARK)
                parts.append(mark)
            count += 1
        self.taken = count
        self._next = index
        self._break = bool(batch) and index == end and index < len(versions)
        if not parts:
            return self.take(room)  # every record of the batch was left out
        parts[0] = self._open
        parts.append(self._end)
        return b"".join(parts)


class SnapshotRecords:
    """The (topic, key) of each record a snapshot sends, read as often as needed (the outbox
    reads it when the snapshot is queued and again when the queue is conflated) without a
    list of them all."""

    __slots__ = ("topic", "versions")

    def __init__(self, topic: str, versions: Sequence[RecordVersion]) -> None:
        self.topic = topic
        self.versions = versions

    def __iter__(self) -> Iterator[tuple[str, str]]:
        topic = self.topic
        return ((topic, version.key) for version in self.versions)


def estimated_size(head: bytes, versions: Sequence[RecordVersion]) -> int:
    """About the bytes ``versions`` will take as snapshot messages: a few of them encoded, the
    rest taken to be like them."""
    if not versions:
        return 0
    step = max(1, len(versions) // SIZE_SAMPLE)
    sample = versions[::step][:SIZE_SAMPLE]
    sampled = sum(_size(version) for version in sample)
    return len(versions) * (len(head) + 16) + sampled * len(versions) // len(sample)


def _size(version: RecordVersion) -> int:
    try:
        return len(version.encoded) + len(version.key)
    except orjson.JSONEncodeError:
        return UNKNOWN_SIZE


def record_message(head: bytes, render: Callable[[], bytes]) -> bytes | None:
    """One snapshot message (its body from the one renderer, ``Subscription.full_body``), or None
    for a record that cannot be encoded (nested deeper than the encoder allows): it is left out
    rather than stop the socket's writer."""
    try:
        return wire.join(head, render())
    except orjson.JSONEncodeError as error:
        log.warning("a snapshot record could not be encoded and was left out: %s", error)
        return None
