"""Three real nodes sharing one real Redis (docs/protocol.md, Cluster): what a client sees is what one server
that applied the shared log's order would show, on every node."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ..integration.client import Client, Message
from ..waiting import HANG_S
from .agreement import quiet, sow
from .conftest import StartNode

pytestmark = pytest.mark.slow


def data_messages(messages: list[Message]) -> list[Message]:
    return [m for m in messages if m.get("c") in ("p", "sow", "oof")]


async def test_a_publish_on_one_node_reaches_subscribers_on_every_node(start_node: StartNode) -> None:
    nodes = [start_node() for _ in range(3)]
    subscribers = [await Client.connect(node.url) for node in nodes]
    for client in subscribers:
        await client.request({"c": "sow_and_subscribe", "t": "orders", "sub_id": "s", "cid": "q"})
        await client.until(lambda m: m.get("c") == "group_end")
    publisher = await Client.connect(nodes[0].url)
    for i in range(20):
        await publisher.send({"c": "publish", "t": "orders", "data": {"id": i, "v": i}})
    await publisher.request({"c": "publish", "t": "orders", "data": {"id": 0, "v": "last"}, "cid": "p"})
    for client in subscribers:
        got = await client.until(lambda m: m.get("data") == {"id": 0, "v": "last"})
        assert [m["data"] for m in data_messages(got)] == [{"id": i, "v": i} for i in range(20)] + [
            {"id": 0, "v": "last"}
        ]
    # processed means applied on the acking node: a sow right after it sees the publish.
    assert (await sow(nodes[0], "orders"))[0] == {"id": 0, "v": "last"}
    sows = await quiet(nodes, "orders", 20)
    assert sows[0] == sows[1] == sows[2]


async def test_concurrent_delta_publishes_from_two_nodes_lose_no_field(start_node: StartNode) -> None:
    """Two nodes delta-publish different fields of the same records at once: every node ends
    with every field (each delta merged into the version it replaced), and every delta
    subscriber's view ends equal to the SOW."""
    nodes = [start_node() for _ in range(3)]
    watcher = await Client.connect(nodes[2].url)
    await watcher.request({"c": "sow_and_subscribe", "t": "orders", "sub_id": "w", "cid": "q"})
    await watcher.until(lambda m: m.get("c") == "group_end")
    writers = [await Client.connect(node.url) for node in nodes[:2]]
    rounds = 30

    async def write(client: Client, field: str) -> None:
        for i in range(rounds):
            await client.send(
                {"c": "delta_publish", "t": "orders", "data": {"id": i % 3, field: i}, "cid": f"{field}{i}"}
            )
        for i in range(rounds):
            acks = await client.ack(f"{field}{i}")
            assert acks[-1]["status"] == "success", acks[-1]

    await asyncio.gather(write(writers[0], "a"), write(writers[1], "b"))
    sows = await quiet(nodes, "orders", 3)
    for key in range(3):
        last = max(i for i in range(rounds) if i % 3 == key)
        assert sows[0][key] == {"id": key, "a": last, "b": last}
    view: dict[Any, Any] = {}

    def caught_up(message: Message) -> bool:  # every delta merged into what the watcher holds
        if message.get("c") == "p":
            view[message["data"]["id"]] = message["data"]
        return view == sows[2]

    await watcher.until(caught_up, timeout=HANG_S)


async def test_a_publisher_that_moves_nodes_and_resends_gets_duplicates(start_node: StartNode) -> None:
    nodes = [start_node() for _ in range(2)]
    first = await Client.connect(nodes[0].url)
    await first.request({"c": "logon", "client_name": "feed", "cid": "l"})
    for s in range(1, 6):
        await first.request({"c": "publish", "t": "orders", "data": {"id": s}, "s": s, "cid": s})
    await first.close()
    second = await Client.connect(nodes[1].url)
    logon = await second.request({"c": "logon", "client_name": "feed", "cid": "l"})
    assert logon[-1]["s"] == 5  # the highest sequence the cluster accepted
    for s in range(3, 8):
        command = {"c": "publish", "t": "orders", "data": {"id": s, "again": 1}, "s": s, "cid": s}
        acks = await second.request(command)
        assert (acks[-1].get("reason") == "duplicate") == (s <= 5), acks[-1]
    records = await sow(nodes[0], "orders")
    assert records[3] == {"id": 3} and records[6] == {"id": 6, "again": 1}


