"""The ``/ws`` endpoint: accept, feed every frame to the hub's engine, finish on disconnect."""

from __future__ import annotations

import asyncio

from starlette.websockets import WebSocket

from ..runtime.hub import Hub
from ..runtime.transport import SocketHandle
from .middleware import PROTOCOL_KEY


async def websocket_endpoint(websocket: WebSocket) -> None:
    hub: Hub = websocket.app.state.hub
    if hub.shutting_down:
        await websocket.close(1001)
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

    connection = hub.connect(send, SocketHandle(websocket.scope.get(PROTOCOL_KEY), close))
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            frame = message.get("bytes")
            if frame is None:
                frame = message.get("text") or ""
            connection.receive(frame)
            # receive() does not suspend while frames are waiting: yield so writers and other
            # readers run between the frames of a fast publisher.
            await asyncio.sleep(0)
    finally:
        hub.disconnect(connection)
