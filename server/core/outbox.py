"""The bounded outbound queue of one socket.

Encoded messages wait here until the socket's writer takes them as array frames. The queue is
bounded in bytes and in messages; a push that does not fit is refused and the caller decides
what that means (for now the socket is closed with 4001). A snapshot is queued as a lazy stream
of messages: it holds references to immutable record versions and is encoded as the writer
drains it, so a large snapshot does not count against the bound and cannot overflow it.

Consecutive messages are kept in one batch (a list and its byte count) so that the common case,
everything queued fits one frame, is a single ``join``.
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


class _Batch:
    """Consecutive queued messages as one list of parts.

    A part is a whole message, or a delivery head (``wire.head``: it ends with ``]``, never with
    ``}``) immediately followed by its body. Joining the parts with commas writes every message.
    """

    __slots__ = ("parts", "size")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0  # bytes of the parts, and of the commas that will separate them

    def messages(self) -> list[bytes]:
        out: list[bytes] = []
        parts = self.parts
        index = 0
        while index < len(parts):
            part = parts[index]
            if part[-1] == _HEAD_END:
                out.append(part + b"," + parts[index + 1])
                index += 2
            else:
                out.append(part)
                index += 1
        return out


_HEAD_END = ord("]")


class Outbox:
    def __init__(self, max_bytes: int, max_messages: int) -> None:
        self.max_bytes = max_bytes
        self.max_messages = max_messages
        self._entries: deque[_Batch | _Stream] = deque()
        self._tail: _Batch | None = None
        self.queued_bytes = 0
        self.queued_messages = 0

    def __bool__(self) -> bool:
        return bool(self._entries)

    def _batch(self) -> _Batch:
        tail = self._tail
        if tail is None:
            tail = self._tail = _Batch()
            self._entries.append(tail)
        return tail

    def push(self, message: bytes) -> int:
        """Queue one encoded message; the number now queued, or 0 (nothing queued) when it does not fit."""
        size = len(message) + 1
        if self.queued_messages >= self.max_messages or self.queued_bytes + size > self.max_bytes:
            return 0
        tail = self._tail or self._batch()
        tail.parts.append(message)
        tail.size += size
        self.queued_bytes += size
        self.queued_messages += 1
        return self.queued_messages

    def push_pair(self, head: bytes, body: bytes) -> int:
        """Queue the message ``head`` + ``,`` + ``body`` without building it (see ``wire.head``)."""
        size = len(head) + len(body) + 2
        if self.queued_messages >= self.max_messages or self.queued_bytes + size > self.max_bytes:
            return 0
        tail = self._tail or self._batch()
        parts = tail.parts
        parts.append(head)
        parts.append(body)
        tail.size += size
        self.queued_bytes += size
        self.queued_messages += 1
        return self.queued_messages

    def push_pairs(self, parts: list[bytes], count: int, size: int) -> int:
        """Queue ``count`` messages given as alternating heads and bodies, ``size`` bytes in all.

        All or nothing: 0 when they do not all fit (the caller then pushes them one by one).
        """
        if self.queued_messages + count > self.max_messages or self.queued_bytes + size > self.max_bytes:
            return 0
        tail = self._tail or self._batch()
        tail.parts.extend(parts)
        tail.size += size
        self.queued_bytes += size
        self.queued_messages += count
        return self.queued_messages

    def push_stream(self, messages: Iterator[bytes]) -> None:
        self._entries.append(_Stream(messages))
        self._tail = None

    def close(self) -> None:
        """Drop everything queued and refuse every later push."""
        self._entries.clear()
        self._tail = None
        self.queued_bytes = 0
        self.queued_messages = 0
        self.max_messages = 0

    def take_frame(self, max_frame_bytes: int) -> bytes | None:
        """The next array frame: as many queued messages as fit in ``max_frame_bytes`` (at least one)."""
        entries = self._entries
        if len(entries) == 1:
            entry = entries[0]
            if isinstance(entry, _Batch) and entry.size + 1 <= max_frame_bytes:
                # Fast path: everything queued is one batch that makes one frame.
                self._pop_batch(entry, self.queued_messages, entry.size)
                return b"[" + b",".join(entry.parts) + b"]"
        parts: list[bytes] = []
        size = 1
        while entries:
            entry = entries[0]
            if isinstance(entry, _Batch):
                messages = entry.messages()
                taken = taken_bytes = 0
                for message in messages:
                    if (parts or taken) and size + len(message) + 1 > max_frame_bytes:
                        break
                    size += len(message) + 1
                    taken_bytes += len(message) + 1
                    taken += 1
                parts.extend(messages[:taken])
                if taken < len(messages):
                    rest = messages[taken:]
                    entry.parts = rest
                    entry.size -= taken_bytes
                    self.queued_bytes -= taken_bytes
                    self.queued_messages -= taken
                    break
                self._pop_batch(entry, taken, taken_bytes)
                continue
            streamed = entry.peek()
            if streamed is None:
                entries.popleft()
                continue
            if streamed == FRAME_BREAK:
                entry.head = None
                if parts:
                    break
                continue
            if parts and size + len(streamed) + 1 > max_frame_bytes:
                break
            entry.head = None
            parts.append(streamed)
            size += len(streamed) + 1
        if not parts:
            return None
        return b"[" + b",".join(parts) + b"]"

    def _pop_batch(self, batch: _Batch, count: int, size: int) -> None:
        self._entries.popleft()
        if batch is self._tail:
            self._tail = None
        self.queued_bytes -= size
        self.queued_messages -= count
