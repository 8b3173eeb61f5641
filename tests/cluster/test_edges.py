"""The edges of a cluster: one frame's order, a logon and its publishes in one frame, sequences
past what a double holds, Redis dying with changes in flight, and a node cut off for longer
than the streams are kept."""

from __future__ import annotations

import asyncio
import signal

import pytest

from ..integration.client import Client, Message
from .conftest import StartNode, wait_ready
from .redis_process import RedisProcess
from .test_cluster import quiet_sows, sow

pytestmark = pytest.mark.slow


async def test_one_frame_keeps_its_order_a_delete_sees_the_publishes_before_it(start_node: StartNode) -> None:
    node = start_node()
    client = await Client.connect(node.url)
    await client.send(
        {"c": "publish", "t": "orders", "data": {"id": 5, "status": "done"}},
        {"c": "sow_delete", "t": "orders", "data": {"id": 5}, "cid": "d1"},
        {"c": "publish", "t": "orders", "data": {"id": 6, "status": "done"}},
        {"c": "sow_delete", "t": "orders", "filter": "/status = 'done'", "cid": "d2"},
        {"c": "publish", "t": "orders", "data": {"id": 7, "status": "open"}, "cid": "p"},
    )
    acks = [m for m in await client.ack("p") if m.get("c") == "ack"]
    assert [m.get("records_deleted") for m in acks if m["cid"] in ("d1", "d2")] == [1, 1]
    assert await sow(node, "orders") == {7: {"id": 7, "status": "open"}}


async def test_publishes_in_the_frame_of_their_logon_carry_its_client_name(start_node: StartNode) -> None:
    node = start_node()
    first = await Client.connect(node.url)
    await first.send(
        {"c": "logon", "client_name": "pub1", "cid": "l"},
        {"c": "publish", "t": "orders", "data": {"id": 1, "v": "a"}, "s": 1, "cid": "p"},
    )
    await first.ack("p")
    await first.close()
    again = await Client.connect(node.url)
    assert (await again.request({"c": "logon", "client_name": "pub1", "cid": "l"}))[-1]["s"] == 1
    resent = await again.request(
        {"c": "publish", "t": "orders", "data": {"id": 1, "v": "b"}, "s": 1, "cid": 1}
    )
    assert resent[-1]["reason"] == "duplicate"
    assert (await sow(node, "orders"))[1] == {"id": 1, "v": "a"}


async def test_sequences_past_2_to_the_53_are_compared_exactly(start_node: StartNode) -> None:
    node = start_node()
    client = await Client.connect(node.url)
    await client.request({"c": "logon", "client_name": "big", "cid": "l"})
    base = 2**53
    for offset in (0, 1, 2):
        command = {"c": "publish", "t": "orders", "data": {"id": offset}, "s": base + offset, "cid": offset}
        acks = await client.request(command)
        assert acks[-1]["status"] == "success" and "reason" not in acks[-1], acks[-1]
    again = await client.request({"c": "publish", "t": "orders", "data": {"id": 9}, "s": base + 1, "cid": 9})
    assert again[-1]["reason"] == "duplicate"
    assert sorted(await sow(node, "orders")) == [0, 1, 2]


async def test_changes_in_flight_when_redis_dies_are_never_both_refused_and_applied(
    start_node: StartNode, redis_server: RedisProcess
) -> None:
    node = start_node()
    client = await Client.connect(node.url)
    redis = redis_server.client()
    count = 6000
    for first in range(0, count, 1000):
        await client.send(
            *[
                {"c": "publish", "t": "orders", "data": {"id": i}, "cid": i}
                for i in range(first, first + 1000)
            ]
        )
    while redis.xlen("{test}:stream:orders") < 1500:
        await asyncio.sleep(0.001)
    redis_server.kill()
    acks: list[Message] = await client.silence(1.0)
    redis_server.start()
    wait_ready(node)
    acks += await client.silence(3.0)
    succeeded = {m["cid"] for m in acks if m.get("a") == "processed" and m["status"] == "success"}
    refused = {m["cid"] for m in acks if m.get("a") == "processed" and m["status"] == "failure"}
    assert all(m["reason"].startswith("unavailable") for m in acks if m.get("status") == "failure")
    stored = set(await sow(node, "orders"))
    assert succeeded <= stored, "every success is stored"
    assert not refused & stored, "nothing refused was applied"
    assert succeeded | refused == set(range(count)), "every publish has its answer"


