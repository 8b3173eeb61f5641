"""Closing a socket whose peer has stopped reading.

``await websocket.close()`` goes through the same flow-controlled send as every frame, so it
blocks for as long as the peer does not read. ``SocketHandle`` writes the close frame straight
into the transport buffer (behind what is already in flight, so a peer that reads again sees
every frame and then the close code) and aborts the transport if the closing handshake has
not finished within ``grace_s``. It needs uvicorn's sans-I/O protocol object, which the
``TransportMiddleware`` in ``server.asgi`` puts in the scope; without it, it falls back to a
bounded ``close()`` and an abort.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("server.runtime")

_TRANSPORT_METHODS = ("write", "abort", "is_closing", "get_write_buffer_size")


class SocketHandle:
    def __init__(self, protocol: Any, close: Callable[[int, str], Awaitable[None]]) -> None:
        self._protocol = protocol
        self._close = close

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

    async def close(self, code: int, reason: str, grace_s: float = 5.0) -> None:
        """Close with ``code`` even when the peer is not reading; never blocks longer than ``grace_s``."""
        if self._write_close_frame(code, reason):
            loop = asyncio.get_running_loop()
            transport = self.transport
            if transport is not None:
                loop.call_later(grace_s, _abort_if_open, transport)
            return
        try:
            await asyncio.wait_for(self._close(code, reason), grace_s)
        except (TimeoutError, RuntimeError, OSError):
            self.abort()
        except Exception:  # a disconnected peer raises the server's own disconnect error
            self.abort()

    def can_write_now(self) -> bool:
        """Whether a frame written now goes straight to the transport: the peer is keeping up."""
        protocol = self._protocol
        writable = getattr(protocol, "writable", None)
        transport = self.transport
        return (
            isinstance(writable, asyncio.Event)
            and writable.is_set()
            and transport is not None
            and not transport.is_closing()
            and not getattr(protocol, "close_sent", True)
            and hasattr(getattr(protocol, "conn", None), "send_text")
        )

    def write_now(self, frame: bytes, binary: bool) -> None:
        """Write one frame synchronously (only when ``can_write_now``): what the async send does
        once the transport is writable, without waiting for the writer task's turn."""
        conn = self._protocol.conn
        if binary:
            conn.send_binary(frame)
        else:
            conn.send_text(frame)
        transport = self.transport
        assert transport is not None
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
