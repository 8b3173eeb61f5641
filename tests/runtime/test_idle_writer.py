"""An idle socket lets go of its writer task (Connection.park_idle_writer, called by the hub
every WRITER_IDLE_S) and gets one again at its next wake-up; a writer with anything in hand is
never let go of, and a finished socket never starts one."""

from __future__ import annotations

import asyncio

from server.core.engine import Engine
from server.core.log.local import LocalLog
from server.core.settings.config import parse_config
from server.runtime.connection import Connection
from server.runtime.hub import Hub
from server.runtime.pump import Pump

from .test_write_order import PausedSocket


def connection_on(socket: PausedSocket) -> Connection:
    engine = Engine(parse_config({"topic": [{"name": "orders", "key": ["/order"]}]}), lambda: 0.0, LocalLog)
    connection = Connection(engine, Pump(engine.broker), socket.send, socket, 1 << 20, False)
    connection.start()
    return connection


async def stop(connection: Connection) -> None:
    connection.finish()
    await asyncio.sleep(0.01)


async def test_an_idle_writer_is_let_go_of_and_the_next_message_starts_one() -> None:
    socket = PausedSocket()
    socket.writable.set()
    connection = connection_on(socket)
    connection.session.send(b'{"c":"A"}')
    await asyncio.sleep(0.01)
    assert not connection.park_idle_writer(), "woken since the last look"
    first = connection.writer
    assert connection.park_idle_writer(), "idle since the last look"
    assert connection.writer is None
    await asyncio.sleep(0.01)
    assert first is not None and first.cancelled()
    connection.session.send(b'{"c":"B"}')
    await asyncio.sleep(0.01)
    assert socket.wire == [b'[{"c":"A"}]', b'[{"c":"B"}]']
    assert connection.writer is not None and not connection.writer.done()
    await stop(connection)


async def test_a_writer_sending_or_with_work_queued_is_kept() -> None:
    socket = PausedSocket()  # not writable: the writer takes a frame and waits
    connection = connection_on(socket)
    connection.session.send(b'{"c":"A"}')
    await asyncio.sleep(0.01)
    connection.session.send(b'{"c":"B"}')  # queued behind the frame in hand
    for _ in range(3):
        assert not connection.park_idle_writer()
    socket.writable.set()
    await asyncio.sleep(0.01)
    assert socket.wire == [b'[{"c":"A"}]', b'[{"c":"B"}]']
    await stop(connection)


async def test_a_finished_socket_starts_no_writer() -> None:
    socket = PausedSocket()
    socket.writable.set()
    connection = connection_on(socket)
    connection.woken_lately = False
    assert connection.park_idle_writer()
    connection.finish()
    connection.wake()
    assert connection.writer is None
    await asyncio.sleep(0.01)


async def test_a_live_hub_lets_go_of_idle_writers_and_keeps_busy_ones() -> None:
    hub = Hub(parse_config({"topic": [{"name": "orders", "key": ["/order"]}]}))
    hub.writer_idle_s = 0.02
    idle_socket, busy_socket = PausedSocket(), PausedSocket()
    idle_socket.writable.set()
    idle = hub.connect(idle_socket.send, idle_socket)
    busy = hub.connect(busy_socket.send, busy_socket)  # never writable: its frame stays in hand
    try:
        busy.session.send(b'{"c":"A"}')
        await asyncio.sleep(0.2)  # several sweeps
        assert idle.writer is None and busy.writer is not None
        idle.session.send(b'{"c":"B"}')
        await asyncio.sleep(0.005)
        assert idle_socket.wire == [b'[{"c":"B"}]']
    finally:
        await hub.shutdown()
        for connection in (idle, busy):
            hub.disconnect(connection)
