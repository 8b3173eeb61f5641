"""The yardstick: a ten-line Starlette broadcast, every frame forwarded to every other socket."""

from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket

clients: set[WebSocket] = set()


async def relay(websocket: WebSocket) -> None:
    await websocket.accept()
    clients.add(websocket)
    try:
        async for frame in websocket.iter_text():
            for client in list(clients):
                if client is not websocket:
                    await client.send_text(frame)
    finally:
        clients.discard(websocket)


app = Starlette(routes=[WebSocketRoute("/ws", relay)])
