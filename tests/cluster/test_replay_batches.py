"""A cluster's bookmark replay reads its topic's stream in Redis a batch at a time (runtime/
redis_log.py ``read``): each batch is read when the replay asks for it, and batches of large
entries hold about ``REPLAY_BYTES`` (as many as fit at the size of the largest entry of the batch
before), not ``READ_COUNT`` entries."""

from __future__ import annotations

import time

import orjson

from server.core.broker.changelog import lsn_of
from server.core.settings.config import parse_config
from server.runtime import redis_log
from server.runtime.hub import Hub

from .conftest import TOPICS
from .redis_process import RedisProcess


async def test_a_replay_reads_the_stream_a_bounded_batch_at_a_time(redis_server: RedisProcess) -> None:
    config = parse_config({"topic": TOPICS, "cluster": {"redis_url": redis_server.url, "name": "replay"}})
    cluster = Hub(config, time.time, node="node-a").cluster
    assert cluster is not None
    key = cluster.stream_key("orders")
    base = 1_800_000_000_000
    ids = []
    for n in range(300):
        pad = "x" * (10_000 if n >= 100 else 10)  # small entries first, then 10 KB ones
        payload = [0, "p", "orders", str(n), {"id": n, "pad": pad}, None, None, base / 1000 + n, None]
        fields = {"e": orjson.dumps(payload), "o": "node-a"}
        ids.append(await cluster.redis.xadd(key, fields, id=f"{base + n}-0"))
    lsns = [lsn_of(entry_id.decode()) for entry_id in ids]
    try:
        batches = [batch async for batch in cluster.read("orders", lsns[9], None, lsns[-1])]
        assert [entry.lsn for batch in batches for entry in batch] == lsns[10:]
        assert [entry.data["id"] for batch in batches for entry in batch] == list(range(10, 300))
        sizes = [len(batch) for batch in batches]
        first_large = next(n for n, batch in enumerate(batches) if batch[-1].data["id"] >= 100)
        assert sizes[: first_large + 1] == [4, 8, 16, 32, 64][: first_large + 1], "growing twofold"
        # Each batch after the one that took the first large entries holds about REPLAY_BYTES.
        assert all(size * 10_000 <= redis_log.REPLAY_BYTES for size in sizes[first_large + 1 :]), sizes
        assert len(sizes) > first_large + 5
        since = [batch async for batch in cluster.read("orders", 0, (base + 250) / 1000, lsns[-1])]
        assert [entry.data["id"] for batch in since for entry in batch] == list(range(250, 300))
        upto = [batch async for batch in cluster.read("orders", 0, None, lsns[49])]
        assert [entry.data["id"] for batch in upto for entry in batch] == list(range(50))
    finally:
        await cluster.redis.aclose()
