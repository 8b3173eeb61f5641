"""The sink's one connection: kept across micro-batches, opened again when the server restarts,
given up with a clear error when the server stays away. Real server processes, no Spark."""

from __future__ import annotations

import logging
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from spark_feeds.sink import FeedError, ProtocolSink

from ..integration.server_process import ServerProcess, sow_records, write_config
from ..waiting import HANG_S
from .conftest import TOPICS


class Restartable:
    """A server that can be stopped and started again on the same port with the same data."""

    def __init__(self, tmp_path: Path) -> None:
        self.config = write_config(tmp_path / "server.toml", {}, TOPICS)
        self.data = tmp_path / "data"
        self.process = ServerProcess(self.config, self.data)
        self.port = self.process.port
        self.url = self.process.url

    def stop(self) -> None:
        self.process.stop()

    def start(self) -> None:
        self.process = ServerProcess(self.config, self.data, port=self.port)


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[Restartable]:
    server = Restartable(tmp_path)
    try:
        yield server
    finally:
        server.stop()


def sockets_named(server: ServerProcess, client_name: str) -> list[dict[str, Any]]:
    """The server's open sockets logged on as ``client_name`` (from /status.json)."""
    with urllib.request.urlopen(server.http + "/status.json", timeout=HANG_S) as response:
        status = orjson.loads(response.read())
    return [s for s in status["slowest"] if s["client_name"] == client_name]


def test_micro_batches_share_one_connection_until_the_sink_is_closed(server: ServerProcess) -> None:
    sink = ProtocolSink(server.url, "orders", "spark:one-socket")
    sink.publish_rows([{"order": 1}], batch_id=0)
    first = sockets_named(server, "spark:one-socket")
    assert len(first) == 1, "the connection stays open between micro-batches"
    sink.publish_rows([{"order": 2}], batch_id=1)
    sink.publish_rows([{"order": 3}], batch_id=2)
    again = sockets_named(server, "spark:one-socket")
    assert [s["session"] for s in again] == [first[0]["session"]], "the same socket"
    assert again[0]["sent"] > first[0]["sent"], "and it carried the later batches"
    sink.close()
    assert sockets_named(server, "spark:one-socket") == []
    assert sorted(r["order"] for r in sow_records(server.url, "orders")) == [1, 2, 3]


def test_a_batch_waits_for_a_restarted_server_and_sends_what_it_lacks(
    restartable: Restartable, caplog: pytest.LogCaptureFixture
) -> None:
    sink = ProtocolSink(restartable.url, "orders", "spark:restart", retry_s=60)
    assert sink.publish_rows([{"order": n} for n in range(3)], batch_id=0) == 3
    restartable.stop()
    back = threading.Timer(1.5, restartable.start)
    back.start()
    with caplog.at_level(logging.INFO, logger="spark_feeds.sink"):
        # The old socket is closed: the batch reconnects, and is sent once the server is back.
        assert sink.publish_rows([{"order": n} for n in range(3, 6)], batch_id=1) == 3
    back.join()
    reconnects = [r.getMessage() for r in caplog.records if "reconnected" in r.getMessage()]
    assert len(reconnects) == 1, reconnects
    assert f"reconnected to {restartable.url} after" in reconnects[0]
    assert sorted(r["order"] for r in sow_records(restartable.url, "orders")) == list(range(6))
    # The restarted server remembers the sequence: batch 0 again is a duplicate, sent by nobody.
    assert sink.publish_rows([{"order": n} for n in range(3)], batch_id=0) == 0
    sink.close()


def test_a_batch_fails_when_the_server_stays_away_for_the_retry_time(restartable: Restartable) -> None:
    sink = ProtocolSink(restartable.url, "orders", "spark:gone", retry_s=2)
    sink.publish_rows([{"order": 1}], batch_id=0)
    restartable.stop()
    gave_up = rf"orders: gave up after 2 s without the server at {restartable.url}"
    with pytest.raises(FeedError, match=gave_up):
        sink.publish_rows([{"order": 2}], batch_id=1)
    restartable.start()  # and the sink is not broken for good: a later batch connects again
    assert sink.publish_rows([{"order": 2}], batch_id=1) == 1
    sink.close()


def test_a_refused_logon_is_not_retried(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "auth.toml",
        {},
        TOPICS,
        extra='\n[auth]\n[[auth.user]]\nuser_id = "feed"\npassword = "right"\nread = ["*"]\nwrite = ["*"]\n',
    )
    process = ServerProcess(config, tmp_path / "data")
    try:
        sink = ProtocolSink(process.url, "orders", "spark:auth", user_id="feed", password="wrong", retry_s=60)
        with pytest.raises(FeedError, match="logon refused: auth failure"):
            sink.publish_rows([{"order": 1}], batch_id=0)
    finally:
        process.stop()
