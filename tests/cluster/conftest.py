from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ..integration.server_process import ServerProcess, write_config
from ..waiting import HANG_S
from .redis_process import RedisProcess

TOPICS = [
    {"name": "orders", "key": ["/id"], "durable": True},
    {"name": "quotes", "key": ["/sym"], "expiration": "1s"},
]

StartNode = Callable[..., ServerProcess]


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisProcess]:
    server = RedisProcess(tmp_path / "redis")
    yield server
    server.kill()


@pytest.fixture
def start_node(tmp_path: Path, redis_server: RedisProcess) -> Iterator[StartNode]:
    """Starts cluster nodes sharing ``redis_server``; each waits until ``/healthz`` says ready."""
    started: list[ServerProcess] = []

    def start(
        topics: list[dict[str, Any]] | None = None,
        cluster: dict[str, Any] | None = None,
        ready: bool = True,
        extra: str = "",
        args: list[str] | None = None,
    ) -> ServerProcess:
        index = len(started)
        settings = {"redis_url": redis_server.url, "name": "test", **(cluster or {})}
        section = "\n[cluster]\n" + "\n".join(f'{k} = "{v}"' for k, v in settings.items()) + "\n"
        config = write_config(tmp_path / f"node{index}.toml", {}, topics or TOPICS, section + extra)
        node = ServerProcess(config, tmp_path / f"data{index}", args)
        started.append(node)
        if ready:
            wait_ready(node)
        return node

    yield start
    for node in started:
        node.stop()


def wait_ready(node: ServerProcess, timeout: float = HANG_S) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(node.http + "/healthz", timeout=HANG_S) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("node not ready:\n" + node.output())
        time.sleep(0.05)
