from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .client import Client
from .server_process import ServerProcess, write_config

TOPICS = [
    {"name": "orders", "key": ["/order"]},
    {"name": "trades", "key": ["/buyer/id", "/id"]},
]

StartServer = Callable[..., ServerProcess]


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[StartServer]:
    started: list[ServerProcess] = []

    def start(
        server: dict[str, Any] | None = None, topics: list[dict[str, Any]] | None = None, extra: str = ""
    ) -> ServerProcess:
        config = write_config(tmp_path / f"server{len(started)}.toml", server or {}, topics or TOPICS, extra)
        process = ServerProcess(config, tmp_path / "data")
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


@pytest.fixture
def server(start_server: StartServer) -> ServerProcess:
    return start_server()


@pytest.fixture
async def connect(server: ServerProcess) -> AsyncIterator[Callable[..., Any]]:
    clients: list[Client] = []

    async def open_client(**kwargs: Any) -> Client:
        client = await Client.connect(server.url, **kwargs)
        clients.append(client)
        return client

    yield open_client
    for client in clients:
        await client.close()
