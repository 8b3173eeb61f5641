"""Spark feeds against a real server with a real local SparkSession."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from py4j.protocol import Py4JError
from pyspark.sql import SparkSession
from websockets.sync.client import ClientConnection, connect

from spark_feeds import demo, files
from spark_feeds.session import shuffle_partitions
from spark_feeds.sink import FeedError, ProtocolSink, client_name_for
from spark_feeds.stream import publish_stream, stop_queries

from ..integration.server_process import ServerProcess, sow_records
from ..waiting import HANG_S, eventually


def sow(server: ServerProcess, topic: str) -> list[dict[str, Any]]:
    return sow_records(server.url, topic)


@contextmanager
def watch(server: ServerProcess, topic: str) -> Iterator[ClientConnection]:
    with connect(server.url, open_timeout=HANG_S, ping_interval=None) as ws:
        ws.send(orjson.dumps({"c": "subscribe", "t": topic, "cid": "w"}).decode())
        ws.recv(timeout=HANG_S)
        yield ws


def delivered(ws: ClientConnection, quiet: float = 1.0) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    try:
        while True:
            got += [m for m in orjson.loads(ws.recv(timeout=quiet)) if m.get("c") == "p"]
    except TimeoutError:
        return got


def test_the_sink_publishes_a_batch_and_a_replayed_batch_changes_nothing(server: ServerProcess) -> None:
    sink = ProtocolSink(server.url, "orders", "spark:test")
    with watch(server, "orders") as watcher:
        assert sink.publish_rows([{"order": n, "qty": n} for n in range(3)], batch_id=0) == 3
        assert len(delivered(watcher)) == 3
        assert sink.publish_rows([{"order": n, "qty": n} for n in range(3)], batch_id=0) == 0, (
            "skipped: on disk"
        )
        assert delivered(watcher) == []
        assert sink.publish_rows([{"order": 9, "qty": 9}], batch_id=1) == 1
        assert [m["data"]["order"] for m in delivered(watcher)] == [9]
    with pytest.raises(FeedError, match="bad message"):
        sink.publish_rows([{"qty": 1}], batch_id=2)


def drop_json(directory: Path, name: str, records: list[dict[str, Any]]) -> None:
    """A JSON-lines file of ``records`` arriving in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text("\n".join(orjson.dumps(record).decode() for record in records))


def files_args(
    server: ServerProcess, tmp_path: Path, fmt: str, trigger: str = "available-now"
) -> argparse.Namespace:
    return files.parse_args(
        [
            "--url",
            server.url,
            "--topic",
            "orders",
            "--path",
            str(tmp_path / "incoming"),
            "--format",
            fmt,
            "--checkpoint",
            str(tmp_path / "checkpoint"),
            "--trigger",
            trigger,
        ]
    )


def run(spark: SparkSession, args: argparse.Namespace) -> None:
    files.start(spark, args).awaitTermination(120)


@pytest.mark.slow
def test_json_and_csv_files_land_in_the_sow(
    spark: SparkSession, server: ServerProcess, tmp_path: Path
) -> None:
    drop_json(tmp_path / "incoming", "a.json", [{"order": n, "qty": n * 10} for n in range(5)])
    run(spark, files_args(server, tmp_path, "json"))
    assert sorted(r["order"] for r in sow(server, "orders")) == [0, 1, 2, 3, 4]

    csv_dir = tmp_path / "csv"
    (csv_dir / "incoming").mkdir(parents=True)
    (csv_dir / "incoming" / "b.csv").write_text("order,qty,side\n10,5,B\n11,6,S\n")
    run(spark, files_args(server, csv_dir, "csv"))
    records = {r["order"]: r for r in sow(server, "orders")}
    assert records[10] == {"order": 10, "qty": 5, "side": "B"}


