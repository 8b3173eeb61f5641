"""A cluster node freezes what it loaded from Redis (server/runtime/collector.py), once it has
collected what loading left behind: a full collection of its own, not one that walks nothing."""

from __future__ import annotations

import re

from server.client import Publisher

from ..waiting import HANG_S, eventually
from .conftest import StartNode, wait_ready

LOADED = re.compile(r"collector: (\d+) objects frozen after loading (\d+) records from Redis \((\d+) freed")
RECORDS = 3_000


async def test_a_node_freezes_the_records_it_loads_from_redis(start_node: StartNode) -> None:
    first = start_node()
    publisher = Publisher(first.url, "writer")
    await publisher.connect()
    await publisher.publish_many("orders", [{"id": n} for n in range(RECORDS)])
    await publisher.wait_persisted(timeout=HANG_S)
    await publisher.close()
    second = start_node()
    wait_ready(second)
    # The freeze follows the load's log line by a collection: its line may come a moment later.
    found = eventually(lambda: LOADED.findall(second.output()), second.output)
    assert len(found) == 1, second.output()
    frozen, records, _freed = map(int, found[0])
    assert records == RECORDS and frozen > RECORDS
