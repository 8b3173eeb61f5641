"""What the Python clients' tests share: a real server of ``topics`` (a module names its own by
overriding that fixture) and a subscriber connected to it, each stopped after the test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from server.client.subscriber import Subscriber

from ..integration.server_process import ServerProcess, write_config


@pytest.fixture
def topics() -> list[dict[str, Any]]:
    return [{"name": "orders", "key": ["/order"]}]


@pytest.fixture
def server(tmp_path: Path, topics: list[dict[str, Any]]) -> Iterator[ServerProcess]:
    process = ServerProcess(write_config(tmp_path / "server.toml", {}, topics), tmp_path / "data")
    yield process
    process.stop()


@pytest.fixture
async def subscriber(server: ServerProcess) -> AsyncIterator[Subscriber]:
    """A subscriber connected to ``server``, closed after the test."""
    connected = Subscriber(server.url)
    await connected.connect()
    yield connected
    await connected.close()
