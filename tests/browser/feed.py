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
            decoded = orjson.loads(ws.recv(timeout=HANG_S))
            got += decoded if isinstance(decoded, list) else [decoded]
        return got


def publish(server: ServerProcess, *records: dict[str, Any], topic: str = "orders") -> None:
    """Publish ``records`` and wait for the server to have processed them."""
    request(server.url, [{"c": "publish", "t": topic, "data": record} for record in records])


def publish_many(server: ServerProcess, records: list[dict[str, Any]], topic: str = "orders") -> None:
    """Publish many records fast: frames of 2,000 publishes on one socket, each with a flush of its
    own, a few frames ahead of the acks. The hang guard is on each frame's ack, not on the whole:
    how long 100,000 publishes take depends on the machine and on the views they move (seen: 2 s
    idle; 50 s beside other work, with a window over the middle of the book that every publish
    shifts)."""
    batches = [records[start : start + 2000] for start in range(0, len(records), 2000)]
    with connect(server.url, open_timeout=HANG_S, max_size=None, ping_interval=None) as ws:
        acked = 0
        for number, batch in enumerate(batches):
            publishes = [{"c": "publish", "t": topic, "data": r} for r in batch]
            ws.send(orjson.dumps([*publishes, {"c": "flush", "cid": f"batch {number}"}]).decode())
            while number - acked >= AHEAD:
                acked += _acks(ws.recv(timeout=HANG_S))
        while acked < len(batches):
            acked += _acks(ws.recv(timeout=HANG_S))


AHEAD = 4  # frames sent before their acks: the server always has the next one to read


def _acks(frame: str | bytes) -> int:
    decoded = orjson.loads(frame)
    messages = decoded if isinstance(decoded, list) else [decoded]
    return sum(1 for m in messages if m.get("c") == "ack" and str(m.get("cid", "")).startswith("batch "))
