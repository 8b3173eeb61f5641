"""A long-running query outlives a server restart: the sink reconnects, the query never fails, and
every row reaches the (durable) topic exactly once. A real server, stopped and started again on
its port, and a real local Spark."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import orjson
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from spark_feeds.stream import publish_stream

from ..integration.server_process import sow_records
from ..waiting import HANG_S, eventually
from .test_sink_connection import Restartable, restartable  # noqa: F401 - the fixture


class Watcher:
    """A subscriber to ``orders`` in a thread: the keys of its snapshot, and of every change after."""

    def __init__(self, url: str) -> None:
        self.snapshot: set[int] = set()
        self.changes: list[int] = []
        self.ready = threading.Event()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(url,), daemon=True)
        self.thread.start()
        assert self.ready.wait(HANG_S)

    def _run(self, url: str) -> None:
        with connect(url, open_timeout=HANG_S, ping_interval=None) as ws:
            ws.send(orjson.dumps({"c": "sow_and_subscribe", "t": "orders", "sub_id": "w"}).decode())
            while not self.done.is_set():
                try:
                    messages = orjson.loads(ws.recv(timeout=0.2))
                except TimeoutError:
                    continue
                except ConnectionClosed:
                    return  # the server went away
                for message in messages:
                    if message["c"] == "sow":
                        self.snapshot.add(message["data"]["order"])
                    elif message["c"] == "group_end":
                        self.ready.set()
                    elif message["c"] == "p":
                        self.changes.append(message["data"]["order"])

    def stop(self) -> None:
        self.done.set()
        self.thread.join(HANG_S)


@pytest.mark.slow
def test_a_query_rides_out_a_server_restart_and_delivers_every_row_once(
    spark: SparkSession,
    restartable: Restartable,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    rate = spark.readStream.format("rate").option("rowsPerSecond", 40).option("numPartitions", 1).load()
    rows = rate.select(F.col("value").alias("order"), F.col("timestamp").cast("string").alias("at"))
    query = publish_stream(
        rows, url=restartable.url, topic="orders", checkpoint=tmp_path / "checkpoint", trigger=0.5, retry_s=60
    )
    try:
        before = Watcher(restartable.url)
        eventually(lambda: len(before.changes) >= 40, "the feed published nothing")
        restartable.stop()
        before.stop()
        time.sleep(2)  # micro-batches meanwhile find no server, and wait for it
        restartable.start()
        after = Watcher(restartable.url)

        def came_back() -> bool:
            assert query.isActive, f"the query failed: {query.exception()}"
            return len(after.changes) >= 80

        eventually(came_back, "the feed did not come back")
        assert query.isActive and query.exception() is None
    finally:
        query.stop()
        after.stop()
    stored = sorted(r["order"] for r in sow_records(restartable.url, "orders"))
    assert stored == list(range(len(stored))), "every row, none missing"
    assert len(after.changes) == len(set(after.changes)), "each change delivered once"
    assert not set(after.changes) & after.snapshot, "nothing the server had was applied again"
    assert not set(after.changes) & set(before.changes)
