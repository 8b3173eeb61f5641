"""Redis that loses the shared log (docs/protocol.md, Cluster): restarted empty (no ``appendonly``),
flushed, or restored from an old dump. The nodes that hold the newer state say so in one ERROR line
and re-seed Redis from it; no two nodes that answer ``/healthz`` 200 ever serve different SOWs, and
nothing any node still held is lost. Redis restarted with its data raises no alarm."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import websockets

from ..integration.client import Client
from ..integration.server_process import ServerProcess
from .conftest import StartNode, wait_ready
from .redis_process import RedisProcess
from .test_cluster import data_messages, sow
from .test_failures import health

pytestmark = pytest.mark.slow

LOST = "ERROR server.cluster: Redis lost the cluster's shared log"


async def serving_sows(nodes: list[ServerProcess]) -> list[dict[Any, Any]]:
    """The SOW of orders on every node that answers ``/healthz`` 200 before and after the query."""
    sows = []
    for node in nodes:
        if health(node.http) != 200:
            continue
        try:
            records = await sow(node, "orders")
        except (OSError, websockets.InvalidStatus, websockets.ConnectionClosed, TimeoutError):
            continue
        if health(node.http) == 200:
            sows.append(records)
    return sows


async def agreed(nodes: list[ServerProcess], expected: int, timeout: float = 40.0) -> dict[Any, Any]:
    """Watch the nodes until all of them serve ``expected`` records; at every look, every node
    that serves must serve the same SOW."""
    deadline = time.monotonic() + timeout
    while True:
        sows = await serving_sows(nodes)
        assert all(s == sows[0] for s in sows), f"nodes serving different SOWs: {[len(s) for s in sows]}"
        if len(sows) == len(nodes) and len(sows[0]) == expected:
            return sows[0]
        assert time.monotonic() < deadline, f"not settled: {[len(s) for s in sows]} of {len(nodes)} serving"
        await asyncio.sleep(0.1)


async def feed(node: ServerProcess, first: int, last: int) -> Client:
    """Publishes of records ``first`` to ``last`` with sequences, each persisted, as ``feed``."""
    publisher = await Client.connect(node.url)
    await publisher.request({"c": "logon", "client_name": "feed", "cid": "l"})
    for s in range(first, last + 1):
        command = {"c": "publish", "t": "orders", "data": {"id": s}, "s": s, "cid": s, "a": "persisted"}
        await publisher.request(command, "persisted")
    return publisher


async def close_code(client: Client) -> int | None:
    """How the server closed ``client``'s socket (reading whatever came before)."""
    try:
        while True:
            await client.recv(timeout=10)
    except websockets.ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd is not None else None


def lost_lines(nodes: list[ServerProcess]) -> list[str]:
    return [line for node in nodes for line in node.lines if LOST in line]


async def back_in_service(nodes: list[ServerProcess], last: int) -> None:
    """The cluster has every record up to ``last`` and every sequence: a publisher that sends its
    last one again gets ``duplicate``, the next is accepted everywhere."""
    publisher = await Client.connect(nodes[-1].url)
    logon = await publisher.request({"c": "logon", "client_name": "feed", "cid": "l"})
    assert logon[-1]["s"] == last
    again = {"c": "publish", "t": "orders", "data": {"id": last, "v": "again"}, "s": last, "cid": "a"}
    assert (await publisher.request(again))[-1]["reason"] == "duplicate"
    await publisher.request(
        {"c": "publish", "t": "orders", "data": {"id": last + 1}, "s": last + 1, "cid": "n"}
    )
    assert sorted(await agreed(nodes, last + 1)) == list(range(1, last + 2))


@pytest.mark.parametrize("how", ["restarted empty", "flushed"])
async def test_redis_that_loses_everything_does_not_split_the_cluster(
    start_node: StartNode, redis_server: RedisProcess, how: str
) -> None:
    nodes = [start_node() for _ in range(2)]
    watcher = await Client.connect(nodes[1].url)
    await watcher.request({"c": "sow_and_subscribe", "t": "orders", "sub_id": "w", "cid": "q"})
    publisher = await feed(nodes[0], 1, 20)
    await agreed(nodes, 20)
    if how == "flushed":
        redis_server.client().flushall()
    else:
        redis_server.restore()  # no files: what a Redis without appendonly holds after a restart
    nodes.append(start_node(ready=False))  # a node started afterwards
    await agreed(nodes, 20)
    lines = lost_lines(nodes)
    assert lines and "re-seed" in lines[0], "\n".join(node.output() for node in nodes)
    # The re-seed kept who holds the client name: another user may not take it while it is held
    # (once every node's liveness key is back), its own user takes it over.
    for _ in range(100):
        if len(list(redis_server.client().scan_iter("{test}:node:*"))) == len(nodes):
            break
        await asyncio.sleep(0.1)
    other = await Client.connect(nodes[-1].url)
    refused = await other.request({"c": "logon", "client_name": "feed", "user_id": "mallory", "cid": "l"})
    assert refused[-1]["reason"].startswith("name in use")
    await back_in_service(nodes, 20)
    assert await close_code(publisher) == 4002
    # A subscription through it all: every record once, nothing from the re-seed (its node's
    # state went into it unchanged).
    seen = data_messages(await watcher.until(lambda m: m.get("data") == {"id": 21}))
    assert [m["data"] for m in seen] == [{"id": i} for i in range(1, 22)]


async def test_redis_restored_from_an_old_dump_is_re_seeded_with_what_the_nodes_applied(
    start_node: StartNode, redis_server: RedisProcess
) -> None:
    nodes = [start_node() for _ in range(2)]
    await feed(nodes[0], 1, 10)
    redis_server.kill()
    dump = redis_server.files()  # the shared log up to record 10
    redis_server.start()
    for node in nodes:
        wait_ready(node)
    await feed(nodes[1], 11, 20)
    await agreed(nodes, 20)
    redis_server.restore(dump)  # the stream now ends before what the nodes applied
    nodes.append(start_node(ready=False))
    await agreed(nodes, 20)
    lines = lost_lines(nodes)
    assert any("stream of topic 'orders' ends at" in line for line in lines), "\n".join(lines)
    await back_in_service(nodes, 20)


async def test_redis_restarted_with_its_data_raises_no_alarm(
    start_node: StartNode, redis_server: RedisProcess
) -> None:
    nodes = [start_node() for _ in range(2)]
    await feed(nodes[0], 1, 10)
    redis_server.kill()  # appendonly with appendfsync always: every acked change is on disk
    redis_server.start()
    for node in nodes:
        wait_ready(node)
    await feed(nodes[1], 11, 20)
    nodes.append(start_node())
    await agreed(nodes, 20)
    assert lost_lines(nodes) == []
    await back_in_service(nodes, 20)
