"""A real local SparkSession, started once for the session (UI off, one shuffle partition): an xdist
worker that runs several of the modules that use it starts one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_feeds import classes

from ..integration.server_process import ServerProcess, running

TOPICS = [
    {"name": "orders", "key": ["/order"], "durable": True},
    {"name": "positions", "key": ["/trader"]},
]


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = (
        SparkSession.builder.master("local[2]")
        .appName("sowpush tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.streaming.schemaInference", "true")
        .config("spark.driver.extraJavaOptions", classes.java_options())  # as a feed's JVM starts
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    with running(tmp_path, TOPICS) as process:
        yield process
