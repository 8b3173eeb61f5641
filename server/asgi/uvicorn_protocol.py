"""One of the two modules that reach into uvicorn's internals, with uvicorn_websocket.py (pinned in
pyproject.toml; the tests in ``tests/asgi/test_uvicorn_protocol.py`` fail when an upgrade moves
what is used here):

- ``GuardedHttpProtocol``, an HTTP protocol that bounds the connections still waiting for a
  request head, in time, in size and in number;
- ``TransportMiddleware`` and ``SocketHandle``: the runtime's ``SocketPort`` over uvicorn's
  sans-I/O WebSocket protocol object, to write a frame at once when the peer keeps up and to
  close a socket whose peer has stopped reading.

The bounded HTTP protocol:

uvicorn bounds none of these: ``timeout_keep_alive`` is armed only after a response,
``limit_concurrency`` is checked only once a request head is complete (and it counts WebSockets
too), ``backlog`` is the kernel's accept queue, which the event loop empties at once, and httptools
takes headers of any size. So a client that connects and sends half a request (or nothing) was held
forever. ``HttpToolsProtocol`` subclassed here:

- starts waiting for a head when the connection is made and again after each response, and stops
  when the head is complete (or upgrades to a WebSocket): a connection that takes longer than
  ``REQUEST_HEAD_TIMEOUT_S`` is closed, however slowly it trickles bytes in;
- answers a head larger than ``MAX_HEAD_BYTES`` with 431 and closes;
- keeps the waiting connections in arrival order and bounds them in number and in the head bytes
  they hold, by closing the oldest.

Only a connection that has stalled is cut. A reconnect storm after a restart is thousands of
clients connecting at once, and the event loop accepts a whole accept queue before it reads any of
their heads: every one of them is waiting for a moment. A cap of 256 closed most of a storm of 400
before their heads, already in the socket buffers, were read. So the number cap (``MAX_PENDING``,
and no more than half the file descriptors the process may open, so that stalled connections can
never keep new ones from being accepted) is high, sized by memory (a connection waiting for its
head holds about 6 KB: uvicorn's protocol, its parser, uvloop's transport, a timer), and past it
only a connection that has waited ``STALL_GRACE_S`` is closed: one that has just arrived is not
stalled, and it is left alone even if the count runs over for a moment. The bytes cap
(``MAX_PENDING_BYTES``) is the hard bound on what the waiting heads hold: past it the oldest goes,
however young. The listen backlog (``BACKLOG``, which node.py gives uvicorn) is raised from
uvicorn's 2,048, so that a storm waits in the kernel's accept queue rather than having its SYNs
dropped and retried a second later (the kernel caps it at ``net.core.somaxconn``).

Closing a socket whose peer has stopped reading: ``await websocket.close()`` goes through the
same flow-controlled send as every frame, so it blocks for as long as the peer does not read.
``SocketHandle`` writes the close frame straight into the transport buffer (behind what is
already in flight, so a peer that reads again sees every frame and then the close code) and
aborts the transport if the closing handshake has not finished within ``grace_s``. It needs
uvicorn's protocol object, which ``TransportMiddleware`` puts in the scope (uvicorn passes each
connection's bound ``send`` method; its ``__self__`` is the protocol); without it, it falls back
to a bounded ``close()`` and an abort.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import struct
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from websockets.protocol import State

log = logging.getLogger("server.asgi")

REQUEST_HEAD_TIMEOUT_S = 5.0
MAX_HEAD_BYTES = 64 * 1024
STALL_GRACE_S = 1.0  # a connection waiting less than this is arriving, not stalled
MAX_PENDING = 10_000  # connections waiting for a head (about 60 MB of them at 6 KB each)
MAX_PENDING_BYTES = 32 * 1024 * 1024  # head bytes they hold, all told
BACKLOG = 8192  # the listen backlog (the kernel caps it at net.core.somaxconn)
_WARN_EVERY_S = 60.0  # at most one warning a minute while a cap is being hit

_TOO_LARGE_BODY = b"request head too large\n"
_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(_TOO_LARGE_BODY), _TOO_LARGE_BODY)
)


def max_pending(cap: int = MAX_PENDING) -> int:
    """``cap``, or half the file descriptors this process may open when that is fewer: the
    waiting connections must leave room to accept new ones (a full table closes its oldest only
    when a new connection arrives, which needs a descriptor)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return cap
    return max(64, min(cap, soft // 2))


class _Wait:
    __slots__ = ("head_bytes", "since", "timer")

    def __init__(self, since: float, timer: asyncio.TimerHandle) -> None:
        self.since = since
        self.timer = timer
        self.head_bytes = 0


class PendingHeads:
    """The connections waiting for a request head, oldest first, each with its deadline and the
    bytes of head it has sent so far."""

    def __init__(
        self,
        timeout_s: float,
        limit: int,
        grace_s: float = STALL_GRACE_S,
        max_bytes: int = MAX_PENDING_BYTES,
    ) -> None:
        self.timeout_s = timeout_s
        self.limit = limit
        self.grace_s = grace_s
        self.max_bytes = max_bytes
        self.waiting: dict[GuardedHttpProtocol, _Wait] = {}
        self.held_bytes = 0
        self.evicted = 0
        self._warned_at = float("-inf")

    def wait(self, protocol: GuardedHttpProtocol) -> None:
        if protocol in self.waiting:
            return
        loop = protocol.loop
        now = loop.time()
        self.waiting[protocol] = _Wait(now, loop.call_later(self.timeout_s, protocol.head_timed_out))
        # Past the cap, close the oldest while they are stalled; the ones behind them are younger.
        while len(self.waiting) > self.limit:
            oldest, wait = next(iter(self.waiting.items()))
            if now - wait.since < self.grace_s:
                break
            self._evict(oldest, now)

    def received(self, protocol: GuardedHttpProtocol, size: int) -> bool:
        """Count ``size`` bytes of a head still incomplete; False when this connection's head is
        now over ``MAX_HEAD_BYTES``. Past ``max_bytes`` in all, the oldest are closed."""
        wait = self.waiting.get(protocol)
        if wait is None:
            return True
        wait.head_bytes += size
        self.held_bytes += size
        if wait.head_bytes > MAX_HEAD_BYTES:
            return False
        while self.held_bytes > self.max_bytes:
            self._evict(next(iter(self.waiting)), protocol.loop.time())
        return True

    def done(self, protocol: GuardedHttpProtocol) -> None:
        wait = self.waiting.pop(protocol, None)
        if wait is not None:
            wait.timer.cancel()
            self.held_bytes -= wait.head_bytes

    def _evict(self, protocol: GuardedHttpProtocol, now: float) -> None:
        self.done(protocol)
        self.evicted += 1
        protocol.close()
        if now - self._warned_at >= _WARN_EVERY_S:
            self._warned_at = now
            log.warning(
                "%d connections (%d bytes) are waiting to send a request head: closing the oldest "
                "(%d so far)",
                len(self.waiting),
                self.held_bytes,
                self.evicted,
            )


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, bounded while it waits for a request head. Use
    ``guarded_http_protocol()``: each server gets its own table of waiting connections."""

    pending: ClassVar[PendingHeads]

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
        super().data_received(data)
        # Still waiting after the parser has had it: these bytes are part of an incomplete head.
        if not self.pending.received(self, len(data)):
            self.pending.done(self)
            self.transport.write(_TOO_LARGE)
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.pending.done(self)
        super().connection_lost(exc)

    # Our own.

    def _start_waiting(self) -> None:
        self.pending.wait(self)

    def head_timed_out(self) -> None:
        self.pending.done(self)
        log.debug("closing a connection from %s: no complete request head in time", self.client)
        self.close()

    def close(self) -> None:
        if not self.transport.is_closing():
            self.transport.close()


def guarded_http_protocol(
    timeout_s: float = REQUEST_HEAD_TIMEOUT_S,
    limit: int | None = None,
    grace_s: float = STALL_GRACE_S,
    max_bytes: int = MAX_PENDING_BYTES,
) -> type[GuardedHttpProtocol]:
    """The protocol class to give ``uvicorn.Config(http=...)`` (``limit``: ``max_pending()``)."""

    class ServerHttpProtocol(GuardedHttpProtocol):
        pending = PendingHeads(timeout_s, max_pending() if limit is None else limit, grace_s, max_bytes)

    return ServerHttpProtocol


# -- the WebSocket protocol object ------------------------------------------------------

PROTOCOL_KEY = "server.protocol"


class TransportMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            scope[PROTOCOL_KEY] = getattr(send, "__self__", None)
        await self.app(scope, receive, send)


_TRANSPORT_METHODS = ("write", "writelines", "abort", "is_closing", "get_write_buffer_size")

_FIN = 0x80
_OP_TEXT, _OP_BINARY = 0x1, 0x2


def frame_header(opcode: int, length: int) -> bytes:
    """The head of an unmasked, unfragmented frame (RFC 6455 5.2), as a server sends it."""
    if length < 126:
        return bytes((_FIN | opcode, length))
    if length < 1 << 16:
        return struct.pack("!BBH", _FIN | opcode, 126, length)
    return struct.pack("!BBQ", _FIN | opcode, 127, length)


class SocketHandle:
    def __init__(self, protocol: Any, close: Callable[[int, str], Awaitable[None]]) -> None:
        self._protocol = protocol
        self._close = close
        # What a direct write needs, looked up once (uvicorn's sans-I/O protocol has it from the
        # handshake on): its flow-control event, its websockets connection and the transport.
        conn = getattr(protocol, "conn", None)
        writable = getattr(protocol, "writable", None)
        self._conn = conn if hasattr(conn, "send_text") and hasattr(conn, "extensions") else None
        self._writable = writable if hasattr(writable, "is_set") else None

    @property
    def transport(self) -> asyncio.Transport | None:
        # Duck-typed: uvloop's transports do not subclass asyncio.Transport.
        transport = getattr(self._protocol, "transport", None)
        if all(hasattr(transport, name) for name in _TRANSPORT_METHODS):
            return transport
        return None

    def write_buffer_size(self) -> int:
        transport = self.transport
        return transport.get_write_buffer_size() if transport is not None else 0

    def closing(self) -> bool:
        transport = self.transport
        return transport is not None and transport.is_closing()

    async def close(self, code: int, reason: str, grace_s: float = 5.0) -> None:
        """Close with ``code`` even when the peer is not reading; never blocks longer than ``grace_s``."""
        if self._write_close_frame(code, reason):
            loop = asyncio.get_running_loop()
            transport = self.transport
            if transport is not None:
                loop.call_later(grace_s, _abort_if_open, transport)
            return
        try:
            async with asyncio.timeout(grace_s):
                await self._close(code, reason)
        except (TimeoutError, RuntimeError, OSError):
            self.abort()
        except Exception:  # a disconnected peer raises the server's own disconnect error
            self.abort()

    def can_write_now(self) -> bool:
        """Whether a frame written now goes straight to the transport: the peer is keeping up (the
        protocol's flow control says writable) and the connection is open."""
        conn, writable = self._conn, self._writable
        if conn is None or writable is None or not writable.is_set():
            return False
        protocol = self._protocol
        transport = protocol.transport
        return (
            transport is not None
            and not transport.is_closing()
            and not protocol.close_sent
            and conn.state is State.OPEN
            and not conn.expect_continuation_frame
        )

    def write_now(self, frame: bytes, binary: bool) -> None:
        """Write one frame synchronously (only when ``can_write_now``): what the async send does
        once the transport is writable, without waiting for the writer task's turn.

        With no extension negotiated (permessage-deflate is off unless configured), the frame is
        the header and ``frame`` itself: no text round trip and no copies through websockets'
        ``Frame.serialize``, which gave the writer about half its time back. With deflate,
        websockets compresses it."""
        conn = self._conn
        assert conn is not None
        transport = self._protocol.transport
        if not conn.extensions:
            transport.writelines((frame_header(_OP_BINARY if binary else _OP_TEXT, len(frame)), frame))
            return
        if binary:
            conn.send_binary(frame)
        else:
            conn.send_text(frame)
        transport.write(b"".join(conn.data_to_send()))

    def abort(self) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.abort()

    def _write_close_frame(self, code: int, reason: str) -> bool:
        protocol = self._protocol
        conn = getattr(protocol, "conn", None)
        transport = self.transport
        if conn is None or transport is None or not hasattr(conn, "send_close"):
            return False
        if getattr(protocol, "close_sent", True) or transport.is_closing():
            return True
        try:
            conn.send_close(code, reason)
            transport.write(b"".join(conn.data_to_send()))
        except Exception:
            log.debug("could not write a close frame; aborting", exc_info=True)
            transport.abort()
            return True
        protocol.close_sent = True
        protocol.queue.put_nowait({"type": "websocket.disconnect", "code": code, "reason": reason})
        return True


def _abort_if_open(transport: asyncio.Transport) -> None:
    if not transport.is_closing():
        log.info("peer did not finish the closing handshake in time; aborting the connection")
    transport.abort()
