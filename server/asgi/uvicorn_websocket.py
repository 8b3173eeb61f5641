"""uvicorn's sans-I/O WebSocket protocol, without what an idle socket need not keep. (With
uvicorn_protocol.py, one of the two modules that reach into uvicorn's internals; the tests in
``tests/asgi/test_uvicorn_websocket.py`` fail when an upgrade moves what is used here.)

Measured with tracemalloc over 1,000 idle subscribed sockets (26.4 KB each, all told), three
things of uvicorn's and websockets' held about a third of it:

- the parsed handshake request and its response, about 3 KB: uvicorn keeps both as attributes,
  and websockets' ``ServerProtocol.parse`` keeps the request in a local variable of the
  generator that goes on to parse every frame, for the socket's lifetime;
- an ``asyncio.Queue`` for the messages to the ASGI app, about 3.8 KB: its three deques and its
  event's allocate a block of 64 slots each (760 bytes), though uvicorn stops reading after each
  message until the app has taken it, so it never holds more than a few;
- an ``asyncio.Event`` for flow control, 760 bytes more for the same reason.

``LeanWebSocketProtocol`` (give it to ``uvicorn.Config(ws=...)``) is uvicorn's protocol that lets
go of the handshake once it is done (its own attributes, and a handshake parser that ends), with
a list-backed queue and the runtime's ``Wake`` for flow control, which do what uvicorn asks of
those two: nothing else changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.protocol import Protocol
from websockets.server import ServerProtocol

from ..runtime.wake import Wake


class _HandshakeOnly(Protocol):
    def parse(self) -> Generator[None]:
        return
        yield  # a generator that parses nothing: see LeanServerProtocol


class LeanServerProtocol(ServerProtocol, _HandshakeOnly):
    """websockets' server protocol whose handshake parser ends when the handshake is done, so
    that the request it parsed is freed: ``ServerProtocol.parse`` then goes on with
    ``super().parse()``, which is ``_HandshakeOnly``'s here (the next class in this one's
    method resolution order) and returns at once, and the frames are parsed by a fresh
    ``Protocol.parse``."""

    def parse(self) -> Generator[None]:
        yield from ServerProtocol.parse(self)
        yield from Protocol.parse(self)


class LightQueue:
    """What uvicorn uses of ``asyncio.Queue``: ``put_nowait``, ``empty`` and one getter's ``get``.
    The getter awaits a future of its own (not a ``Wake``): an idle socket's reader waits here
    for hours, and a coroutine more in its chain is 240 bytes more per socket."""

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: list[Any] = []
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: Any) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def empty(self) -> bool:
        return not self._items

    async def get(self) -> Any:
        while not self._items:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        return self._items.pop(0)


class LeanWebSocketProtocol(WebSocketsSansIOProtocol):
    # Slots for the attributes uvicorn sets once and never changes. uvicorn's protocol keeps 37
    # attributes in its instance dict, past the 30 that CPython's key-sharing dicts hold, so
    # each socket had a dict of its own of 1.6 KB; with these in slots the dict shares its keys
    # (1.2 KB less per socket, bench/memory.py). An attribute not named here still goes into the
    # dict, so a uvicorn that adds or drops some stays correct.
    __slots__ = (
        "app",
        "app_state",
        "asgi_version",
        "client",
        "close_timeout",
        "config",
        "connections",
        "default_headers",
        "logger",
        "loop",
        "ping_interval",
        "ping_timeout",
        "root_path",
        "scheme",
        "server",
        "tasks",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queue = LightQueue()  # type: ignore[assignment]
        self.writable = Wake()  # type: ignore[assignment]
        self.writable.set()
        # Nothing has been received yet: the connection, as uvicorn configured it, gets a
        # handshake parser that ends with the handshake.
        conn = self.conn
        conn.__class__ = LeanServerProtocol
        conn.parser = conn.parse()
        next(conn.parser)

    def start_keepalive(self) -> None:
        # Called once, when the accept response has been written: nothing reads the handshake's
        # request and response again, which uvicorn keeps for the socket's lifetime; nor the
        # request's headers and the scope's state and extensions, read by the handshake's checks
        # (asgi/websocket.py), nor websockets' id of the connection, which it only logs
        # (1.2 KB per socket in all). The scope keeps what uvicorn's logs name: the client, the
        # path and the query.
        self.request = self.response = None  # type: ignore[assignment]
        scope = self.scope
        scope["headers"] = ()
        scope.pop("state", None)
        scope.pop("extensions", None)
        self.conn.id = None  # type: ignore[assignment]
        super().start_keepalive()

    def keepalive_timeout(self) -> None:
        # uvicorn stops reading after each message until the app has taken it, so while a socket's
        # earlier frame is still being worked through (a frame of costly commands runs in
        # slices) its pong waits unread: the server's slowness, not the peer's. The deadline then
        # starts again, and a peer that is really gone is cut once reading resumes.
        if self.read_paused and self.ping_timeout is not None and not self.transport.is_closing():
            self.pong_timer = self.loop.call_later(self.ping_timeout, self.keepalive_timeout)
            return
        super().keepalive_timeout()
