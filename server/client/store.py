"""Publish stores: the publishes a publisher has sent and the server has not yet persisted.

``MemoryPublishStore`` survives reconnects; ``FilePublishStore`` also survives the publisher's own
restart (an append-only file of sent messages and acknowledged sequences, compacted when it has
no unacknowledged publish left).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import orjson


class PublishStore(Protocol):
    def add(self, seq: int, message: bytes) -> None: ...

    def sync(self) -> None:
        """Make every ``add`` so far durable (called before the messages are sent)."""

    def discard_through(self, seq: int) -> None: ...

    def pending(self) -> Iterator[tuple[int, bytes]]: ...

    @property
    def last_seq(self) -> int: ...

    def __len__(self) -> int: ...


class MemoryPublishStore:
    def __init__(self) -> None:
        self._messages: dict[int, bytes] = {}
        self._last_seq = 0

    @property
    def last_seq(self) -> int:
        return self._last_seq

    def add(self, seq: int, message: bytes) -> None:
        self._messages[seq] = message
        self._last_seq = max(self._last_seq, seq)

    def sync(self) -> None:
        return None

    def discard_through(self, seq: int) -> None:
        self._last_seq = max(self._last_seq, seq)
        if not self._messages:
            return
        for done in [s for s in self._messages if s <= seq]:
            del self._messages[done]

    def pending(self) -> Iterator[tuple[int, bytes]]:
        return iter(sorted(self._messages.items()))

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
