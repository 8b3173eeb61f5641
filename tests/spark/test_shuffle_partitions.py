"""A feed of one's own shuffles into few partitions (README, Your own job): the library's session
helper chooses them for the master it runs on, and ``publish_stream`` says so, in one warning
line, when a local session would run Spark's default 200 tasks a micro-batch."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_feeds.session import shuffle_partitions
from spark_feeds.stream import publish_stream, stop_queries

from ..integration.server_process import ServerProcess


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