@pytest.mark.slow
def test_a_replayed_micro_batch_delivers_nothing_twice(
    spark: SparkSession, server: ServerProcess, tmp_path: Path
) -> None:
    drop_json(tmp_path / "incoming", "a.json", [{"order": n, "v": 1} for n in range(20)])
    args = files_args(server, tmp_path, "json")
    run(spark, args)
    commit_dir = tmp_path / "checkpoint" / "commits"
    last = max((p for p in commit_dir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    last.unlink()  # as if the driver died after the batch but before Spark committed it
    (commit_dir / f".{last.name}.crc").unlink(missing_ok=True)
    with watch(server, "orders") as watcher:
        run(spark, args)  # Spark runs the uncommitted batch again
        assert (tmp_path / "checkpoint" / "commits" / last.name).exists(), "the batch did run again"
        assert delivered(watcher) == [], "every row of the replayed batch was a duplicate"
    assert len(sow(server, "orders")) == 20


@pytest.mark.slow
def test_a_server_error_fails_the_batch(spark: SparkSession, server: ServerProcess, tmp_path: Path) -> None:
    drop_json(tmp_path / "incoming", "bad.json", [{"qty": 1}])  # no /order: no key
    query = files.start(spark, files_args(server, tmp_path, "json"))
    with pytest.raises(Exception, match="bad message"):
        query.awaitTermination(120)


@pytest.mark.slow
def test_the_demo_pipelines_feed_positions_and_orders(
    spark: SparkSession, server: ServerProcess, tmp_path: Path
) -> None:
    args = demo.parse_args(
        [
            *("--url", server.url, "--checkpoint", str(tmp_path), "--trigger-seconds", "0.5"),
            *("--orders-per-second", "400", "--trades-per-second", "200", "--book", "200"),
        ]
    )
    queries = demo.start(spark, args)
    try:
        eventually(
            lambda: sow(server, "positions") and len(sow(server, "orders")) >= 50, "no positions", step=0.5
        )
        before = {r["trader"]: r["trades"] for r in sow(server, "positions")}

        def traded_since() -> dict[Any, Any] | None:  # the next micro-batches (0.5 s triggers)
            after = {r["trader"]: r["trades"] for r in sow(server, "positions")}
            return after if sum(after.values()) > sum(before.values()) else None

        after = eventually(traded_since, "no trades after the first positions", step=0.5)
    finally:
        for query in queries:
            query.stop()
    positions, orders = sow(server, "positions"), sow(server, "orders")
    fields = {"trader", "position", "avg_px", "mark", "realised_pnl", "unrealised_pnl", "pnl"}
    assert fields <= set(positions[0])
    assert sum(after.values()) > sum(before.values()), "the positions accumulate"
    assert all(after[trader] >= trades for trader, trades in before.items())
    assert len(orders) >= 50 and {"order", "status", "qty", "filled", "side", "account"} <= set(orders[0])
    assert client_name_for(tmp_path / "orders", "orders") == client_name_for(tmp_path / "orders", "orders")


@pytest.mark.slow
def test_the_driver_keeps_no_job_of_a_published_batch(
    spark: SparkSession, server: ServerProcess, tmp_path: Path
) -> None:
    """Spark 4.2 and later file each job under its SQL execution (``activeQueryToJobs``) and let
    go of them when that execution ends. The sink once read a batch with the DataFrame's
    ``toLocalIterator``, whose jobs start after its own execution has ended: the driver kept every
    one, with its plan and its rows, and the demo died of an OutOfMemoryError after minutes. On
    every version, no job of a batch may still be active once the query is over."""
    scheduler = spark.sparkContext._jsc.sc().dagScheduler()
    try:
        filed = scheduler.activeQueryToJobs()  # execution id -> jobs (Spark 4.2 and later)
    except Py4JError:
        filed = None  # Spark 4.1 (the images' version) keeps no such map
    before = set(filed.keySet()) if filed is not None else set()
    for n in range(3):
        drop_json(tmp_path / "incoming", f"{n}.json", [{"order": 10 * n + k, "qty": k} for k in range(5)])
    frame = (
        spark.readStream.schema("order LONG, qty LONG")
        .option("maxFilesPerTrigger", 1)  # a micro-batch a file: three batches
        .json(str(tmp_path / "incoming"))
    )
    query = publish_stream(
        frame, url=server.url, topic="orders", checkpoint=tmp_path / "checkpoint", trigger="available-now"
    )
    query.awaitTermination(120)
    assert query.lastProgress["batchId"] == 2
    assert len(sow(server, "orders")) == 15
    # The scheduler lets go of an execution's jobs on its event thread, soon after it ends.
    eventually(
        lambda: not (scheduler.activeJobs().size() or (filed is not None and set(filed.keySet()) - before)),
        "jobs of the published batches are still held",
    )
    assert scheduler.activeJobs().size() == 0, "jobs of the published batches are still active"
    held = set(filed.keySet()) - before if filed is not None else set()
    assert not held, f"the driver still holds the jobs of SQL executions {sorted(held)}, long over"


# -- a feed of one's own shuffles into few partitions (README, Your own job) ---------------------


def test_a_local_master_shuffles_into_one_partition_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_SHUFFLE_PARTITIONS", raising=False)
    assert shuffle_partitions("local[4]") == "4"
    assert shuffle_partitions("local[3,2]") == "3"  # (with a number of retries)
    assert shuffle_partitions("local") == "1"
    assert int(shuffle_partitions("local[*]")) >= 1
    assert shuffle_partitions("spark://master:7077") == "2"
    monkeypatch.setenv("SPARK_SHUFFLE_PARTITIONS", "16")
    assert shuffle_partitions("local[4]") == "16"


@pytest.fixture
def default_partitions(spark: SparkSession) -> Iterator[SparkSession]:
    """The tests' session as a user's own ``SparkSession.builder...getOrCreate()`` leaves it."""
    kept = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "200")
    yield spark
    spark.conf.set("spark.sql.shuffle.partitions", kept)


def started(spark: SparkSession, server: ServerProcess, checkpoint: Path) -> None:
    ticks = spark.readStream.format("rate").option("rowsPerSecond", 1).load()
    frame = ticks.selectExpr("value AS order")
    query = publish_stream(frame, url=server.url, topic="orders", checkpoint=checkpoint, trigger=60)
    stop_queries([query])


def test_publish_stream_warns_of_spark_s_default_on_a_local_session(
    default_partitions: SparkSession, server: ServerProcess, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="spark_feeds"):
        started(default_partitions, server, tmp_path / "checkpoint")
    [warning] = [r.getMessage() for r in caplog.records if "shuffle.partitions" in r.getMessage()]
    assert warning.startswith("spark.sql.shuffle.partitions is 200 (Spark's default) on local[2]")
    assert "local_session() sets 2" in warning and "SPARK_SHUFFLE_PARTITIONS" in warning


def test_publish_stream_is_quiet_when_the_partitions_were_chosen(
    spark: SparkSession, server: ServerProcess, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="spark_feeds"):
        started(spark, server, tmp_path / "checkpoint")
    assert not [r for r in caplog.records if "shuffle.partitions" in r.getMessage()]
