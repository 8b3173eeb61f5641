"""python-socketio on uvicorn: a ``publish`` event carries one record (idiomatic: one event per
update) or a list of them (batched); each is broadcast to every other socket as ``update`` or
``updates``. Run as ``uvicorn bench.peer_socketio:app``."""

from typing import Any

import socketio

sio = socketio.AsyncServer(async_mode="asgi", transports=["websocket"], http_compression=False)
app = socketio.ASGIApp(sio)


@sio.on("publish")  # type: ignore[misc]
async def publish(sid: str, payload: Any) -> None:
    await sio.emit("updates" if isinstance(payload, list) else "update", payload, skip_sid=sid)
