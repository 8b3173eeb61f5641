"""Re-seeding a Redis that lost the shared log (runtime/redis_seeding.py), against a real Redis:
the newest state any node holds is what the cluster goes on from, and a trim is not a loss."""

from __future__ import annotations

import asyncio

from server.core.broker.changelog import stream_id
from server.core.log.loss import Loss

from .redis_process import RedisProcess
from .test_snapshots import append, node, orders


async def test_the_nodes_re_seed_redis_with_the_newest_state_any_of_them_holds(
    redis_server: RedisProcess,
) -> None:
    client = redis_server.client()
    append(client, 1, 5)
    lagging = node(redis_server, "lagging")
    await lagging._load()  # it has applied 1-5 and then stops reading
    append(client, 6, 10)
    ahead = node(redis_server, "ahead")
    await ahead._load()
    position = ahead.shared.position("orders")
    assert await ahead.seeding.check() is None and await lagging.seeding.check() is None
    client.flushall()
    assert (await lagging.seeding.check()) is not None
    loss = Loss("flushed by the test")
    await asyncio.gather(lagging._reseed(loss), ahead._reseed(loss))
    assert orders(lagging) == orders(ahead) == list(range(1, 11))
    assert lagging.shared.position("orders") == ahead.shared.position("orders") == position
    assert client.get("{snap}:snapshot-id:orders") == stream_id(position).encode()
    assert lagging.seeding.mine == ahead.seeding.mine and lagging.shared.available
    # The cluster goes on after the snapshot's ID, and a node that starts now loads the same.
    append(client, 11, 11)
    starting = node(redis_server, "starting")
    await starting._load()
    assert orders(starting) == list(range(1, 12))
    assert await starting.seeding.check() is None
    for log in (lagging, ahead, starting):
        await log.redis.aclose()


async def test_a_trimmed_stream_is_not_a_lost_one(redis_server: RedisProcess) -> None:
    client = redis_server.client()
    append(client, 1, 5)
    lagging = node(redis_server, "lagging")
    await lagging._load()
    append(client, 6, 10)
    ahead = node(redis_server, "ahead")
    await ahead._load()
    await ahead.snapshots.write_all()  # trims the stream up to record 10, past what lagging applied
    assert client.xlen("{snap}:stream:orders") < 10
    assert await lagging.seeding.check() is None and await ahead.seeding.check() is None
    for log in (lagging, ahead):
        await log.redis.aclose()
