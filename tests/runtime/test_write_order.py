"""A socket's frames leave in the order they were taken from its outbox, whichever path writes
them: the writer task (waiting on the peer's flow control) or the engine's direct write when the
outbox is full (``Connection.try_write``)."""

from __future__ import annotations

import asyncio

from server.core.engine import Engine
from server.core.log.local import LocalLog
from server.core.settings.config import parse_config
from server.runtime.connection import Connection
from server.runtime.pump import Pump


class PausedSocket:
    """A socket whose transport is paused until ``writable`` is set, as uvicorn's send waits."""

    def __init__(self) -> None:
        self.writable = asyncio.Event()
        self.wire: list[bytes] = []

    async def send(self, frame: bytes) -> None:
        await self.writable.wait()
        self.wire.append(frame)

    def can_write_now(self) -> bool:
        return self.writable.is_set()

    def write_now(self, frame: bytes, binary: bool) -> None:
        self.wire.append(frame)

    def write_buffer_size(self) -> int:
        return 0

    def closing(self) -> bool:
        return False

    async def close(self, code: int, reason: str, grace_s: float = 5.0) -> None:
        return None

    def abort(self) -> None:
        return None


async def test_a_direct_write_never_passes_a_frame_the_writer_waits_to_send() -> None:
    """Found in review: the writer took frame A and waited for the paused transport; when it
    resumed, the engine wrote B directly before the writer ran again, and B arrived first."""
    engine = Engine(parse_config({"topic": [{"name": "orders", "key": ["/order"]}]}), lambda: 0.0, LocalLog)
    socket = PausedSocket()
    connection = Connection(engine, Pump(engine.broker), socket.send, socket, 1 << 20, False)
    connection.start()
    try:
        connection.session.send(b'{"c":"A"}')
        await asyncio.sleep(0.01)  # the writer has taken [A] and waits for the transport
        socket.writable.set()  # the transport resumes; the writer has not run yet
        connection.session.send(b'{"c":"B"}')
        connection.try_write()  # the engine's path when an outbox is full
        await asyncio.sleep(0.01)
        assert socket.wire == [b'[{"c":"A"}]', b'[{"c":"B"}]']
    finally:
        assert connection.writer is not None
        connection.writer.cancel()
        await asyncio.wait([connection.writer])
