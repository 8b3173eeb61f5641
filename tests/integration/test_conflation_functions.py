"""A topic's own merger and matcher (conflation_merge, conflation_match) in a real server."""

from __future__ import annotations

from typing import Any

from .client import Client
from .conftest import StartServer

TOPICS = [
    {
        "name": "merged",
        "key": ["/id"],
        "conflation": "always",
        "conflation_merge": "tests.core.queue.merge_functions:by_kind",
    },
    {
        "name": "matched",
        "key": ["/id"],
        "conflation": "always",
        "conflation_match": "tests.core.queue.merge_functions:same_kind",
    },
]


def publish(topic: str, **data: Any) -> dict[str, Any]:
    return {"c": "publish", "t": topic, "data": {"id": 1, **data}}


async def test_a_merger_and_a_matcher_decide_what_a_socket_gets(start_server: StartServer) -> None:
    server = start_server({}, TOPICS)
    publisher, reader = await Client.connect(server.url), await Client.connect(server.url)
    await reader.request({"c": "subscribe", "t": "merged", "cid": "m"})
    await reader.request({"c": "subscribe", "t": "matched", "cid": "k"})
    # One frame: every change is queued for the reader before its writer runs (topics "always").
    await publisher.send(
        publish("merged", count=1),
        publish("merged", count=2),  # merged: the counts summed
        publish("matched", kind="trade", n=1),
        publish("matched", kind="quote", n=2),
        publish("matched", kind="trade", n=3),
    )
    await publisher.request({"c": "flush", "cid": "f"})
    got = [m for m in await reader.settled() if m["c"] == "p"]
    assert [(m["t"], m["data"]) for m in got] == [
        ("merged", {"id": 1, "count": 3}),
        ("matched", {"id": 1, "kind": "quote", "n": 2}),
        ("matched", {"id": 1, "kind": "trade", "n": 3}),
    ]
    await publisher.send(publish("merged", count=1), publish("merged", count=2, keep="both"))
    await publisher.request({"c": "flush", "cid": "g"})
    got = [m for m in await reader.settled() if m["c"] == "p"]
    assert [m["data"]["count"] for m in got] == [1, 2]
