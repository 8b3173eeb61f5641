"""What the runtime needs from a socket, whatever serves it: the ASGI layer's uvicorn adapter
(``server.asgi.uvicorn_protocol.SocketHandle``) implements it, so the runtime never touches a
web server's internals."""

from __future__ import annotations

from typing import Protocol


class SocketPort(Protocol):
    def can_write_now(self) -> bool:
        """Whether a frame written now goes straight to the transport: the peer is keeping up."""
        ...

    def write_now(self, frame: bytes, binary: bool) -> None:
        """Write one frame synchronously (only when ``can_write_now``)."""
        ...

    def write_buffer_size(self) -> int: ...

    def closing(self) -> bool:
        """Whether the connection is closing or gone (the peer went away)."""
        ...

    async def close(self, code: int, reason: str, grace_s: float = 5.0) -> None:
        """Close with ``code`` even when the peer is not reading; never block past ``grace_s``."""
        ...

    def abort(self) -> None: ...
