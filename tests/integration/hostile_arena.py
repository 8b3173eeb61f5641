"""What the hostile-client tests share: a seeded server (the arena), the bounds every attack is
held to, users for the authenticated attacks, and the helpers that read refusals and closes."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import orjson
import websockets
from websockets.sync.client import connect as sync_connect

from tests.fuzzing.engine_rig import REASONS  # the protocol's reason words, written once

from ..waiting import HANG_S
from .client import Client
from .conftest import StartServer
from .hostile import (
    PROBE_TOPIC,
    request,
)
from .server_process import ServerProcess

LATENCY_S = 1.5  # what a publish may take to reach the victim while an attack runs
GROWTH_MB = 150  # how much the server may grow during an attack
TOPICS: list[dict[str, Any]] = [
    {"name": "orders", "key": ["/order"]},
    {"name": PROBE_TOPIC, "key": ["/id"]},
    {"name": "scratch", "key": ["/id"]},
    {"name": "big", "key": ["/id"]},
    {"name": "ledger", "key": ["/id"], "durable": True},
]
AUTH = """
[auth]
[[auth.user]]
user_id = "alice"
password = "secret"
read = ["*"]
write = ["*"]

[[auth.user]]
user_id = "bob"
password = "hunter2"
read = ["*"]
write = ["*"]

[[auth.user]]
user_id = "carol"
password = "victim"
read = ["*"]
write = ["*"]
"""
CAROL = {"c": "logon", "user_id": "carol", "pw": "victim"}
ORDERS = [{"order": n, "customer": f"c{n % 3}", "qty": n * 10, "note": "n" * 100} for n in range(20)]


def publish_all(server: ServerProcess, topic: str, rows: list[dict[str, Any]], logon: Any = None) -> None:
    """Publish ``rows`` into ``topic`` over a synchronous socket, in frames under 900 KB."""
    with sync_connect(server.url, open_timeout=HANG_S, max_size=None, ping_interval=None) as ws:
        if logon is not None:
            assert all(m.get("status") != "failure" for m in request(ws, {**logon, "cid": "logon"}))
        batch: list[dict[str, Any]] = []
        size = 0
        for row in rows:
            command = {"c": "publish", "t": topic, "data": row}
            batch.append(command)
            size += len(orjson.dumps(command))
            if size > 900_000:
                ws.send(orjson.dumps(batch).decode())
                batch, size = [], 0
        if batch:
            ws.send(orjson.dumps(batch).decode())
        assert all(
            m.get("status") != "failure" for m in request(ws, {"c": "flush", "cid": "seeded"}, timeout=HANG_S)
        )


@contextlib.contextmanager
def arena(
    start_server: StartServer, settings: dict[str, Any] | None = None, extra: str = "", logon: Any = None
) -> Iterator[ServerProcess]:
    """A server with ``orders`` seeded; killed at the end (a stalled server need not stop cleanly)."""
    server = start_server(settings or {}, TOPICS, extra)
    try:
        publish_all(server, "orders", ORDERS, logon)
        yield server
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()


async def closed_code(client: Client, timeout: float = HANG_S) -> int | None:
    """Read (and drop) whatever comes until the server closes ``client``; its close code."""
    deadline = time.monotonic() + timeout
    with contextlib.suppress(websockets.ConnectionClosed):
        while time.monotonic() < deadline:
            try:
                await client.recv(max(0.01, deadline - time.monotonic()))
            except TimeoutError:
                break
    if client.ws.close_code is None:
        raise AssertionError(f"the server did not close the socket within {timeout} s")
    return client.ws.close_code


async def acks_by_cid(client: Client, cids: set[Any], timeout: float) -> dict[Any, dict[str, Any]]:
    """The processed ack of every cid in ``cids`` (fails if one does not come within ``timeout``)."""
    got: dict[Any, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout
    while set(got) != cids:
        left = deadline - time.monotonic()
        assert left > 0, f"no processed ack for {sorted(map(str, cids - set(got)))[:5]} within {timeout} s"
        try:
            message = await client.recv(left)
        except websockets.ConnectionClosed as error:
            missing = sorted(map(str, cids - set(got)))[:5]
            raise AssertionError(f"the socket was closed ({error}) before the acks of {missing}") from error
        if message.get("c") == "ack" and message.get("a") == "processed" and message.get("cid") in cids:
            assert message["cid"] not in got, f"two processed acks for cid {message['cid']!r}"
            got[message["cid"]] = message
    return got


def assert_refused(ack: dict[str, Any], *reasons: str) -> None:
    assert ack["status"] == "failure", f"expected a refusal, got {ack!r:.300}"
    assert ack["reason"].startswith(reasons or REASONS), f"unexpected reason {ack['reason']!r:.200}"
