"""The README's main command (./scripts/run) as a user runs it: the server, the demo feed, the dashboard."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from ..integration.server_process import sow_records

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def records(port: int, topic: str) -> int:
    try:
        return len(sow_records(f"ws://127.0.0.1:{port}/ws", topic))
    except OSError:
        return 0  # not listening yet


@pytest.mark.slow
def test_scripts_run_serves_the_dashboard_fed_by_spark(tmp_path: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        ["./scripts/run", "--data-dir", str(tmp_path / "data")],
        cwd=ROOT,
        env={**os.environ, "PORT": str(port), "DEMO_CHECKPOINT": str(tmp_path / "checkpoints")},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not (records(port, "orders") and records(port, "positions")):
            assert process.poll() is None, "scripts/run stopped"
            time.sleep(1)
        assert records(port, "orders") > 0 and records(port, "positions") > 0, (
            "the demo feed fills the topics"
        )
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
            assert b"Open view" in response.read()
    finally:
        os.killpg(process.pid, signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    assert f"dashboard: http://127.0.0.1:{port}/?topic=orders" in output
