"""Starts a real ``redis-server`` on a free loopback port for a test, and stops or kills it."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
from pathlib import Path

import pytest
import redis

from ..waiting import HANG_S, eventually

REDIS_SERVER = shutil.which("redis-server")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class RedisProcess:
    """One ``redis-server``: AOF with ``appendfsync always`` (what makes a ``persisted`` ack mean
    on disk), its files in ``directory``; ``restart`` brings it back on the same port and files."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        if REDIS_SERVER is None:
            pytest.fail("redis-server is not installed (./scripts/test installs it)")
        self.directory = directory
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert REDIS_SERVER is not None
        self.directory.mkdir(parents=True, exist_ok=True)
        command = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        command += ["--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.directory)]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with redis.Redis(port=self.port, socket_connect_timeout=0.2) as client:
            eventually(
                client.ping, "redis-server did not start", step=0.02, ignoring=(redis.exceptions.RedisError,)
            )

    def kill(self) -> None:
        """kill -9: whatever was not fsynced is gone (with ``appendfsync always``: nothing acked)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(HANG_S)

    def files(self) -> Path:
        """A copy of Redis's files as they are now (an old dump, for ``restore``); kill it first."""
        saved = self.directory.with_name(self.directory.name + "-saved")
        shutil.rmtree(saved, ignore_errors=True)
        shutil.copytree(self.directory, saved)
        return saved

    def restore(self, saved: Path | None = None) -> None:
        """Start again on the same port from ``saved`` files, or from none: Redis comes back
        empty, as one without ``appendonly`` does after a restart."""
        self.kill()
        shutil.rmtree(self.directory, ignore_errors=True)
        if saved is not None:
            shutil.copytree(saved, self.directory)
        self.start()

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port)

    def snapshotted(self, topic: str, below: int, prefix: str = "test") -> bool:
        """Whether the cluster has written ``topic``'s snapshot and trimmed its stream to fewer
        than ``below`` entries (what a node cut off meanwhile must resynchronise from)."""
        with self.client() as client:
            stream = client.xlen(f"{{{prefix}}}:stream:{topic}")
            return bool(client.exists(f"{{{prefix}}}:snapshot:{topic}")) and int(stream) < below
