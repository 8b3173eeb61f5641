"""SIGHUP to ``--workers N``: the parent passes it on, and each node reloads ``[auth]`` from the
file itself (docs/protocol.md, Reloading entitlements)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import websockets

from ..integration.client import Client
from ..integration.server_process import auth_section
from ..waiting import HANG_S, eventually_async
from .conftest import StartNode
from .test_workers import eventually, node_names

pytestmark = pytest.mark.slow

USERS = [{"user_id": name, "password": "pw", "read": ["*"], "write": ["*"]} for name in ("alice", "desk")]


async def test_every_worker_reloads_auth(start_node: StartNode, tmp_path: Path) -> None:
    node = start_node(args=["--workers", "2"], extra=auth_section(*USERS))
    # Both serve (start_node waits for one /healthz 200; a worker still loading is not serving).
    eventually(lambda: len(node_names(node.http)) == 2)
    sockets = []
    for _ in range(8):  # the kernel spreads them over both workers
        client = await Client.connect(node.url)
        await client.request({"c": "logon", "cid": "l", "user_id": "alice", "pw": "pw"})
        sockets.append(client)
    config = tmp_path / "node0.toml"
    config.write_text(config.read_text().replace('user_id = "alice"', 'user_id = "carol"'))
    node.process.send_signal(signal.SIGHUP)
    for client in sockets:
        with pytest.raises(websockets.ConnectionClosed):
            await client.recv(HANG_S)
        assert client.ws.close_code == 1008

    async def both_reloaded() -> bool:
        return node.output().count("SIGHUP: reloaded [auth]") == 2

    await eventually_async(both_reloaded, node.output)
    carol = await Client.connect(node.url)
    replies = await carol.request({"c": "logon", "cid": "l", "user_id": "carol", "pw": "pw"})
    assert replies[-1]["status"] == "success"
    await carol.close()
    assert node.stop() == 0