async def test_a_subscriber_that_moves_nodes_with_its_bookmark_misses_nothing(start_node: StartNode) -> None:
    nodes = [start_node() for _ in range(2)]
    publisher = await Client.connect(nodes[0].url)
    reader = await Client.connect(nodes[0].url)
    await reader.request({"c": "subscribe", "t": "orders", "sub_id": "r", "bm": "now", "cid": "q"})
    for i in range(10):
        await publisher.request({"c": "publish", "t": "orders", "data": {"id": i}, "cid": i})
    got = data_messages(await reader.until(lambda m: m.get("data") == {"id": 9}))
    last_seen = got[4]["bm"]  # the reader saw five, then its node went away
    await reader.close()
    for i in range(10, 15):
        await publisher.send({"c": "publish", "t": "orders", "data": {"id": i}})
    moved = await Client.connect(nodes[1].url)
    await moved.request({"c": "subscribe", "t": "orders", "sub_id": "r", "bm": last_seen, "cid": "q2"})
    for i in range(15, 18):
        await publisher.send({"c": "publish", "t": "orders", "data": {"id": i}})
    resumed = data_messages(await moved.until(lambda m: m.get("data") == {"id": 17}))
    assert [m["data"]["id"] for m in resumed] == list(range(5, 18))
    assert len({m["bm"] for m in resumed}) == len(resumed)


async def test_a_record_expires_once_with_the_same_oof_on_every_node(start_node: StartNode) -> None:
    nodes = [start_node() for _ in range(3)]
    watchers = [await Client.connect(node.url) for node in nodes]
    for client in watchers:
        await client.request({"c": "delta_subscribe", "t": "quotes", "sub_id": "w", "o": "oof", "cid": "q"})
    publisher = await Client.connect(nodes[0].url)
    await publisher.request({"c": "publish", "t": "quotes", "data": {"sym": "ABC", "px": 1}, "cid": "p"})
    seen = []
    for client in watchers:
        got = await client.until(lambda m: m.get("c") == "oof", timeout=HANG_S)
        seen.append([m for m in got if m.get("c") in ("p", "oof")])
        assert not [m for m in await client.silence(1.5) if m.get("c") == "oof"]
    assert seen[0] == seen[1] == seen[2]
    assert seen[0][-1]["reason"] == "expired"
    assert await quiet(nodes, "quotes", 0) == [{}, {}, {}]


async def test_a_logon_ack_bookmark_replays_what_changed_after_the_logon_on_any_node(
    start_node: StartNode,
) -> None:
    nodes = [start_node() for _ in range(2)]
    publisher = await Client.connect(nodes[0].url)
    watcher = await Client.connect(nodes[1].url)
    await watcher.request({"c": "subscribe", "t": "orders", "sub_id": "w", "cid": "w"})
    for i in range(3):
        await publisher.request({"c": "publish", "t": "orders", "data": {"id": i}, "cid": i})
    await watcher.until(lambda m: m.get("data") == {"id": 2})  # node 1 has applied them
    (ack,) = [m for m in await watcher.request({"c": "logon", "cid": "l"}) if m.get("cid") == "l"]
    await publisher.request({"c": "publish", "t": "orders", "data": {"id": 3}, "cid": 3})
    reader = await Client.connect(nodes[0].url)
    await reader.request({"c": "subscribe", "t": "orders", "sub_id": "r", "bm": ack["bm"], "cid": "r"})
    got = data_messages(await reader.until(lambda m: m.get("data") == {"id": 3}))
    assert [m["data"]["id"] for m in got] == [3]
