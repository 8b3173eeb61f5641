"""The bounded outbound queue of one socket.

Encoded messages wait here until the socket's writer takes them as array frames. The queue is
bounded in bytes and in messages; a push that does not fit is refused and the caller decides
what that means (for now the socket is closed with 4001). A snapshot is queued as a lazy stream
of messages: it holds references to immutable record versions and is encoded as the writer
drains it, so a large snapshot does not count against the bound and cannot overflow it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

# A stream may yield this to end the current frame early (the ``bs`` batch size of a query).
FRAME_BREAK = b""


class _Stream:
    __slots__ = ("head", "source")

    def __init__(self, source: Iterator[bytes]) -> None:
        self.source = source
        self.head: bytes | None = None

    def peek(self) -> bytes | None:
        if self.head is None:
            self.head = next(self.source, None)
        return self.head


class Outbox:
    def __init__(self, max_bytes: int, max_messages: int) -> None:
        self.max_bytes = max_bytes
        self.max_messages = max_messages
        self._items: deque[bytes | _Stream] = deque()
        self.queued_bytes = 0
        self.queued_messages = 0

    def __bool__(self) -> bool:
        return bool(self._items)

    def fits(self, size: int) -> bool:
        return self.queued_messages + 1 <= self.max_messages and self.queued_bytes + size <= self.max_bytes

    def push(self, message: bytes) -> bool:
        """Queue one encoded message; False (and nothing queued) when it does not fit."""
        size = len(message)
        if not self.fits(size):
            return False
        self._items.append(message)
        self.queued_bytes += size
        self.queued_messages += 1
        return True

    def push_stream(self, messages: Iterator[bytes]) -> None:
        self._items.append(_Stream(messages))

    def clear(self) -> None:
        self._items.clear()
        self.queued_bytes = 0
        self.queued_messages = 0

    def take_frame(self, max_frame_bytes: int) -> bytes | None:
        """The next array frame: as many queued messages as fit in ``max_frame_bytes`` (at least one)."""
        parts: list[bytes] = []
        size = 2
        items = self._items
        while items:
            item = items[0]
            if isinstance(item, _Stream):
                message = item.peek()
                if message is None:
                    items.popleft()
                    continue
                if message is FRAME_BREAK or message == FRAME_BREAK:
                    item.head = None
                    if parts:
                        break
                    continue
                if parts and size + len(message) + 1 > max_frame_bytes:
                    break
                item.head = None
            else:
                message = item
                if parts and size + len(message) + 1 > max_frame_bytes:
                    break
                items.popleft()
                self.queued_bytes -= len(message)
                self.queued_messages -= 1
            parts.append(message)
            size += len(message) + 1
        if not parts:
            return None
        return b"[" + b",".join(parts) + b"]"
