"""The snapshots a cluster's nodes start from (runtime/redis_log.py), against a real Redis: a node
that lags never puts back an older snapshot whose stream tail a newer one's trim removed."""

from __future__ import annotations

import time

import redis

from server.core.engine import Engine
from server.core.log.local import LocalLog
from server.core.settings.config import parse_config
from server.core.sow.txlog import PUBLISH, LogEntry
from server.runtime.hub import Hub
from server.runtime.redis_log import RedisLog

from .redis_process import RedisProcess


def node(redis_server: RedisProcess, name: str) -> RedisLog:
    config = parse_config(
        {
            "topic": [{"name": "orders", "key": ["/id"]}],
            "cluster": {"redis_url": redis_server.url, "name": "snap", "retention": "1ms"},
        }
    )
    assert config.cluster is not None
    cluster = Hub(config, time.time, node=name).cluster  # the SharedLog, the engine built with it
    assert cluster is not None
    return cluster


def append(client: redis.Redis, first: int, last: int) -> None:
    """Publishes of records ``first`` to ``last``, as a node's script would append them."""
    engine = Engine(parse_config({"topic": [{"name": "orders", "key": ["/id"]}]}), time.time, LocalLog)
    spec = engine.broker.topics["orders"].key_spec
    assert spec is not None
    for n in range(first, last + 1):
        data = {"id": n}
        entry = LogEntry(0, PUBLISH, "orders", spec.sow_key(data), data, None, None, time.time(), None)
        client.xadd("{snap}:stream:orders", {"e": entry.encode(), "o": "elsewhere:1"})


def orders(log: RedisLog) -> list[int]:
    return sorted(version.data["id"] for version in log.engine.broker.topics["orders"].records.values())


async def test_a_lagging_node_does_not_put_back_an_older_snapshot(redis_server: RedisProcess) -> None:
    client = redis_server.client()
    append(client, 1, 5)
    lagging = node(redis_server, "lagging")
    await lagging._load()  # it has applied 1-5 and then stops reading
    append(client, 6, 10)
    ahead = node(redis_server, "ahead")
    await ahead._load()
    await ahead.snapshots.write_all()  # as of record 10, and the stream trimmed up to it
    time.sleep(0.01)
    await lagging.snapshots.write_all()  # as of record 5: older, so not written
    assert client.xlen("{snap}:stream:orders") < 10
    starting = node(redis_server, "starting")
    await starting._load()
    assert orders(starting) == list(range(1, 11))
    for log in (lagging, ahead, starting):
        await log.redis.aclose()
