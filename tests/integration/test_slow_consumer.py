"""A socket whose peer stops reading is closed with 4001 and does not slow anyone else down."""

from __future__ import annotations

import asyncio

import pytest
import websockets

from .client import Client
from .conftest import StartServer

RECORDS, UPDATES = 200, 150


@pytest.mark.slow
async def test_stalled_reader_is_closed_4001_and_fast_reader_gets_everything(
    start_server: StartServer,
) -> None:
    server = start_server({"queue_max_bytes": 1_000_000, "queue_max_messages": 5000})
    publisher = await Client.connect(server.url)
    fast = await Client.connect(server.url)
    # max_queue=1: the client library stops reading the TCP socket once one frame is waiting.
    stalled = await Client.connect(server.url, max_queue=1)
    for client in (fast, stalled):
        await client.request({"c": "subscribe", "t": "orders", "cid": "s"})

    async def count_fast() -> int:
        seen = 0
        while seen < RECORDS * UPDATES:
            message = await fast.recv(20)
            seen += message["c"] == "p"
        return seen

    counting = asyncio.create_task(count_fast())
    pad = "x" * 150
    for update in range(UPDATES):
        await publisher.send(
            *[
                {"c": "publish", "t": "orders", "data": {"order": n, "u": update, "pad": pad}}
                for n in range(RECORDS)
            ]
        )
    await publisher.request({"c": "flush", "cid": "f"})
    assert await counting == RECORDS * UPDATES

    with pytest.raises(websockets.ConnectionClosed):
        while True:
            await stalled.recv(20)
    assert stalled.ws.close_code == 4001
    assert (await publisher.request({"c": "heartbeat", "cid": "alive"}))[-1]["status"] == "success"
