"""Live windows (docs/protocol.md, Live windows) over a real socket to a real server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from .client import Client

Connect = Callable[..., Any]


async def test_the_amps_window_example_with_positions_and_one_frame_per_change(connect: Connect) -> None:
    publisher: Client = await connect()
    watcher: Client = await connect()
    await publisher.send(*[{"c": "publish", "t": "orders", "data": {"order": n}} for n in (1, 2, 5, 7, 9)])
    await publisher.request({"c": "sow", "t": "orders", "cid": "sync"})  # the publishes are applied
    got = await watcher.request(
        {
            "c": "sow_and_subscribe",
            "t": "orders",
            "cid": "w",
            "top_n": 2,
            "skip_n": 1,
            "orderby": "/order",
            "o": "oof,positions",
            "a": "completed",
        },
        "completed",
    )
    assert [(m["data"]["order"], m["pos"]) for m in got if m["c"] == "sow"] == [(2, 1), (5, 2)]
    await publisher.send({"c": "publish", "t": "orders", "data": {"order": 4}})
    frame = orjson.loads(await watcher.ws.recv())  # the change and what it pushed out: one frame
    # With positions, OOFs first and then the rest by position, so applying them in order
    # rebuilds the window's order.
    assert [(m["c"], m["data"]["order"], m.get("pos"), m.get("reason")) for m in frame] == [
        ("oof", 5, None, "match"),
        ("p", 4, 2, None),
    ]
    await publisher.request({"c": "sow_delete", "t": "orders", "filter": "/order = 9", "cid": "d"})
    assert await watcher.settled() == []
    await publisher.send({"c": "sow_delete", "t": "orders", "filter": "/order = 2"})
    frame = orjson.loads(await watcher.ws.recv())
    assert [(m["c"], m["data"]["order"], m.get("pos"), m.get("reason")) for m in frame] == [
        ("oof", 2, None, "deleted"),
        ("p", 5, 2, None),
    ]
