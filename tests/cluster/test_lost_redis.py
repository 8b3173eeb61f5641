"""Redis that loses the shared log (docs/protocol.md, Cluster): restarted empty (no ``appendonly``),
flushed, or restored from an old dump. The nodes that hold the newer state say so in one ERROR line
and re-seed Redis from it; no node that answers ``/healthz`` 200 ever serves a state the one log
did not pass through (agreement.py: lagging is allowed, diverging never), and nothing any node
still held is lost. Redis restarted with its data raises no alarm."""

from __future__ import annotations

from typing import Any

import pytest
import websockets

from ..integration.client import Client
from ..integration.server_process import ServerProcess
from ..waiting import HANG_S, eventually_async
from .agreement import OneLog, settled
from .conftest import StartNode, wait_ready
from .redis_process import RedisProcess
from .test_cluster import data_messages

pytestmark = pytest.mark.slow

LOST = "ERROR server.cluster: Redis lost the cluster's shared log"


async def feed(node: ServerProcess, log: OneLog, first: int, last: int) -> Client:
    """Publishes of records ``first`` to ``last`` with sequences, each persisted, as ``feed``."""
    publisher = await Client.connect(node.url)
    await publisher.request({"c": "logon", "client_name": "feed", "cid": "l"})
    for s in range(first, last + 1):
        command = {"c": "publish", "t": "orders", "data": {"id": s}, "s": s, "cid": s, "a": "persisted"}
        await publisher.request(command, "persisted")
        log.published({"id": s})
    return publisher


async def agreed(nodes: list[ServerProcess], log: OneLog) -> dict[Any, Any]:
    """Every node that answers ``/healthz`` 200 serves a state of the one log (lagging is
    allowed, diverging never), until all of them serve its last."""
    return await settled(nodes, "orders", log, serving_only=True)


async def close_code(client: Client) -> int | None:
    """How the server closed ``client``'s socket (reading whatever came before)."""
    try:
        while True:
            await client.recv(timeout=HANG_S)
    except websockets.ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd is not None else None


def lost_lines(nodes: list[ServerProcess]) -> list[str]:
    return [line for node in nodes for line in node.lines if LOST in line]


async def back_in_service(nodes: list[ServerProcess], log: OneLog, last: int) -> None:
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
    log.published({"id": last + 1})
    assert sorted(await agreed(nodes, log)) == list(range(1, last + 2))


@pytest.mark.parametrize("how", ["restarted empty", "flushed"])
async def test_redis_that_loses_everything_does_not_split_the_cluster(
    start_node: StartNode, redis_server: RedisProcess, how: str
) -> None:
    nodes = [start_node() for _ in range(2)]
    watcher = await Client.connect(nodes[1].url)
    await watcher.request({"c": "sow_and_subscribe", "t": "orders", "sub_id": "w", "cid": "q"})
    log = OneLog()
    publisher = await feed(nodes[0], log, 1, 20)
    await agreed(nodes, log)
    if how == "flushed":
        redis_server.client().flushall()
    else:
        redis_server.restore()  # no files: what a Redis without appendonly holds after a restart
    # A node started afterwards loads what Redis holds (nothing) until the others re-seed it: the
    # one log itself went back, so until then that node may serve its past (never another state).
    log.floor = 0
    nodes.append(start_node(ready=False))
    await agreed(nodes, log)
    lines = lost_lines(nodes)
    assert lines and "re-seed" in lines[0], "\n".join(node.output() for node in nodes)

    # The re-seed kept who holds the client name: another user may not take it while it is held
    # (once every node's liveness key is back), its own user takes it over.
    async def every_node_alive() -> bool:
        return len(list(redis_server.client().scan_iter("{test}:node:*"))) == len(nodes)

    await eventually_async(every_node_alive, "every node's liveness key back in Redis")
    other = await Client.connect(nodes[-1].url)
    refused = await other.request({"c": "logon", "client_name": "feed", "user_id": "mallory", "cid": "l"})
    assert refused[-1]["reason"].startswith("name in use")
    await back_in_service(nodes, log, 20)
    assert await close_code(publisher) == 4002
    # A subscription through it all: every record once, nothing from the re-seed (its node's
    # state went into it unchanged).
    seen = data_messages(await watcher.until(lambda m: m.get("data") == {"id": 21}))
    assert [m["data"] for m in seen] == [{"id": i} for i in range(1, 22)]


async def test_redis_restored_from_an_old_dump_is_re_seeded_with_what_the_nodes_applied(
    start_node: StartNode, redis_server: RedisProcess
) -> None:
    nodes = [start_node() for _ in range(2)]
    log = OneLog()
    await feed(nodes[0], log, 1, 10)
    redis_server.kill()
    dump = redis_server.files()  # the shared log up to record 10
    redis_server.start()
    for node in nodes:
        wait_ready(node)
    await feed(nodes[1], log, 11, 20)
    await agreed(nodes, log)
    redis_server.restore(dump)  # the stream now ends before what the nodes applied
    log.floor = 10  # a node started now may serve the dump's state until the others re-seed Redis
    nodes.append(start_node(ready=False))
    await agreed(nodes, log)
    lines = lost_lines(nodes)
    assert any("stream of topic 'orders' ends at" in line for line in lines), "\n".join(lines)
    await back_in_service(nodes, log, 20)


async def test_redis_restarted_with_its_data_raises_no_alarm(
    start_node: StartNode, redis_server: RedisProcess
) -> None:
    nodes = [start_node() for _ in range(2)]
    log = OneLog()
    await feed(nodes[0], log, 1, 10)
    redis_server.kill()  # appendonly with appendfsync always: every acked change is on disk
    redis_server.start()
    for node in nodes:
        wait_ready(node)
    await feed(nodes[1], log, 11, 20)
    nodes.append(start_node())
    await agreed(nodes, log)
    assert lost_lines(nodes) == []
    await back_in_service(nodes, log, 20)
