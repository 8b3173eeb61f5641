"""``python -m spark_feeds.demo`` as ./scripts/run starts it: a stop while it waits for a server
that is gone does not wait with it, and leaves a quiet console, exit status 0 and no process
behind. (Ctrl-C in ./scripts/run: tests/browser/test_demo_dashboard.py.)"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from spark_feeds.sink import ProtocolSink

from ..integration.server_process import ServerProcess, auth_section, sow_records, write_config
from ..waiting import HANG_S, eventually
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


def stop(feed: subprocess.Popen[str], sig: int = signal.SIGINT, timeout: float = HANG_S) -> str:
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


def knocked(port: int, timeout: float = HANG_S) -> None:
    """Once a client has come to ``port`` again (a sink reconnecting to a server that is gone):
    it is let in, and its connection closed at once (a server dying mid-handshake)."""
    with socket.create_server(("127.0.0.1", port)) as listener:
        listener.settimeout(timeout)  # a hang guard only
        connection, _ = listener.accept()
        connection.close()


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["stopped", "killed"])
def test_the_demo_stops_at_once_while_it_waits_for_a_stopped_server(
    server: ServerProcess, tmp_path: Path, how: signal.Signals
) -> None:
    """./scripts/run's Ctrl-C stops the server too, and its trap sends the feed a SIGTERM: the
    micro-batches then wait for the server (for minutes, to ride out a restart), but a stop does
    not wait with them. The server stopped (close frames) or killed (none) mid-batch: neither
    the sinks nor the websockets library under them writes a stack trace or an error."""
    feed = start_demo(server, tmp_path)
    server.stop(how)
    knocked(server.port)  # a sink found no server, and waits for it
    # Stopped well before a batch would give up waiting (retry_s): not a speed limit, however
    # busy the machine, but the stop not waiting for the server.
    err = stop(feed, signal.SIGTERM, timeout=ProtocolSink.retry_s / 2)
    assert_quiet_exit(feed, err)


@pytest.mark.slow
def test_a_demo_refused_by_its_server_says_why_in_one_line_and_exits_1(tmp_path: Path) -> None:
    """A wrong password: the server refuses the sinks' logon. One line says so (the sink's own
    words), with no Python or Java stack trace around it, Spark stops, and the exit status is 1."""
    desk = {"user_id": "desk", "password": "right", "read": ["*"], "write": ["*"]}
    topics: list[dict[str, Any]] = [
        {"name": "orders", "key": ["/order"], "durable": True},
        {"name": "positions", "key": ["/trader"]},
    ]
    config = write_config(tmp_path / "server.toml", {}, topics, auth_section(desk))
    server = ServerProcess(config, tmp_path / "data")
    try:
        feed = launch(
            *("-m", "spark_feeds.demo", "--url", server.url, "--checkpoint", str(tmp_path / "cp")),
            *("--trigger-seconds", "0.5"),
            env={"SPARK_MASTER": "local[2]", "SOWPUSH_USER": "desk", "SOWPUSH_PASSWORD": "wrong"},
        )
        try:
            err = feed.communicate(timeout=2 * HANG_S)[1]  # a hang guard: it stops by itself
        except subprocess.TimeoutExpired:
            kill(feed)
            raise
    finally:
        server.stop()
    assert feed.returncode == 1, err
    errors = [line for line in err.splitlines() if " ERROR " in line]
    assert len(errors) == 1, err
    assert (
        "failed: orders: logon refused: auth failure" in errors[0]
        or "failed: positions: logon refused" in errors[0]
    )
    for noise in ("Traceback", "Exception", "\tat ", "[Stage", " WARN "):
        assert noise not in err, f"{noise!r} on the console:\n{err}"
