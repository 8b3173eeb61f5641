"""Commands to the test server as a publisher sends them: over a WebSocket of its own, each batch
followed by a flush, done once the flush is acknowledged (everything before it processed)."""

from __future__ import annotations

from typing import Any

import orjson
from websockets.sync.client import connect

from ..integration.server_process import ServerProcess
from ..waiting import HANG_S


def request(url: str, commands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send ``commands`` then a flush; every message received until the flush's ack."""
    with connect(url, open_timeout=HANG_S, ping_interval=None) as ws:
        ws.send(orjson.dumps([*commands, {"c": "flush", "cid": "done"}]).decode())
        got: list[dict[str, Any]] = []
        while not any(m.get("cid") == "done" and m.get("c") == "ack" for m in got):
            decoded = orjson.loads(ws.recv(timeout=10))
            got += decoded if isinstance(decoded, list) else [decoded]
        return got


def publish(server: ServerProcess, *records: dict[str, Any], topic: str = "orders") -> None:
    """Publish ``records`` and wait for the server to have processed them."""
    request(server.url, [{"c": "publish", "t": topic, "data": record} for record in records])


def publish_many(server: ServerProcess, records: list[dict[str, Any]], topic: str = "orders") -> None:
    """Publish many records fast: frames of 2,000 publishes on one socket, then a flush."""
    with connect(server.url, open_timeout=HANG_S, max_size=None, ping_interval=None) as ws:
        for start in range(0, len(records), 2000):
            batch = records[start : start + 2000]
            ws.send(orjson.dumps([{"c": "publish", "t": topic, "data": r} for r in batch]).decode())
        ws.send(orjson.dumps({"c": "flush", "cid": "done"}).decode())
        while True:
            decoded = orjson.loads(ws.recv(timeout=120))
            messages = decoded if isinstance(decoded, list) else [decoded]
            if any(m.get("cid") == "done" and m.get("c") == "ack" for m in messages):
                return
