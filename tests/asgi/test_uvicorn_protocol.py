"""The bounded HTTP protocol against uvicorn's own machinery: a real uvicorn Config, server state
and event loop, with an in-memory transport. If uvicorn moves or renames the hooks that
server/asgi/uvicorn_protocol.py overrides, these tests fail."""

from __future__ import annotations

import asyncio
import inspect
import resource
from typing import Any

import pytest
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from uvicorn.server import ServerState
from websockets.frames import Frame, Opcode

from server.asgi.uvicorn_protocol import (
    MAX_HEAD_BYTES,
    MAX_PENDING,
    GuardedHttpProtocol,
    SocketHandle,
    frame_header,
    guarded_http_protocol,
    max_pending,
)

TIMEOUT_S = 0.1


class MemoryTransport(asyncio.Transport):
    def __init__(self, port: int = 50000) -> None:
        super().__init__()
        self.written = bytearray()
        self.closed = False
        self.protocol: asyncio.BaseProtocol | None = None
        self.extra = {"peername": ("127.0.0.1", port), "sockname": ("127.0.0.1", 8000)}

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.extra.get(name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True
        self.aborted = True

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return self.closed

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.protocol = protocol

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})
    elif scope["type"] == "websocket":
        await receive()
        await send({"type": "websocket.accept"})
        await receive()  # held open until the test disconnects it


class Server:
    def __init__(
        self,
        max_pending: int = 100,
        grace_s: float = 0.0,
        max_bytes: int = 1 << 20,
        timeout_s: float = TIMEOUT_S,
    ) -> None:
        self.protocol_class = guarded_http_protocol(timeout_s, max_pending, grace_s, max_bytes)
        self.config = uvicorn.Config(
            app, http=self.protocol_class, ws="websockets-sansio", lifespan="off", log_config=None
        )
        self.config.load()
        self.state = ServerState()

    def connect(self, port: int = 50000) -> tuple[GuardedHttpProtocol, MemoryTransport]:
        protocol = self.protocol_class(config=self.config, server_state=self.state, app_state={})
        transport = MemoryTransport(port)
        protocol.connection_made(transport)
        return protocol, transport


