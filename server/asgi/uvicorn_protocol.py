"""The one module that reaches into uvicorn's internals: an HTTP protocol that bounds the
connections still waiting for a request head, in time, in size and in number.

uvicorn bounds none of these: ``timeout_keep_alive`` is armed only after a response,
``limit_concurrency`` is checked only once a request head is complete (and it counts WebSockets
too), ``backlog`` is the kernel's accept queue, which the event loop empties at once, and httptools
takes headers of any size. So a client that connects and sends half a request (or nothing) was held
forever. ``HttpToolsProtocol`` subclassed here:

- starts waiting for a head when the connection is made and again after each response, and stops
  when the head is complete (or upgrades to a WebSocket): a connection that takes longer than
  ``REQUEST_HEAD_TIMEOUT_S`` is closed, however slowly it trickles bytes in;
- answers a head larger than ``MAX_HEAD_BYTES`` with 431 and closes;
- keeps the waiting connections in arrival order and, past ``MAX_PENDING``, closes the oldest: a
  flood of half-open connections holds at most that many, and a real client, whose head arrives at
  once, still gets through.

``tests/asgi/test_uvicorn_protocol.py`` checks the uvicorn hooks used here and fails if they change.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("server.asgi")

REQUEST_HEAD_TIMEOUT_S = 5.0
MAX_HEAD_BYTES = 64 * 1024
MAX_PENDING = 256
_WARN_EVERY_S = 60.0  # at most one warning a minute while the cap is being hit

_TOO_LARGE_BODY = b"request head too large\n"
_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(_TOO_LARGE_BODY), _TOO_LARGE_BODY)
)


class PendingHeads:
    """The connections waiting for a request head, oldest first, each with its deadline."""

    def __init__(self, timeout_s: float, limit: int) -> None:
        self.timeout_s = timeout_s
        self.limit = limit
        self.waiting: dict[GuardedHttpProtocol, asyncio.TimerHandle] = {}
        self.evicted = 0
        self._warned_at = float("-inf")

    def wait(self, protocol: GuardedHttpProtocol) -> None:
        if protocol in self.waiting:
            return
        self.waiting[protocol] = protocol.loop.call_later(self.timeout_s, protocol.head_timed_out)
        while len(self.waiting) > self.limit:
            oldest = next(iter(self.waiting))
            self.done(oldest)
            self.evicted += 1
            oldest.close()
            self._warn(protocol.loop.time())

    def done(self, protocol: GuardedHttpProtocol) -> None:
        timer = self.waiting.pop(protocol, None)
        if timer is not None:
            timer.cancel()

    def _warn(self, now: float) -> None:
        if now - self._warned_at >= _WARN_EVERY_S:
            self._warned_at = now
            log.warning(
                "more than %d connections are waiting to send a request head: closing the oldest (%d so far)",
                self.limit,
                self.evicted,
            )


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, bounded while it waits for a request head. Use
    ``guarded_http_protocol()``: each server gets its own table of waiting connections."""

    pending: ClassVar[PendingHeads]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes = 0

    # The hooks: where a wait for a head begins and where it ends.

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_waiting()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # Unless a pipelined request started (its head is complete), wait for the next head.
        if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
            self._start_waiting()

    def on_headers_complete(self) -> None:
        self.pending.done(self)
        super().on_headers_complete()

    def handle_websocket_upgrade(self) -> None:
        self.pending.done(self)
        super().handle_websocket_upgrade()

    def data_received(self, data: bytes) -> None:
        waiting = self in self.pending.waiting
        super().data_received(data)
        if waiting and self in self.pending.waiting:
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self.pending.done(self)
                self.transport.write(_TOO_LARGE)
                self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.pending.done(self)
        super().connection_lost(exc)

    # Our own.

    def _start_waiting(self) -> None:
        self._head_bytes = 0
        self.pending.wait(self)

    def head_timed_out(self) -> None:
        self.pending.done(self)
        log.debug("closing a connection from %s: no complete request head in time", self.client)
        self.close()

    def close(self) -> None:
        if not self.transport.is_closing():
            self.transport.close()


def guarded_http_protocol(
    timeout_s: float = REQUEST_HEAD_TIMEOUT_S, max_pending: int = MAX_PENDING
) -> type[GuardedHttpProtocol]:
    """The protocol class to give ``uvicorn.Config(http=...)``."""

    class ServerHttpProtocol(GuardedHttpProtocol):
        pending = PendingHeads(timeout_s, max_pending)

    return ServerHttpProtocol
