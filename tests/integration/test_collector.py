"""A node freezes the state it has loaded before it listens (server/runtime/collector.py), so that
no collection of the garbage collector walks it while sockets wait."""

from __future__ import annotations

import re
from pathlib import Path

from .server_process import ServerProcess, write_config
from .test_durability import publish_and_persist

FROZEN = re.compile(r"collector: (\d+) objects frozen after start-up")
RECORDS = 5_000


def frozen(server: ServerProcess) -> int:
    """The objects the server froze as it started (its line comes before ``listening on``)."""
    found = FROZEN.findall(server.output())
    assert len(found) == 1, server.output()
    return int(found[0])


async def test_the_records_a_node_loads_from_its_log_are_frozen_before_it_listens(tmp_path: Path) -> None:
    topics = [{"name": "orders", "key": ["/id"], "durable": True}]
    config = write_config(tmp_path / "durable.toml", {}, topics)
    first = ServerProcess(config, tmp_path / "data")
    try:
        empty = frozen(first)
        await publish_and_persist(first.url, range(RECORDS))
    finally:
        first.stop()
    again = ServerProcess(config, tmp_path / "data")
    try:
        assert frozen(again) >= empty + RECORDS, "every record version loaded is frozen"
    finally:
        again.stop()
