"""A socket that stops reading while it receives transactions (docs/protocol.md, Transactions and
Conflation): conflated as one receiving the same changes as plain publishes is, not closed with
4001."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import websockets

from .client import Client, Message
from .conftest import StartServer
from .server_process import ServerProcess
from .test_front_door import http

RECORDS, PER_TX = 100, 20
# A hang guard: 20 MB to each stalled socket, four times what loopback's buffers were seen to take.
ROUNDS_AT_MOST = 200
TOPICS = [
    {"name": "transactions", "key": ["/id"], "conflation": "conflate"},
    {"name": "publishes", "key": ["/id"], "conflation": "conflate"},
]


def status(server: ServerProcess) -> dict[str, Any]:
    answer: dict[str, Any] = orjson.loads(http(server.http + "/status.json")[2])
    return answer


async def drain(client: Client) -> list[Message]:
    """Everything the client was sent once it reads again; a closed socket fails the test."""
    try:
        return await client.settled()
    except websockets.ConnectionClosed:
        pytest.fail(f"closed with {client.ws.close_code} ({client.ws.close_reason})")


@pytest.mark.slow
async def test_a_stalled_reader_of_transactions_is_conflated_not_closed(start_server: StartServer) -> None:
    server = start_server({"queue_max_bytes": 300_000, "queue_max_messages": 2000}, TOPICS)
    publisher = await Client.connect(server.url)
    # max_queue=1: the client library stops reading the TCP socket once one frame is waiting.
    stalled = {t["name"]: await Client.connect(server.url, max_queue=1) for t in TOPICS}
    for name, client in stalled.items():
        await client.request({"c": "subscribe", "t": name, "cid": "s"})
    pad = "x" * 1000
    rounds = 0
    # Rounds of 100 changes of 1 KB to each until the server has conflated both stalled queues
    # (/status.json): how much the kernel's buffers take first is the machine's (1.7 to 5 MB on
    # loopback), and 6,000 changes at once assumed less. The net state (100 records) fits in the
    # queue's bytes a third of the way.
    while sum(row["conflated"] > 0 for row in status(server)["slowest"]) < len(stalled):
        assert rounds < ROUNDS_AT_MOST, f"{rounds} rounds and not both queues conflated: {status(server)}"
        for first in range(0, RECORDS, PER_TX):
            records: list[dict[str, Any]] = [
                {"id": n, "u": rounds, "pad": pad} for n in range(first, first + PER_TX)
            ]
            await publisher.send(
                {"c": "tx", "cmds": [{"c": "publish", "t": "transactions", "data": r} for r in records]}
            )
            await publisher.send(*[{"c": "publish", "t": "publishes", "data": r} for r in records])
        await publisher.request({"c": "flush", "cid": f"f{rounds}"})
        rounds += 1

    for name, client in stalled.items():
        latest: dict[object, object] = {}
        received = 0
        open_block = False
        for message in await drain(client):
            if message["c"] in ("tx_begin", "tx_end"):
                assert name == "transactions" and open_block == (message["c"] == "tx_end")
                open_block = not open_block
            elif message["c"] == "p":
                assert open_block == (name == "transactions"), "every change of a transaction in a block"
                received += 1
                latest[message["data"]["id"]] = message["data"]["u"]
        assert latest == dict.fromkeys(range(RECORDS), rounds - 1), name
        assert received < RECORDS * rounds, f"{name}: conflation sent fewer messages than were published"
