"""Sockets whose peers stop reading, one per conflation policy, beside a fast reader
(docs/protocol.md, Conflation)."""

from __future__ import annotations

import asyncio
import urllib.request

import orjson
import pytest
import websockets

from ..waiting import HANG_S, eventually_async
from .client import Client
from .conftest import StartServer
from .test_front_door import http

RECORDS, UPDATES = 200, 120
TOPICS = [
    {"name": "conflated", "key": ["/id"], "conflation": "conflate"},
    {"name": "closing", "key": ["/id"], "conflation": "off"},
    {"name": "dropping", "key": ["/id"], "conflation": "unsubscribe"},
]


async def drain(client: Client) -> list[dict[str, object]]:
    """Everything the server holds for ``client`` once it reads again, to a flush's ack."""
    return await client.settled()


@pytest.mark.slow
async def test_each_policy_with_a_stalled_reader(start_server: StartServer) -> None:
    server = start_server({"queue_max_bytes": 300_000, "queue_max_messages": 2000}, TOPICS)
    publisher, fast = await Client.connect(server.url), await Client.connect(server.url)
    # max_queue=1: the client library stops reading the TCP socket once one frame is waiting.
    stalled = {t["name"]: await Client.connect(server.url, max_queue=1) for t in TOPICS}
    for name, client in stalled.items():
        await client.request({"c": "subscribe", "t": name, "cid": "s"})
        await fast.request({"c": "subscribe", "t": name, "cid": name})

    expected = RECORDS * UPDATES * len(TOPICS)
    seen = 0

    async def count_fast() -> int:
        nonlocal seen
        while seen < expected:
            message = await fast.recv(HANG_S)
            seen += message["c"] == "p"
        return seen

    counting = asyncio.create_task(count_fast())
    pad = "x" * 400
    for update in range(UPDATES):
        # Keep the fast reader fast: this test's publisher shares its event loop, and a reader that
        # fell behind would rightly be conflated or closed like any other slow one.
        while seen < (update - 2) * RECORDS * len(TOPICS):
            await asyncio.sleep(0.005)
        for name in stalled:
            await publisher.send(
                *[
                    {"c": "publish", "t": name, "data": {"id": n, "u": update, "pad": pad}}
                    for n in range(RECORDS)
                ]
            )
    await publisher.request({"c": "flush", "cid": "f"})
    assert await counting == expected, "the fast socket received every update"

    # off: closed with 4001, after the frames already in flight, even for a reader that comes back late.
    await asyncio.sleep(6)
    with pytest.raises(websockets.ConnectionClosed):
        while True:
            await stalled["closing"].recv(HANG_S)
    assert stalled["closing"].ws.close_code == 4001

    # unsubscribe: told, and the socket stays open.
    got = await drain(stalled["dropping"])
    assert {"c": "unsubscribed", "sub_id": "s", "reason": "back_pressure"} in got
    assert (await stalled["dropping"].request({"c": "heartbeat", "cid": "alive"}))[-1]["status"] == "success"

    # conflate: still open, and once it reads it holds the latest value of every record.
    latest: dict[object, object] = {}
    received = 0
    for message in await drain(stalled["conflated"]):
        if message["c"] == "p":
            received += 1
            data = message["data"]
            assert isinstance(data, dict)
            latest[data["id"]] = data["u"]
    assert latest == dict.fromkeys(range(RECORDS), UPDATES - 1)
    assert received < RECORDS * UPDATES, "conflation sent fewer messages than were published"
    assert (await stalled["conflated"].request({"c": "heartbeat", "cid": "alive"}))[-1]["status"] == "success"

    with urllib.request.urlopen(server.http + "/metrics", timeout=HANG_S) as response:
        metrics = response.read().decode()
    assert 'push_closed_slow_total{topic="closing"} 1.0' in metrics
    assert 'push_unsubscribed_total{topic="dropping"} 1.0' in metrics
    assert 'push_conflated_total{topic="conflated"} 0.0' not in metrics


async def test_a_burst_larger_than_the_queue_reaches_a_healthy_socket(start_server: StartServer) -> None:
    server = start_server({"queue_max_messages": 50, "max_message_bytes": 4_000_000}, TOPICS)
    publisher, reader = await Client.connect(server.url), await Client.connect(server.url)
    await reader.request({"c": "subscribe", "t": "closing", "cid": "s"})
    await publisher.send(*[{"c": "publish", "t": "closing", "data": {"id": n}} for n in range(2000)])
    await publisher.request({"c": "flush", "cid": "burst"})
    got = [m for m in await reader.settled() if m["c"] == "p"]
    assert [m["data"]["id"] for m in got] == list(range(2000)), "written, not conflated and not closed"


async def test_background_conflation_conflates_a_stalled_queue_before_it_fills(
    start_server: StartServer,
) -> None:
    server = start_server({"queue_max_messages": 2000, "queue_max_bytes": 64_000_000}, TOPICS)
    publisher = await Client.connect(server.url)
    stalled = await Client.connect(server.url, max_queue=1)
    await stalled.request({"c": "subscribe", "t": "conflated", "cid": "s"})
    pad = "x" * 1000
    published = [0]  # rounds of 200 messages of 1 KB

    # Rounds are published until the stalled socket's queue on the server is past a quarter of
    # its bound (500 messages), never near the bound (2,000, which would conflate it at once):
    # how many the kernel's buffers take first is the machine's (1.7 to 5 MB on loopback: 6,000
    # messages at once at times never took the queue past 500). The background pass then runs
    # on its own, while the stalled socket still reads nothing.
    async def conflated_in_the_background() -> bool:
        if "push_background_conflations_total 0.0" not in http(server.http + "/metrics")[2]:
            return True
        slowest = orjson.loads(http(server.http + "/status.json")[2])["slowest"]
        if max(row["queued_messages"] for row in slowest) * 4 <= 2000:
            await publisher.send(
                *[
                    {"c": "publish", "t": "conflated", "data": {"id": n, "u": published[0], "pad": pad}}
                    for n in range(200)
                ]
            )
            await publisher.request({"c": "flush", "cid": f"f{published[0]}"})
            published[0] += 1
        return False

    await eventually_async(conflated_in_the_background, "no background conflation counted")
    latest: dict[object, object] = {}
    for message in await drain(stalled):
        if message["c"] == "p":
            data = message["data"]
            assert isinstance(data, dict)
            latest[data["id"]] = data["u"]
    assert latest == dict.fromkeys(range(200), published[0] - 1)
