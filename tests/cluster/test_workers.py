"""``--workers N``: N cluster nodes of one machine behind one port."""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from ..integration.client import Client
from ..integration.server_process import ROOT, write_config
from .conftest import TOPICS, StartNode

pytestmark = pytest.mark.slow

NODE = re.compile(r'push_cluster_node\{node="([^"]+)"\} 1\.0')


def node_names(http: str, attempts: int = 200) -> set[str]:
    """The nodes that answer ``/metrics`` on new connections (the kernel picks the worker)."""
    seen: set[str] = set()
    for _ in range(attempts):
        with urllib.request.urlopen(http + "/metrics", timeout=5) as answer:
            seen.update(NODE.findall(answer.read().decode()))
        if len(seen) >= 2:
            break
    return seen


async def test_two_workers_share_one_port_and_serve_one_state(start_node: StartNode) -> None:
    node = start_node(args=["--workers", "2"])
    assert node.output().count("listening on") == 1
    assert len(node_names(node.http)) == 2
    subscribers = [await Client.connect(node.url) for _ in range(8)]
    for client in subscribers:
        await client.request({"c": "subscribe", "t": "orders", "sub_id": "s", "cid": "q"})
    publisher = await Client.connect(node.url)
    for i in range(5):
        await publisher.request({"c": "publish", "t": "orders", "data": {"id": i}, "cid": i})
    for client in subscribers:
        got = await client.until(lambda m: m.get("data") == {"id": 4})
        assert [m["data"]["id"] for m in got if m.get("c") == "p"] == list(range(5))
    assert node.stop() == 0
    assert " ERROR " not in node.output() and "Traceback" not in node.output()


def test_workers_without_a_cluster_is_a_configuration_error(tmp_path: Path) -> None:
    config = write_config(tmp_path / "alone.toml", {}, TOPICS)
    command = [sys.executable, "-m", "server", "--config", str(config), "--workers", "2"]
    done = subprocess.run(command, check=False, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == "error: --workers needs a [cluster] section: nodes share their state through Redis"
    )
