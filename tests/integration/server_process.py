"""Starts the real server (``python -m server``) on a free loopback port and stops it."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import orjson
from websockets.sync.client import connect

from ..waiting import HANG_S

ROOT = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"listening on http://([\d.]+):(\d+)")


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return str(value)


def auth_section(*users: dict[str, Any]) -> str:
    """An ``[auth]`` section for a test configuration: each user a dict of its keys, with an
    optional ``filter`` dict of entitlement filters per topic."""
    lines = ["", "[auth]"]
    for user in users:
        lines += ["[[auth.user]]"] + [f"{k} = {toml_value(v)}" for k, v in user.items() if k != "filter"]
        if user.get("filter"):
            lines += ["[auth.user.filter]"] + [f"{t} = {toml_value(f)}" for t, f in user["filter"].items()]
    return "\n".join(lines) + "\n"


def write_config(path: Path, server: dict[str, Any], topics: list[dict[str, Any]], extra: str = "") -> Path:
    lines = ["[server]"] + [f"{k} = {toml_value(v)}" for k, v in server.items()]
    for topic in topics:
        lines += ["", "[[topic]]"] + [f"{k} = {toml_value(v)}" for k, v in topic.items()]
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


class ServerProcess:
    # Every server a test has started, so that a failing test's report carries what they logged
    # (tests/conftest.py): a failure over a socket is read with the server's side of it.
    started: ClassVar[list[ServerProcess]] = []

    def __init__(
        self, config: Path | None, data_dir: Path, args: list[str] | None = None, port: int = 0
    ) -> None:
        command = [sys.executable, "-m", "server", "--host", "127.0.0.1", "--port", str(port)]
        command += ["--data-dir", str(data_dir)]
        if config is not None:
            command += ["--config", str(config)]
        command += args or []
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.lines: list[str] = []
        self._listening = threading.Event()
        self.port = 0
        ServerProcess.started.append(self)
        self._reader = threading.Thread(target=self._read_output, daemon=True)
        self._reader.start()
        if not self._listening.wait(HANG_S):
            self.stop()
            raise RuntimeError("server did not start:\n" + "".join(self.lines))

    def _read_output(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            match = LISTENING.search(line)
            if match:
                self.port = int(match.group(2))
                self._listening.set()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self, sig: int = signal.SIGTERM, timeout: float = HANG_S) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        # Its output read to the end, then closed: a pipe left open is a ResourceWarning whenever
        # the collector meets it, in whichever test runs then.
        self._reader.join(HANG_S)
        if self.process.stdout is not None and not self._reader.is_alive():
            self.process.stdout.close()
        time.sleep(0.05)
        return self.process.returncode

    def output(self) -> str:
        return "".join(self.lines)

    async def logged(self, *parts: str, timeout: float = HANG_S) -> int:
        """How many lines hold every one of ``parts``, once one does: the server's output is read
        by a thread, so a line it has written may not be in ``lines`` yet (0: none by ``timeout``)."""

        def count() -> int:
            return sum(all(part in line for part in parts) for line in list(self.lines))

        deadline = time.monotonic() + timeout
        while count() == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return count()


@contextmanager
def running(tmp_path: Path, topics: list[dict[str, Any]], name: str = "server") -> Iterator[ServerProcess]:
    """A server with ``topics`` and its data in ``tmp_path``, stopped afterwards."""
    process = ServerProcess(write_config(tmp_path / f"{name}.toml", {}, topics), tmp_path / "data")
    try:
        yield process
    finally:
        process.stop()


def sow_records(url: str, topic: str) -> list[Any]:
    """Every record of ``topic`` (a ``sow`` over a synchronous client)."""
    with connect(url, open_timeout=HANG_S, ping_interval=None) as ws:
        ws.send(orjson.dumps({"c": "sow", "t": topic, "cid": "q"}).decode())
        got: list[Any] = []
        while not any(m.get("c") == "group_end" for m in got):
            got += orjson.loads(ws.recv(timeout=HANG_S))
        return [m["data"] for m in got if m["c"] == "sow"]


def run_with_config(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    """``python -m server`` with ``text`` as its configuration file, run to its exit (a
    configuration it refuses stops it at once)."""
    config = tmp_path / "bad.toml"
    config.write_text(text)
    return subprocess.run(
        [sys.executable, "-m", "server", "--config", str(config), "--port", "0"],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )


def outside_address() -> str | None:
    """This machine's address on its default route, if it has one but loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.254", 9))  # no packet is sent: this only picks a route
        except OSError:
            return None
        address: str = probe.getsockname()[0]
    return None if address.startswith("127.") else address
