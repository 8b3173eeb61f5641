"""Publish stores: the publishes a publisher has sent and the server has not yet persisted.

``MemoryPublishStore`` survives reconnects; ``FilePublishStore`` also survives the publisher's own
restart (an append-only file of sent messages and acknowledged sequences, compacted when it has
no unacknowledged publish left).
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import orjson

log = logging.getLogger("server.client")


class PublishStore(Protocol):
    def add(self, seq: int, message: bytes) -> None:
        """Keep ``message`` under ``seq``, which is greater than every sequence added before."""

    def sync(self) -> None:
        """Make every ``add`` so far durable (called before the messages are sent)."""

    def discard_through(self, seq: int) -> None:
        """Forget every publish up to ``seq`` (the server has it on disk)."""

    def pending(self) -> Iterator[tuple[int, bytes]]:
        """The publishes kept, in sequence order."""

    @property
    def last_seq(self) -> int: ...

    def __len__(self) -> int: ...


class MemoryPublishStore:
    """Pending publishes in a deque, oldest first: sequences are added in increasing order, so an
    ack (``discard_through``) pops from the left what it covers and costs what it discards, however
    many publishes are still pending behind it."""

    def __init__(self) -> None:
        self._messages: deque[tuple[int, bytes]] = deque()
        self._last_seq = 0

    @property
    def last_seq(self) -> int:
        return self._last_seq

    def add(self, seq: int, message: bytes) -> None:
        if seq <= self._last_seq:
            raise ValueError(f"publish {seq} added after {self._last_seq}: sequences only increase")
        self._messages.append((seq, message))
        self._last_seq = seq

    def sync(self) -> None:
        return None

    def discard_through(self, seq: int) -> None:
        self._last_seq = max(self._last_seq, seq)
        messages = self._messages
        while messages and messages[0][0] <= seq:
            messages.popleft()

    def pending(self) -> Iterator[tuple[int, bytes]]:
        """The pending publishes in sequence order (a copy: the store may change while it is read)."""
        return iter(list(self._messages))

    def __len__(self) -> int:
        return len(self._messages)


class FilePublishStore(MemoryPublishStore):
    """Lines of JSON: ``[seq, message]`` for a publish sent, ``[seq]`` once everything through it
    is persisted."""

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        if self.path.exists():
            good = 0
            for line in self.path.read_bytes().splitlines(keepends=True):
                try:
                    item = orjson.loads(line)
                except orjson.JSONDecodeError:
                    break  # a torn last line: the publish it held was never sent
                if not line.endswith(b"\n"):
                    break
                good += len(line)
                if len(item) == 2:
                    if item[0] <= self.last_seq:
                        # From when a store took sequences in any order (a publisher that
                        # published before it connected numbered from 1 again): the server
                        # takes a client name's sequences in increasing order only.
                        log.warning("%s: publish %d after %d skipped", self.path, item[0], self.last_seq)
                        continue
                    super().add(item[0], item[1].encode())
                else:
                    super().discard_through(item[0])
            with self.path.open("r+b") as handle:
                handle.truncate(good)  # later writes must not follow a torn line
        self._file = self.path.open("ab")

    def add(self, seq: int, message: bytes) -> None:
        super().add(seq, message)
        self._file.write(orjson.dumps([seq, message.decode()]) + b"\n")

    def sync(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def discard_through(self, seq: int) -> None:
        super().discard_through(seq)
        if len(self):
            self._file.write(orjson.dumps([seq]) + b"\n")
            self._file.flush()
            return
        # Nothing left to re-send: start the file again from the last sequence alone.
        self._file.close()
        temporary = self.path.with_suffix(".tmp")
        temporary.write_bytes(orjson.dumps([self.last_seq]) + b"\n")
        temporary.replace(self.path)
        self._file = self.path.open("ab")

    def close(self) -> None:
        self._file.close()
