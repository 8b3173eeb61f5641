"""A frame's commands run in slices: other tasks of the event loop run between them, and the
socket's own order is kept (runtime/connection.py)."""

from __future__ import annotations

import asyncio

import orjson

from server.asgi.uvicorn_protocol import SocketHandle
from server.core.engine import Engine
from server.core.log.local import LocalLog
from server.core.settings.config import parse_config
from server.runtime.connection import SLICE_COMMANDS, Connection
from server.runtime.pump import Pump


async def _no_send(frame: bytes) -> None:
    return None


async def _no_close(code: int, reason: str) -> None:
    return None


def connection(engine: Engine) -> Connection:
    return Connection(engine, Pump(engine.broker), _no_send, SocketHandle(None, _no_close), 1 << 20, False)


async def test_a_big_frame_yields_to_other_tasks_and_keeps_its_order() -> None:
    engine = Engine(parse_config({"topic": [{"name": "orders", "key": ["/order"]}]}), lambda: 0.0, LocalLog)
    flooding = connection(engine)
    commands = [{"c": "publish", "t": "orders", "data": {"order": n % 10, "n": n}} for n in range(20_000)]
    ticks: list[int] = []

    async def other_socket() -> None:
        while True:
            ticks.append(len(engine.broker.topics["orders"].records))
            await asyncio.sleep(0)

    other = asyncio.create_task(other_socket())
    await asyncio.sleep(0)
    await flooding.receive(orjson.dumps(commands))
    other.cancel()
    assert len(ticks) >= 20_000 // SLICE_COMMANDS, "the other task ran between slices"
    assert any(seen > 0 for seen in ticks[1:-1]), "while the frame was being processed"
    # In order: the last publish of each order is the one stored.
    assert sorted(v.data["n"] for v in engine.broker.topics["orders"].records.values()) == list(
        range(19_990, 20_000)
    )
    assert engine.broker.commands_processed == 20_000


async def test_a_frame_that_is_not_json_is_one_failure() -> None:
    engine = Engine(parse_config({"topic": [{"name": "orders", "key": ["/order"]}]}), lambda: 0.0, LocalLog)
    peer = connection(engine)
    await peer.receive(b"{not json")
    frame = peer.session.outbox.take_frame(1 << 20)
    assert frame is not None and orjson.loads(frame)[0]["reason"].startswith("bad message: not JSON")
