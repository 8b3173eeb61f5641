"""What the benchmarks share: a free loopback port, starting a server process on it, and the
socket port of an engine driven in-process."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class QuietPort:
    """A socket of an in-process benchmark, which reads its session's outbox itself: the core's
    wake-ups and requests to write now do nothing."""

    def wake(self) -> None:
        pass

    def try_write(self) -> None:
        pass


QUIET = QuietPort()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(
    config_text: str, work: Path, port: int, root: Path = ROOT, pure: bool = False
) -> subprocess.Popen[bytes]:
    """Start this server (``python -m server``) with ``config_text`` as its configuration, in ``work``;
    ``root``: the checkout whose server runs (another commit's, to compare two in one run);
    ``pure``: its pure-Python core, whatever is compiled (README, The compiled core)."""
    config = work / "bench.toml"
    config.write_text(config_text)
    command = [sys.executable, "-m", "server", "--config", str(config), "--port", str(port)]
    env = {**os.environ, "SOWPUSH_PURE": "1" if pure else ""}
    return start([*command, "--data-dir", str(work / "data")], port, cwd=root, env=env)


@contextmanager
def serving(config_text: str) -> Iterator[tuple[str, Path, subprocess.Popen[bytes]]]:
    """A server with ``config_text`` in a temporary directory, for the block: its WebSocket URL,
    the directory, and the process (stopped at the end)."""
    with tempfile.TemporaryDirectory() as work:
        port = free_port()
        server = serve(config_text, Path(work), port)
        try:
            yield f"ws://127.0.0.1:{port}/ws", Path(work), server
        finally:
            server.terminate()
            server.wait()


def start(command: list[str], port: int, **popen: object) -> subprocess.Popen[bytes]:
    """Start ``command`` (in the repository root unless ``cwd`` is given) and wait until it accepts
    connections on ``port``."""
    options: dict[str, object] = {"cwd": ROOT, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    process = subprocess.Popen(command, **{**options, **popen})  # type: ignore[call-overload]
    deadline = time.time() + 30
    while time.time() < deadline and process.poll() is None:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return process
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"{command} did not start")


def arguments(doc: str | None) -> argparse.ArgumentParser:
    """A benchmark's command line, with its module docstring as the help text."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def cpu_seconds(pid: int) -> float:
    """The CPU time process ``pid`` has used so far, to the nanosecond: the sum over its live
    threads of the scheduler's run time (/proc/PID/task/TID/schedstat), since /proc/PID/stat counts
    in ticks of 10 ms, too coarse for a round of a fraction of a second."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended while we read
    return total / 1e9
