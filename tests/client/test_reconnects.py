"""The Python clients cut off by a real server: the subscriber closed as a slow consumer (4001), the
publisher by a server restart (1001). Each says in one log line why the connection was lost (the
server's close code and reason) and that it is reconnecting, then that it is back; and nothing is
lost (the view is the server's SOW again, every publish is on disk)."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

import pytest

from server.client import Publisher, Subscriber

from ..browser.feed import publish
from ..integration.server_process import ServerProcess, sow_records, write_config
from ..waiting import HANG_S, eventually_async, until

PAD = "x" * 400


async def logged(caplog: pytest.LogCaptureFixture, *parts: str) -> logging.LogRecord:
    """The first record of the client's logger holding every one of ``parts``, once there is one."""

    def found() -> logging.LogRecord | None:
        return next(
            (
                record
                for record in caplog.records
                if record.name == "server.client" and all(p in record.getMessage() for p in parts)
            ),
            None,
        )

    async def check() -> logging.LogRecord | None:
        return found()

    return await eventually_async(check, f"no client log line with {parts}", step=0.02)


@pytest.mark.slow
async def test_a_subscriber_closed_as_a_slow_consumer_says_so_and_comes_back_whole(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="server.client")
    # (heartbeat_s: the stalled subscriber answers no ping while it is held, however long that is)
    limits = {"queue_max_bytes": 200_000, "queue_max_messages": 1000, "heartbeat_s": 600}
    topics = [{"name": "orders", "key": ["/order"], "conflation": "off"}]  # off: a full queue closes
    server = ServerProcess(write_config(tmp_path / "server.toml", limits, topics), tmp_path / "data")
    subscriber = Subscriber(server.url, client_name="risk")
    try:
        await subscriber.connect()
        view = subscriber.subscribe("orders")
        await view.ready()
        closed = threading.Event()

        def flood() -> None:
            """Publish until the server has closed the subscriber, which does not read meanwhile."""
            for update in range(2000):  # (a hang guard: the close comes far sooner)
                if any("with 4001" in line for line in list(server.lines)):
                    break
                publish(server, *[{"order": n, "u": update, "pad": PAD} for n in range(200)])
            closed.set()

        flooding = threading.Thread(target=flood)
        flooding.start()
        # The subscriber's event loop is held here: it reads nothing until the server has closed it.
        assert closed.wait(HANG_S), "the server never closed the stalled subscriber"
        flooding.join()
        lost = await logged(caplog, "subscriber risk at", "4001", "reconnecting")
        assert lost.levelno == logging.WARNING
        assert "the server closed the connection: 4001" in lost.getMessage()
        await logged(caplog, "subscriber risk at", "reconnected")
        await asyncio.to_thread(publish, server, {"order": "last"})
        await until(lambda: "last" in {str(r["order"]) for r in view.records.values()})
        expected = {str(record["order"]): record for record in sow_records(server.url, "orders")}
        assert {str(record["order"]): record for record in view.records.values()} == expected
    finally:
        await subscriber.close()
        server.stop()


@pytest.mark.slow
async def test_a_publisher_cut_off_by_a_restart_says_so_and_loses_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="server.client")
    config = write_config(tmp_path / "server.toml", {}, [{"name": "orders", "key": ["/id"], "durable": True}])
    first = ServerProcess(config, tmp_path / "data")
    publisher = Publisher(first.url, "feed")
    second: ServerProcess | None = None
    try:
        await publisher.connect()
        total = 50_000
        sending = asyncio.create_task(publisher.publish_many("orders", [{"id": n} for n in range(total)]))
        await until(lambda: publisher.persisted_seq > 0)  # some of it is on disk
        await asyncio.to_thread(first.stop)  # SIGTERM: the server closes every socket, then exits
        lost = await logged(caplog, "publisher feed at", "reconnecting")
        assert "the server closed the connection: 1001" in lost.getMessage(), lost.getMessage()
        second = ServerProcess(config, tmp_path / "data", port=first.port)
        await sending
        await publisher.wait_persisted(timeout=HANG_S)
        await logged(caplog, "publisher feed at", "reconnected")
        assert sorted(record["id"] for record in sow_records(second.url, "orders")) == list(range(total))
    finally:
        await publisher.close()
        if second is not None:
            second.stop()
