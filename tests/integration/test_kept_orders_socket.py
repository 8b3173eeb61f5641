"""Kept orders (docs/protocol.md, Kept orders) over a real socket: a topic configured with
``orders`` answers windows by them, across a restart of a durable topic and with a filter."""

from __future__ import annotations

from typing import Any

from .client import Client, Message
from .conftest import StartServer

TOPICS = [{"name": "orders", "key": ["/order"], "durable": True, "orders": ["/qty DESC", ""]}]


def window(orderby: str, top: int, **fields: Any) -> Message:
    return {
        "c": "sow_and_subscribe",
        "t": "orders",
        "sub_id": f"{orderby} {fields}",
        "top_n": top,
        "orderby": orderby,
        "o": "count,positions",
        **fields,
    }


async def rows(client: Client, command: Message) -> tuple[list[int], int]:
    await client.send(command)
    got = await client.until(lambda m: m["c"] == "group_end")
    return [m["data"]["order"] for m in got if m["c"] == "sow"], got[-1]["matches"]


async def test_a_kept_order_answers_windows_across_a_restart(start_server: StartServer) -> None:
    server = start_server(topics=TOPICS)
    publisher = await Client.connect(server.url)
    await publisher.send(
        *[
            {"c": "publish", "t": "orders", "data": {"order": n, "qty": n % 10, "side": n % 2}}
            for n in range(1, 40)
        ]
    )
    await publisher.request({"c": "publish", "t": "orders", "cid": "p", "data": {"order": 0, "qty": 0}})
    await publisher.request({"c": "sow_delete", "t": "orders", "filter": "/order = 39", "cid": "d"})
    await publisher.close()
    viewer = await Client.connect(server.url)
    top, matches = await rows(viewer, window("/qty desc", 3))
    assert sorted(top) == [9, 19, 29] and matches == 39  # qty 9 (39 is gone), ties by SowKey
    filtered, matches = await rows(viewer, window("/qty DESC", 4, filter="/side = 0"))
    assert [n % 10 for n in filtered] == [8, 8, 8, 8] and matches == 19
    await viewer.close()
    server.stop()
    again = start_server(topics=TOPICS)  # the same data directory: recovered from the log
    viewer = await Client.connect(again.url)
    assert await rows(viewer, window("/qty DESC", 3)) == (top, 39)
    assert await rows(viewer, window("/qty DESC", 4, filter="/side = 0")) == (filtered, 19)
    await viewer.close()
