"""A socket's writer that fails closes its socket with 1011 and says so as an error; a peer that
went away is ordinary (issue 11, item 9: a dead writer used to leave a socket that looked alive
and answered nothing, logged at debug level only)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from server.asgi.uvicorn_protocol import SocketHandle
from server.core.engine import Engine
from server.core.log.local import LocalLog
from server.core.settings.config import parse_config
from server.runtime.connection import Connection
from server.runtime.pump import Pump

from ..waiting import HANG_S

CLOSE_INTERNAL_ERROR = 1011


class FakeSocket:
    """The adapter's side of a connection: ``send`` raises ``error`` once it is set."""

    def __init__(self, error: Exception | None) -> None:
        self.error = error
        self.sent: list[bytes] = []
        self.closed: list[tuple[int, str]] = []

    async def send(self, frame: bytes) -> None:
        if self.error is not None:
            raise self.error
        self.sent.append(frame)

    async def close(self, code: int, reason: str) -> None:
        self.closed.append((code, reason))


class WebSocketDisconnect(Exception):
    """What Starlette raises from the ``OSError`` of a send to a peer that has gone."""


def disconnect() -> Exception:
    try:
        try:
            raise ConnectionResetError("reset by peer")
        except OSError:
            raise WebSocketDisconnect(1006)  # noqa: B904 (as Starlette does: the OSError is its context)
    except WebSocketDisconnect as error:
        return error


async def run_writer(error: Exception | None) -> tuple[FakeSocket, Connection]:
    engine = Engine(parse_config({"topic": [{"name": "orders", "key": ["/order"]}]}), lambda: 0.0, LocalLog)
    socket = FakeSocket(error)
    connection = Connection(
        engine, Pump(engine.broker), socket.send, SocketHandle(None, socket.close), 1 << 20, False
    )
    connection.start()
    await connection.receive(b'{"c":"heartbeat"}')  # wakes the writer with one frame to send
    if error is None:
        await asyncio.sleep(0.05)
    else:
        assert connection.writer is not None
        async with asyncio.timeout(HANG_S):
            await asyncio.wait([connection.writer])
    return socket, connection


async def test_a_writer_that_fails_closes_its_socket_with_1011_and_logs_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, "server.runtime")
    socket, connection = await run_writer(TypeError("Recursion limit reached"))
    assert socket.closed == [(CLOSE_INTERNAL_ERROR, "internal error")]
    [record] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert f"session {connection.session.id}" in record.getMessage() and record.exc_info is not None
    assert "Recursion limit reached" in caplog.text
    # The engine runs nothing more for it: its commands would be answered into a closed socket.
    assert connection.session.close_code == CLOSE_INTERNAL_ERROR


@pytest.mark.parametrize("error", [ConnectionResetError("reset"), disconnect()], ids=["os", "starlette"])
async def test_a_peer_that_went_away_is_not_an_error(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, "server.runtime")
    socket, connection = await run_writer(error)
    assert socket.closed == [] and connection.session.close_code is None
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]


async def test_a_healthy_writer_sends_and_does_not_close() -> None:
    socket, connection = await run_writer(None)
    assert socket.sent == [b'[{"c":"heartbeat"}]'] and socket.closed == []
    connection.finish()