UPGRADE_HEAD = (
    b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


def test_uvicorn_still_has_the_hooks_we_override() -> None:
    for name in (
        "connection_made",
        "connection_lost",
        "data_received",
        "on_headers_complete",
        "on_response_complete",
        "handle_websocket_upgrade",
    ):
        assert callable(getattr(HttpToolsProtocol, name, None)), f"uvicorn's HttpToolsProtocol lost {name}"
    assert list(inspect.signature(HttpToolsProtocol.on_response_complete).parameters) == ["self"]
    assert list(inspect.signature(HttpToolsProtocol.on_headers_complete).parameters) == ["self"]
    assert list(inspect.signature(HttpToolsProtocol.handle_websocket_upgrade).parameters) == ["self"]


async def test_a_partial_head_is_closed_after_the_timeout_however_it_trickles() -> None:
    server = Server()
    protocol, transport = server.connect()
    for part in (b"GET /ws HTTP/1.1\r\n", b"Host: x\r\n", b"Upgrade: websocket\r\n"):
        protocol.data_received(part)
        await asyncio.sleep(TIMEOUT_S / 3)
    await asyncio.sleep(TIMEOUT_S)
    assert transport.closed
    assert protocol.pending.waiting == {}


async def test_a_connection_that_sends_nothing_is_closed_after_the_timeout() -> None:
    timeout_s = 5 * TIMEOUT_S  # room for a late wake-up on a busy machine before the deadline
    server = Server(timeout_s=timeout_s)
    _, transport = server.connect()
    await asyncio.sleep(timeout_s / 5)
    assert not transport.closed
    await asyncio.sleep(timeout_s)
    assert transport.closed


async def test_a_complete_request_is_answered_and_the_wait_starts_again_after_it() -> None:
    server = Server()
    protocol, transport = server.connect()
    protocol.data_received(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert protocol not in protocol.pending.waiting, "the head is complete: the app has it"
    await asyncio.sleep(0.01)
    assert bytes(transport.written).startswith(b"HTTP/1.1 200") and not transport.closed
    assert protocol in protocol.pending.waiting, "waiting for the next request on the kept-alive connection"
    protocol.data_received(b"GET / HTTP/1.1\r\nHost: x\r\n")  # half a second request
    await asyncio.sleep(TIMEOUT_S * 1.5)
    assert transport.closed


async def test_a_websocket_upgrade_leaves_the_table() -> None:
    server = Server()
    protocol, transport = server.connect()
    protocol.data_received(UPGRADE_HEAD)
    assert isinstance(transport.protocol, WebSocketsSansIOProtocol), "uvicorn upgraded the connection"
    assert protocol.pending.waiting == {}
    await asyncio.sleep(TIMEOUT_S * 1.5)
    assert not transport.closed, "an upgraded socket is not a pending head"
    assert b"101 Switching Protocols" in bytes(transport.written)
    transport.protocol.connection_lost(None)
    await asyncio.sleep(0.01)


async def test_past_the_cap_the_oldest_waiting_connections_are_closed() -> None:
    server = Server(max_pending=3)
    connections = [server.connect(50000 + n) for n in range(5)]
    assert [t.closed for _, t in connections] == [True, True, False, False, False]
    protocol, transport = connections[-1]
    assert len(protocol.pending.waiting) == 3
    protocol.data_received(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    await asyncio.sleep(0.01)
    assert bytes(transport.written).startswith(b"HTTP/1.1 200")


async def test_past_the_cap_a_connection_that_has_just_arrived_is_not_closed() -> None:
    """A reconnect storm: every connection waits for a moment before its head is read. Only
    those that have waited the grace are stalled, and only they are closed for the cap."""
    # Past the grace, before the head's deadline, with room for a late wake-up on a busy machine.
    timeout_s = 10 * TIMEOUT_S
    server = Server(max_pending=3, grace_s=timeout_s / 4, timeout_s=timeout_s)
    storm = [server.connect(50000 + n) for n in range(6)]
    assert not any(t.closed for _, t in storm), "all arriving: none stalled yet"
    for protocol, _ in storm[3:]:
        protocol.data_received(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    await asyncio.sleep(timeout_s * 0.3)
    assert not any(t.closed for _, t in storm[:3])
    late, _ = server.connect(50010)
    assert [t.closed for _, t in storm[:3]] == [True, False, False], "one past the cap, and stalled"
    assert len(late.pending.waiting) == 3


async def test_past_the_byte_cap_the_oldest_waiting_connection_is_closed_however_young() -> None:
    server = Server(max_pending=100, grace_s=60, max_bytes=2800)
    connections = [server.connect(50000 + n) for n in range(3)]
    for protocol, _ in connections:
        protocol.data_received(b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 900)
    assert not any(t.closed for _, t in connections)
    protocol, _ = connections[2]
    protocol.data_received(b"a" * 200)
    assert [t.closed for _, t in connections] == [True, False, False]
    assert protocol.pending.held_bytes <= 2800
    for protocol, _ in connections[1:]:
        protocol.data_received(b"\r\n\r\n")
    assert protocol.pending.held_bytes == 0 and protocol.pending.waiting == {}


def test_the_cap_leaves_half_the_file_descriptors_for_new_connections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    limits = {"soft": 1024}
    monkeypatch.setattr(resource, "getrlimit", lambda which: (limits["soft"], resource.RLIM_INFINITY))
    assert max_pending() == 512
    limits["soft"] = 1 << 20
    assert max_pending() == MAX_PENDING
    limits["soft"] = 10
    assert max_pending() == 64


async def test_an_oversized_head_gets_431() -> None:
    server = Server()
    protocol, transport = server.connect()
    protocol.data_received(b"GET / HTTP/1.1\r\nX-Big: ")
    chunk = b"a" * 8192
    for _ in range(MAX_HEAD_BYTES // len(chunk) + 1):
        protocol.data_received(chunk)
        if transport.closed:
            break
    assert transport.closed and bytes(transport.written).startswith(b"HTTP/1.1 431")


@pytest.mark.parametrize("size", [MAX_HEAD_BYTES // 2])
async def test_a_large_head_under_the_limit_is_served(size: int) -> None:
    server = Server()
    protocol, transport = server.connect()
    protocol.data_received(b"GET / HTTP/1.1\r\nX-Big: " + b"a" * size + b"\r\n\r\n")
    await asyncio.sleep(0.01)
    assert bytes(transport.written).startswith(b"HTTP/1.1 200")


def test_each_server_has_its_own_table() -> None:
    assert guarded_http_protocol().pending is not guarded_http_protocol().pending


async def test_the_socket_handle_works_on_uvicorns_websocket_protocol() -> None:
    """SocketHandle (the runtime's SocketPort) reaches into uvicorn's sans-I/O WebSocket protocol:
    ``conn``, ``transport``, ``writable``, ``close_sent`` and ``queue``. If an upgrade moves any of
    them, this fails here rather than in production as a socket that never closes."""
    server = Server()
    protocol, transport = server.connect()
    protocol.data_received(UPGRADE_HEAD)
    upgraded = transport.protocol
    assert isinstance(upgraded, WebSocketsSansIOProtocol)
    await asyncio.sleep(0.05)  # the app accepts
    for name in ("conn", "transport", "writable", "close_sent", "queue"):
        assert hasattr(upgraded, name), f"uvicorn's WebSocket protocol has no {name!r} any more"

    async def unused_close(code: int, reason: str) -> None:
        raise AssertionError("the handle writes the close frame itself")

    handle = SocketHandle(upgraded, unused_close)
    assert handle.can_write_now() and not handle.closing()
    before = len(transport.written)
    handle.write_now(b'[{"c":"heartbeat"}]', binary=False)
    written = bytes(transport.written[before:])
    assert written == Frame(Opcode.TEXT, b'[{"c":"heartbeat"}]').serialize(mask=False, extensions=[])
    await handle.close(4001, "slow consumer", grace_s=0.05)
    assert b"slow consumer" in bytes(transport.written[before:]), "the close frame was written"
    assert upgraded.close_sent
    await asyncio.sleep(0.1)
    assert getattr(transport, "aborted", False), "aborted when the closing handshake did not finish"


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 65535, 65536, 70000])
@pytest.mark.parametrize("opcode", [Opcode.TEXT, Opcode.BINARY])
def test_a_directly_written_frame_is_what_websockets_would_write(size: int, opcode: Opcode) -> None:
    """The direct write builds the frame header itself (for every length encoding of RFC 6455)."""
    payload = b"x" * size
    expected = Frame(opcode, payload).serialize(mask=False, extensions=[])
    assert frame_header(opcode.value, size) + payload == expected
