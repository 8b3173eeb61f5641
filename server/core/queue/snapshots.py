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
from ..records.version import RecordVersion

if TYPE_CHECKING:
    from .reader import Reader

log = logging.getLogger("server.core")

SIZE_SAMPLE = 8  # records encoded to estimate what a whole snapshot will come to
UNKNOWN_SIZE = 256  # the estimate of a record that cannot be encoded


class SnapshotStream:
    """A lazy snapshot, and what it still counts against the bounds: ``messages`` records (each
    ``unit`` bytes), the first to be written; ``records`` are the (topic, key) it sends;
    ``whole`` the subscription whose whole view it is, if any (index.py, ``passed``)."""

    __slots__ = ("head", "messages", "records", "source", "unit", "whole")

    def __init__(
        self,
        source: Iterator[bytes],
        messages: int,
        unit: int,
        records: Iterable[tuple[str, str]],
        whole: Reader | None = None,
    ) -> None:
        self.source = source
        self.head: bytes | None = None
        self.messages = messages
        self.unit = unit
        self.records = records
        self.whole = whole

    def peek(self) -> bytes | None:
        if self.head is None:
            self.head = next(self.source, None)
        elif isinstance(self.source, Rerendered):
            # Looked at before, left for the next frame: written as it is when it is written.
            self.head = self.source.again()
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
