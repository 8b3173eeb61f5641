"""uvicorn's WebSocket protocol made lighter per idle socket (server/asgi/uvicorn_websocket.py):
the handshake request is freed, and the queue and event it swaps in do what uvicorn asks of
them. If websockets or uvicorn change what this relies on, these tests fail."""

from __future__ import annotations

import asyncio
import gc
import socket
import weakref

import pytest
import uvicorn
import websockets
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.server import ServerProtocol

from server.asgi.uvicorn_websocket import LeanServerProtocol, LeanWebSocketProtocol, LightQueue

from ..waiting import HANG_S

HANDSHAKE = (
    b"GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


def handshake(conn: ServerProtocol) -> weakref.ref[Request]:
    conn.receive_data(HANDSHAKE)
    [request] = conn.events_received()
    assert isinstance(request, Request)
    conn.send_response(conn.accept(request))
    conn.data_to_send()
    return weakref.ref(request)


def test_the_request_is_freed_once_the_handshake_is_done_and_frames_are_parsed_after_it() -> None:
    conn = LeanServerProtocol()
    request = handshake(conn)
    gc.collect()
    assert request() is None
    conn.receive_data(Frame(Opcode.TEXT, b"hello").serialize(mask=True))
    [frame] = conn.events_received()
    assert (frame.opcode, frame.data) == (Opcode.TEXT, b"hello")


def test_websockets_itself_still_keeps_the_request() -> None:
    """Why LeanServerProtocol exists: when this fails, websockets frees it itself and the
    workaround can go."""
    conn = ServerProtocol()
    request = handshake(conn)
    gc.collect()
    assert request() is not None


async def test_the_light_queue_hands_items_over_in_order_to_a_waiting_getter() -> None:
    queue = LightQueue()
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.put_nowait(1)
    queue.put_nowait(2)
    assert await getter == 1
    assert not queue.empty()
    assert await queue.get() == 2
    assert queue.empty()


async def echo(scope: dict[str, object], receive: object, send: object) -> None:
    assert scope["type"] == "websocket"
    assert (await receive())["type"] == "websocket.connect"  # type: ignore[operator]
    await send({"type": "websocket.accept"})  # type: ignore[operator]
    protocol = send.__self__  # type: ignore[attr-defined]  # uvicorn passes its bound method
    assert isinstance(protocol, LeanWebSocketProtocol)
    assert protocol.request is None and protocol.response is None  # let go once accepted
    while (message := await receive())["type"] == "websocket.receive":  # type: ignore[operator]
        await send({"type": "websocket.send", "text": message["text"] * 2})  # type: ignore[operator]


@pytest.mark.parametrize("messages", [1, 50])
async def test_uvicorn_serves_a_websocket_with_it(messages: int) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(echo, port=port, ws=LeanWebSocketProtocol, lifespan="off", log_config=None)
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(HANG_S):
            while not server.started:
                await asyncio.sleep(0.01)
            async with websockets.connect(
                f"ws://127.0.0.1:{port}/ws", open_timeout=HANG_S, ping_interval=None
            ) as client:
                for n in range(messages):
                    await client.send(f"m{n}")
                assert [await client.recv() for _ in range(messages)] == [
                    f"m{n}" * 2 for n in range(messages)
                ]
            assert client.close_code == 1000
    finally:
        server.should_exit = True
        await serving
