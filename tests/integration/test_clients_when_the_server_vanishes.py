"""Every client of ours when its server goes away mid-read (SIGKILL: no close frame) or refuses its
logon: the Python subscriber reading a live view, the Python publisher reading the acks of a
``publish_many``, and the Spark feeds' sink (no Spark: ``ProtocolSink`` on its own) between and
inside its batches. Each says what happened in one line, and nothing anywhere (any logger, the
websockets library's included, or stderr) carries a stack trace or an "internal error".

The moment of the kill is chosen by events (a change read, an ack read, a batch done), never by
a sleep; the checks do not depend on how fast the machine is."""

from __future__ import annotations

import asyncio
import gc
import http.server
import logging
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.client import Publisher, Subscriber
from spark_feeds.link import LIBRARY_LOG
from spark_feeds.sink import FeedError, ProtocolSink

from ..waiting import HANG_S, until
from .server_process import ServerProcess, auth_section, write_config

TOPICS = [{"name": "orders", "key": ["/order"], "durable": True}]
NOISE = ("Traceback", "internal error", "Task exception was never retrieved", "Exception in thread")


def assert_no_stack_trace(caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> None:
    gc.collect()  # a task that died with an exception says so when it is collected
    for record in caplog.records:
        assert record.exc_info is None, f"a stack trace from {record.name}: {record.getMessage()}"
        for noise in NOISE:
            assert noise not in record.getMessage(), f"{record.name}: {record.getMessage()}"
    err = capfd.readouterr().err
    for noise in NOISE:
        assert noise not in err, f"{noise!r} on stderr:\n{err}"


def lines(caplog: pytest.LogCaptureFixture, logger: str, *parts: str) -> list[str]:
    said = [r.getMessage() for r in caplog.records if r.name == logger]
    return [line for line in said if all(part in line for part in parts)]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(write_config(tmp_path / "server.toml", {}, TOPICS), tmp_path / "data")
    yield process
    process.stop()


@pytest.fixture(autouse=True)
def every_record(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)  # every logger at INFO, as a feed's console shows them


async def test_a_subscriber_reading_a_view_says_its_server_went_away(
    server: ServerProcess, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    feed = Publisher(server.url, "feed")
    await feed.connect()
    subscriber = Subscriber(server.url)
    await subscriber.connect()
    view = subscriber.subscribe("orders")
    await view.ready()
    reader = view.__aiter__()
    for n in range(50):
        await feed.publish_many("orders", [{"order": n, "v": v} for v in range(200)])
    await anext(reader)  # reading the stream
    server.stop(signal.SIGKILL)
    await until(lambda: bool(lines(caplog, "server.client", "subscriber at", "reconnecting")))
    assert lines(caplog, "server.client", "subscriber at", "lost without a close frame")
    await subscriber.close()
    await feed.close()
    assert_no_stack_trace(caplog, capfd)


async def test_a_publisher_reading_its_acks_says_its_server_went_away(
    server: ServerProcess, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    publisher = Publisher(server.url, "feed")
    await publisher.connect()
    sending = asyncio.create_task(publisher.publish_many("orders", [{"order": n} for n in range(100_000)]))
    await until(lambda: publisher.persisted_seq > 0)  # an ack read, more to come
    server.stop(signal.SIGKILL)
    await until(lambda: bool(lines(caplog, "server.client", "publisher feed at", "reconnecting")))
    assert lines(caplog, "server.client", "publisher feed at", "lost without a close frame")
    await sending
    await publisher.close()
    assert_no_stack_trace(caplog, capfd)


async def test_a_subscriber_refused_on_its_reconnect_says_so_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    """Restarted with users and passwords: the subscriber that logged on without is refused."""
    first = ServerProcess(write_config(tmp_path / "open.toml", {}, TOPICS), tmp_path / "data")
    subscriber = Subscriber(first.url)
    await subscriber.connect()
    first.stop(signal.SIGKILL)
    user = {"user_id": "desk", "password": "d", "read": ["*"], "write": ["*"]}
    closed = write_config(tmp_path / "closed.toml", {}, TOPICS, auth_section(user))
    second = ServerProcess(closed, tmp_path / "data", port=first.port)
    try:
        await until(lambda: bool(lines(caplog, "server.client", "refused the logon")))
        [refused] = lines(caplog, "server.client", "refused the logon")
        assert refused.startswith("subscriber at ws://") and refused.endswith("; trying again")
    finally:
        await subscriber.close()
        second.stop()
    assert_no_stack_trace(caplog, capfd)


def rows(batch: int) -> list[bytes]:
    return [b'{"order":%d,"pad":"%s"}' % (batch * 1000 + n, b"x" * 300) for n in range(1000)]


def test_the_sink_between_and_inside_its_batches_says_its_server_went_away(
    server: ServerProcess, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    sink = ProtocolSink(server.url, "orders", "spark:vanishing", retry_s=600, frame_bytes=16 * 1024)
    batches_done = threading.Event()
    failure: list[BaseException] = []

    def batches() -> None:
        """Micro-batch after micro-batch, each sent and its ack read, until the sink fails."""
        try:
            for batch in range(1_000_000):
                sink.publish_json(rows(batch), batch)
                if batch == 3:
                    batches_done.set()
        except FeedError as error:
            failure.append(error)

    running = threading.Thread(target=batches)
    running.start()
    assert batches_done.wait(HANG_S), "the sink published nothing"
    server.stop(signal.SIGKILL)  # while it sends a batch, or reads its ack
    sink.close()  # the query stops while the sink waits for the server (another thread: Spark's)
    running.join(HANG_S)
    assert not running.is_alive(), "close() did not end the batch under way"
    [error] = failure
    assert "\n" not in str(error) and "the sink was closed" in str(error)
    assert_no_stack_trace(caplog, capfd)


def test_the_library_ending_a_connection_is_not_a_stack_trace_on_the_console(
    server: ServerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    """What the websockets library logs of the sink's connections goes through LIBRARY_LOG: its
    "unexpected internal error" when its reading thread loses the race to the sink's closing one
    (EOFError: stream ended) is a DEBUG line, anything else it logs one line without a trace."""
    sink = ProtocolSink(server.url, "orders", "spark:library-log")
    sink.publish_json(rows(0), 0)
    ws = sink._link._ws
    assert ws is not None
    assert isinstance(ws.logger, logging.LoggerAdapter) and ws.logger.logger is LIBRARY_LOG
    try:
        raise EOFError("stream ended")  # as websockets' recv_events() does, and logs it
    except EOFError:
        ws.logger.error("unexpected internal error", exc_info=True)
    try:
        raise ValueError("a defect")
    except ValueError:
        ws.logger.error("unexpected internal error", exc_info=True)
    sink.close()
    said = [(r.levelname, r.getMessage(), r.exc_info) for r in caplog.records if r.name == LIBRARY_LOG.name]
    assert said == [("ERROR", "unexpected internal error: ValueError: a defect", None)]


class Forbidding(http.server.BaseHTTPRequestHandler):
    """A proxy in front of a server that is gone, answering every handshake with HTTP 403."""

    protocol_version = "HTTP/1.1"  # (websockets reads no HTTP/1.0 answer)

    def do_GET(self) -> None:
        self.send_error(403)

    def log_message(self, format: str, *args: object) -> None:
        pass


async def test_a_publisher_whose_handshake_is_refused_on_its_reconnect_says_so_in_one_line(
    server: ServerProcess, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    publisher = Publisher(server.url, "feed")
    await publisher.connect()
    server.stop(signal.SIGKILL)
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", server.port), Forbidding)
    serving = threading.Thread(target=proxy.serve_forever)
    serving.start()
    try:
        await until(lambda: bool(lines(caplog, "server.client", "HTTP 403")))
        [refused] = lines(caplog, "server.client", "HTTP 403")
        assert refused.endswith(": the server refused the WebSocket: HTTP 403; trying again")
    finally:
        await publisher.close()
        proxy.shutdown()
        serving.join()
        proxy.server_close()
    assert_no_stack_trace(caplog, capfd)