async def test_a_node_cut_off_longer_than_the_retention_resynchronises(start_node: StartNode) -> None:
    cluster = {"retention": "1ms", "snapshot_interval": "300ms"}
    ahead, behind = start_node(cluster=cluster), start_node(cluster=cluster)
    watcher = await Client.connect(behind.url)
    await watcher.request({"c": "sow_and_subscribe", "t": "orders", "sub_id": "w", "cid": "q"})
    await watcher.until(lambda m: m.get("c") == "group_end")
    # An aggregation fed by the (still empty) topic listens as well: one group of every record.
    await watcher.request(
        {"c": "sow_and_subscribe", "t": "orders", "sub_id": "n", "cid": "n", "projection": ["COUNT(*) AS /n"]}
    )
    await watcher.until(lambda m: m.get("c") == "group_end")
    behind.process.send_signal(signal.SIGSTOP)  # a long pause: the others snapshot and trim meanwhile
    publisher = await Client.connect(ahead.url)
    await publisher.send(*[{"c": "publish", "t": "orders", "data": {"id": i}} for i in range(500)])
    await publisher.request({"c": "publish", "t": "orders", "data": {"id": 500}, "cid": "p"})
    await asyncio.sleep(1.5)
    behind.process.send_signal(signal.SIGCONT)
    sows = await quiet_sows([ahead, behind], "orders", 501)
    assert sows[0] == sows[1]
    told = await watcher.silence(1.0)
    view = {m["data"]["id"] for m in told if m.get("c") == "p" and m["sids"] == ["w"]}
    assert view == set(range(501)), "its subscriber was sent what it missed"
    counts = [m["data"]["n"] for m in told if m.get("c") == "p" and m["sids"] == ["n"]]
    assert counts and counts[-1] == 501, "its aggregation was fed what it missed"
    assert "resynchronising from the snapshot" in behind.output()


async def test_a_node_reading_on_past_trimmed_entries_notices_the_gap_itself(start_node: StartNode) -> None:
    # The lagging node looks for trims once a minute: what it reads must tell it that entries
    # before it were trimmed away, or it would apply the stream's tail over a SOW missing the rest.
    ahead = start_node(cluster={"retention": "1ms", "snapshot_interval": "200ms"})
    behind = start_node(cluster={"retention": "1ms", "snapshot_interval": "60s"})
    watcher = await Client.connect(behind.url)
    await watcher.request({"c": "sow_and_subscribe", "t": "orders", "sub_id": "w", "cid": "q"})
    await watcher.until(lambda m: m.get("c") == "group_end")
    behind.process.send_signal(signal.SIGSTOP)
    publisher = await Client.connect(ahead.url)
    await publisher.send(*[{"c": "publish", "t": "orders", "data": {"id": i}} for i in range(300)])
    await publisher.request({"c": "publish", "t": "orders", "data": {"id": 300}, "cid": "p"})
    await asyncio.sleep(1.0)  # snapshots written and the stream trimmed to its last entry
    behind.process.send_signal(signal.SIGCONT)
    await publisher.request({"c": "publish", "t": "orders", "data": {"id": 301}, "cid": "p2"})
    sows = await quiet_sows([ahead, behind], "orders", 302)
    assert sows[0] == sows[1]
    told = await watcher.silence(1.0)
    assert {m["data"]["id"] for m in told if m.get("c") == "p"} == set(range(302))
