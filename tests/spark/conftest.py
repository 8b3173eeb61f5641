"""A real local SparkSession, the feeds' own (spark_feeds/session.py), started once for the session:
an xdist worker that runs several of the modules that use it starts one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_feeds.session import local_session

from ..integration.server_process import ServerProcess, running

TOPICS = [
    {"name": "orders", "key": ["/order"], "durable": True},
    {"name": "positions", "key": ["/trader"]},
]


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = local_session("sowpush tests", "local[2]")  # the feeds' own session
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    with running(tmp_path, TOPICS) as process:
        yield process
