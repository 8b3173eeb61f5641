"""The ``/ws`` endpoint: check the ``Host`` and the origin, accept, feed every frame to the hub's
engine, finish on disconnect."""

from __future__ import annotations

import asyncio
import logging
import time

from starlette.responses import PlainTextResponse
from starlette.websockets import WebSocket

from ..core.settings.server_names import ServerNames
from ..runtime.hub import Hub
from .hosts import host_headers, local_address, origin_header, secure
from .uvicorn_protocol import PROTOCOL_KEY, SocketHandle

log = logging.getLogger("server.asgi")

# How long one socket's reader goes on with frames already received before the loop runs others.
READ_TURN_S = 0.001


async def websocket_endpoint(websocket: WebSocket) -> None:
    hub: Hub = websocket.app.state.hub
    if hub.shutting_down:
        await websocket.close(1001)
        return
    if hub.cluster is not None and not hub.cluster.ready:
        # A cluster node that has not loaded the state yet accepts no socket (docs/protocol.md, Cluster).
        await websocket.send_denial_response(PlainTextResponse("loading state", status_code=503))
        return
    if not _handshake_allowed(websocket, websocket.app.state.names):
        await websocket.close(1008)  # before accept: uvicorn answers the handshake with HTTP 403
        return
    await websocket.accept()
    binary = hub.config.server.binary_frames

    async def send(frame: bytes) -> None:
        if binary:
            await websocket.send_bytes(frame)
        else:
            await websocket.send_text(frame.decode())

    async def close(code: int, reason: str) -> None:
        await websocket.close(code, reason)

    peer = websocket.client.host if websocket.client is not None else None
    connection = hub.connect(send, SocketHandle(websocket.scope.get(PROTOCOL_KEY), close), peer)
    try:
        turn_started = time.perf_counter()
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            frame = message.get("bytes")
            if frame is None:
                frame = message.get("text") or ""
            await connection.receive(frame)  # in slices: other sockets run in between
            # A small frame is one slice and does not suspend. The frames already received are
            # read on for up to READ_TURN_S, then the writers and other readers get their turn:
            # the writers then send what those frames queued in one frame per socket, rather
            # than one write per socket per publish (with one publish per frame, 0.46 of the
            # Starlette relay's deliveries per CPU-second became 1.3 to 2.0; bench/fanout.py).
            if time.perf_counter() - turn_started >= READ_TURN_S:
                await asyncio.sleep(0)
                turn_started = time.perf_counter()
    finally:
        hub.disconnect(connection)


def _handshake_allowed(websocket: WebSocket, names: ServerNames) -> bool:
    """docs/protocol.md, Who may connect: a page that DNS rebinding points at the server (its
    ``Host``: not one of the server's names) or a browser page of another site (its ``Origin``) may
    not open a socket with its user's rights."""
    scope = websocket.scope
    hosts, origin, local = host_headers(scope), origin_header(scope), local_address(scope)
    if not names.handshake_host_allowed(hosts, local, secure(scope)):
        why = "Host not one of the server's names (see [server] server_names)"
    elif not names.origin_allowed(origin, local, secure(scope)):
        why = "origin not the server's own nor in allowed_origins"
    else:
        return True
    client = websocket.client.host if websocket.client is not None else "an unknown address"
    log.warning(
        "refused a WebSocket handshake from %s: origin %.200r, Host %.200r: %s",
        client,
        origin,
        ", ".join(hosts),
        why,
    )
    return False
