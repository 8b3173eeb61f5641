"""``python -m spark_feeds.demo`` as ./scripts/run starts it: a stop while it waits for a server
that is gone does not wait with it, and leaves a quiet console, exit status 0 and no process
behind. (Ctrl-C in ./scripts/run: tests/browser/test_demo_dashboard.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from spark_feeds.sink import ProtocolSink

from ..integration.server_process import ServerProcess, sow_records
from ..waiting import eventually
from .jobs import group_alive, kill, launch, wait_until


def start_demo(server: ServerProcess, tmp_path: Path) -> subprocess.Popen[str]:
    """The demo, once both topics have records."""
    feed = launch(
        *("-m", "spark_feeds.demo", "--url", server.url, "--checkpoint", str(tmp_path)),
        *("--trigger-seconds", "0.5", "--summary-seconds", "2"),
        env={"SPARK_MASTER": "local[2]"},
    )

    def topics_filled() -> bool:
        return bool(sow_records(server.url, "orders") and sow_records(server.url, "positions"))

    wait_until(feed, topics_filled, "the demo published nothing")
    return feed


def stop(feed: subprocess.Popen[str], sig: int = signal.SIGINT, timeout: float = 90) -> str:
    """Send ``sig`` as a terminal (SIGINT: to the demo's group) or ``kill PID`` (SIGTERM: to the
    feed's process, not its JVM) would; what the demo wrote on stderr. (SIGKILL to the group if it
    outlives ``timeout``.)"""
    if sig == signal.SIGINT:
        os.killpg(feed.pid, sig)
    else:
        feed.send_signal(sig)
    try:
        return feed.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        kill(feed)
        raise


def assert_quiet_exit(feed: subprocess.Popen[str], err: str) -> None:
    assert feed.returncode == 0, err
    for noise in ("Traceback", "Exception", "[Stage", " ERROR ", " WARN ", "log4j", "setLogLevel"):
        assert noise not in err, f"{noise!r} on the console:\n{err}"
    eventually(lambda: not group_alive(feed.pid), "Spark's JVM outlived the feed", step=0.5)


@pytest.mark.slow
def test_the_demo_stops_at_once_while_it_waits_for_a_stopped_server(
    server: ServerProcess, tmp_path: Path
) -> None:
    """./scripts/run's Ctrl-C stops the server too, and its trap sends the feed a SIGTERM: the
    micro-batches then wait for the server (for minutes, to ride out a restart), but a stop does
    not wait with them."""
    feed = start_demo(server, tmp_path)
    server.stop()
    time.sleep(3)  # the sinks find no server, and wait for it
    started = time.monotonic()
    err = stop(feed, signal.SIGTERM, timeout=60)
    assert_quiet_exit(feed, err)
    # At once: not after the micro-batches' wait for the server (the sink's retry_s, 300 s).
    assert time.monotonic() - started < ProtocolSink.retry_s / 2
