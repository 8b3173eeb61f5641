"""The topics, the loading and the ack reading that the budget tests share."""

from __future__ import annotations

from typing import Any

from ..harness import Peer

TOPICS = [{"name": "orders", "key": ["/order"]}, {"name": "fills", "key": ["/id"]}]


def processed(messages: list[dict[str, Any]], cid: Any) -> dict[str, Any]:
    [ack] = [m for m in messages if m["c"] == "ack" and m.get("cid") == cid and m["a"] == "processed"]
    return ack


def load(peer: Peer, count: int, topic: str = "orders") -> None:
    key = "order" if topic == "orders" else "id"
    for start in range(0, count, 1000):
        peer.send(
            *[
                {"c": "publish", "t": topic, "data": {key: n, "qty": n % 97}}
                for n in range(start, min(count, start + 1000))
            ]
        )


def window(peer: Peer, cid: Any, orderby: str, top_n: int = 1, **fields: Any) -> dict[str, Any]:
    command = {"c": "sow_and_subscribe", "t": "orders", "cid": cid, "top_n": top_n, "orderby": orderby}
    return processed(peer.send({**command, **fields}), cid)
