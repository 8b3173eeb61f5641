"""The sink's transactions and trigger-time stamps, against a real server (and a real Spark)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from pyspark.sql import SparkSession
from websockets.sync.client import ClientConnection

from spark_feeds import files
from spark_feeds.sink import ProtocolSink

from ..integration.server_process import ServerProcess
from .test_feeds import drop_json, sow, watch


def frames(ws: ClientConnection, quiet: float = 1.0) -> list[list[dict[str, Any]]]:
    """Every frame that arrives until ``quiet`` seconds pass without one."""
    got: list[list[dict[str, Any]]] = []
    try:
        while True:
            got.append(orjson.loads(ws.recv(timeout=quiet)))
    except TimeoutError:
        return got


def transactions(received: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """The ``p`` messages of each transaction, checking that each begins and ends in one frame and
    that no change arrives outside one (a frame may hold several)."""
    found = []
    for frame in received:
        current: list[dict[str, Any]] | None = None
        for message in frame:
            if message["c"] == "tx_begin":
                assert current is None
                current, tx = [], message["tx"]
            elif message["c"] == "tx_end":
                assert current is not None and message["tx"] == tx
                found.append(current)
                current = None
            elif message["c"] == "p":
                assert current is not None, f"a change outside a transaction: {message}"
                current.append(message)
        assert current is None, "a transaction is one frame"
    return found


def test_each_group_is_one_transaction_and_a_replay_changes_nothing(server: ServerProcess) -> None:
    sink = ProtocolSink(server.url, "orders", "spark:tx", transactions="batch", max_tx_commands=4)
    rows = [orjson.dumps({"order": n, "qty": n}) for n in range(10)]
    with watch(server, "orders") as watcher:
        assert sink.publish_transactions([rows[:6], rows[6:]], batch_id=0) == 3  # 4 + 2, then 4
        sizes = [len(tx) for tx in transactions(frames(watcher))]
        assert sizes == [4, 2, 4]
        assert sink.publish_transactions([rows[:6], rows[6:]], batch_id=0) == 0, "skipped: on disk"
        assert frames(watcher) == []
    assert sorted(r["order"] for r in sow(server, "orders")) == list(range(10))


def test_a_transaction_never_outgrows_a_frame(server: ServerProcess) -> None:
    sink = ProtocolSink(server.url, "orders", "spark:tx-small", transactions="batch", frame_bytes=300)
    rows = [orjson.dumps({"order": n, "pad": "x" * 40}) for n in range(9)]
    with watch(server, "orders") as watcher:
        sent = sink.publish_transactions([rows], batch_id=0)
        found = transactions(frames(watcher))
    assert sent == len(found) > 1
    assert sum(len(tx) for tx in found) == 9


def test_a_refused_row_refuses_its_whole_transaction(server: ServerProcess) -> None:
    sink = ProtocolSink(server.url, "orders", "spark:tx-bad", transactions="batch")
    rows = [orjson.dumps({"order": 1}), orjson.dumps({"qty": 1})]  # the second has no key
    with pytest.raises(Exception, match=r"cmds\[1\]"):
        sink.publish_transactions([rows], batch_id=0)
    assert sow(server, "orders") == []


@pytest.mark.slow
def test_a_file_feed_sends_partitions_as_stamped_transactions(
    spark: SparkSession, server: ServerProcess, tmp_path: Path
) -> None:
    incoming = tmp_path / "incoming"
    drop_json(incoming, "a.json", [{"order": n, "qty": n} for n in range(30)])
    drop_json(incoming, "b.json", [{"order": 100 + n, "qty": n} for n in range(20)])
    args = files.parse_args(
        [
            *("--url", server.url, "--topic", "orders", "--path", str(incoming), "--format", "json"),
            *("--checkpoint", str(tmp_path / "checkpoint"), "--transactions", "partition"),
            *("--stamp", "trigger_ts", "--schema", "order LONG, qty LONG"),
        ]
    )
    with watch(server, "orders") as watcher:
        files.start(spark, args).awaitTermination(120)
        found = transactions(frames(watcher))
    assert sorted(len(tx) for tx in found) == [20, 30], "one transaction per file's partition"
    stamps = {m["data"]["trigger_ts"] for tx in found for m in tx}
    assert len(stamps) == 1, "every row of the micro-batch carries its one trigger time"
    trigger = datetime.fromisoformat(stamps.pop())
    assert trigger.tzinfo is not None
    assert abs((datetime.now(trigger.tzinfo) - trigger).total_seconds()) < 120
