"""Transactions (docs/protocol.md, Transactions) in a cluster: one stream entry, applied whole on
every node, and decided again when another node changed a record it was decided against."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from ..integration.client import Client
from .agreement import quiet
from .conftest import StartNode

pytestmark = pytest.mark.slow


def tx(cid: str, *commands: dict[str, Any]) -> dict[str, Any]:
    return {"c": "tx", "cid": cid, "cmds": list(commands)}


def delta(record: int, **fields: Any) -> dict[str, Any]:
    return {"c": "delta_publish", "t": "orders", "data": {"id": record, **fields}}


async def test_a_transaction_reaches_every_node_whole(start_node: StartNode) -> None:
    nodes = [start_node() for _ in range(2)]
    watcher = await Client.connect(nodes[1].url)
    await watcher.request({"c": "subscribe", "t": "orders", "sub_id": "s", "cid": "q"})
    publisher = await Client.connect(nodes[0].url)
    commands = [{"c": "publish", "t": "orders", "data": {"id": n, "v": n}} for n in range(5)]
    got = await publisher.request(tx("t", *commands, {"c": "sow_delete", "t": "orders", "filter": "/id = 4"}))
    assert got[-1]["status"] == "success", got[-1]
    messages = orjson.loads(await watcher.ws.recv())
    assert [m["c"] for m in messages] == ["tx_begin", *["p"] * 5, "tx_end"]
    refused = await publisher.request(tx("u", commands[0], {"c": "publish", "t": "fills", "data": {"id": 1}}))
    assert refused[-1]["reason"].startswith("bad message: cmds[1]: a transaction in a cluster")
    await publisher.close()
    await watcher.close()


async def test_concurrent_transactions_of_delta_publishes_lose_no_field(start_node: StartNode) -> None:
    nodes = [start_node() for _ in range(2)]
    clients = [await Client.connect(node.url) for node in nodes]
    await clients[0].request({"c": "publish", "t": "orders", "data": {"id": 1}, "cid": "p"})
    await quiet(nodes, "orders", 1)  # both nodes have it

    async def run(client: Client, side: str) -> None:
        for n in range(30):
            got = await client.request(tx(f"{side}{n}", delta(1, **{f"{side}{n}": n}), delta(2, **{side: n})))
            assert got[-1]["status"] == "success", got[-1]

    await asyncio.gather(run(clients[0], "a"), run(clients[1], "b"))
    sows = await quiet(nodes, "orders", 2)
    record = sows[0][1]
    assert all(record.get(f"{side}{n}") == n for side in "ab" for n in range(30)), record
    for client in clients:
        await client.close()
