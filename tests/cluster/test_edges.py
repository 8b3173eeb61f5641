"""The edges of a cluster: one frame's order, a logon and its publishes in one frame, sequences
past what a double holds, Redis dying with changes in flight, and a node cut off for longer
than the streams are kept."""

from __future__ import annotations

import asyncio
import signal

import pytest

from ..integration.client import Client, Message
from ..waiting import HANG_S, eventually_async
from .agreement import quiet, sow
from .conftest import StartNode, wait_ready
from .redis_process import RedisProcess

pytestmark = pytest.mark.slow


async def snapshotted(redis_server: RedisProcess, topic: str, below: int) -> None:
    async def done() -> bool:
        return redis_server.snapshotted(topic, below)

    await eventually_async(done, f"a snapshot of {topic} and its stream trimmed below {below} entries")


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
    answered: set[int] = set()

    def answer(message: Message) -> bool:
        if message.get("a") == "processed":
            answered.add(message["cid"])
        return len(answered) == count

    # Redis comes back once the node has noticed it gone: what it could not send by then is
    # refused, or in doubt until Redis answers again.
    assert await node.logged("lost Redis", timeout=HANG_S), node.output()
    redis_server.start()
    wait_ready(node)
    acks = await client.until(answer, timeout=HANG_S)
    succeeded = {m["cid"] for m in acks if m.get("a") == "processed" and m["status"] == "success"}
    refused = {m["cid"] for m in acks if m.get("a") == "processed" and m["status"] == "failure"}
    assert all(m["reason"].startswith("unavailable") for m in acks if m.get("status") == "failure")
    stored = set(await sow(node, "orders"))
    assert succeeded <= stored, "every success is stored"
    assert not refused & stored, "nothing refused was applied"
    assert succeeded | refused == set(range(count)), "every publish has its answer"


async def test_a_node_cut_off_longer_than_the_retention_resynchronises(
    start_node: StartNode, redis_server: RedisProcess
) -> None:
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
    # The others snapshot and trim meanwhile, to the stream's last entry: a trim of only what the
    # stopped node's blocked read had already been sent would leave it nothing to miss.
    await snapshotted(redis_server, "orders", 2)
    behind.process.send_signal(signal.SIGCONT)
    sows = await quiet([ahead, behind], "orders", 501)
    assert sows[0] == sows[1]
    view: set[int] = set()
    counts: list[int] = []

    def caught_up(message: Message) -> bool:
        if message.get("c") == "p" and message["sids"] == ["w"]:
            view.add(message["data"]["id"])
        if message.get("c") == "p" and message["sids"] == ["n"]:
            counts.append(message["data"]["n"])
        return len(view) == 501 and bool(counts) and counts[-1] == 501

    await watcher.until(caught_up, timeout=HANG_S)  # its subscriber and its aggregation: what they missed
    assert view == set(range(501)), "its subscriber was sent what it missed"
    assert "resynchronising from the snapshot" in behind.output()


async def test_a_node_reading_on_past_trimmed_entries_notices_the_gap_itself(
    start_node: StartNode, redis_server: RedisProcess
) -> None:
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
    await snapshotted(redis_server, "orders", 2)  # snapshots written, the stream trimmed to its last entry
    behind.process.send_signal(signal.SIGCONT)
    await publisher.request({"c": "publish", "t": "orders", "data": {"id": 301}, "cid": "p2"})
    sows = await quiet([ahead, behind], "orders", 302)
    assert sows[0] == sows[1]
    told: set[int] = set()

    def caught_up(message: Message) -> bool:
        if message.get("c") == "p":
            told.add(message["data"]["id"])
        return len(told) == 302

    await watcher.until(caught_up, timeout=HANG_S)
    assert told == set(range(302))
