"""The outermost ASGI middleware: hands the server's per-connection protocol object to the app.

uvicorn passes each connection's bound ``send`` method; its ``__self__`` is the protocol, which
owns the transport. The runtime needs it to close a socket whose peer has stopped reading.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

PROTOCOL_KEY = "server.protocol"


class TransportMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            scope[PROTOCOL_KEY] = getattr(send, "__self__", None)
        await self.app(scope, receive, send)
