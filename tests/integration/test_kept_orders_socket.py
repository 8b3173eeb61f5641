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


RANGED = [{"name": "orders", "key": ["/order"], "orders": ["/price", "/qty DESC"]}]


def priced(order: int, price: Any, qty: int) -> Message:
    return {"c": "publish", "t": "orders", "data": {"order": order, "price": price, "qty": qty}}


def applied(rows: list[int], messages: list[Message]) -> list[int]:
    """A client's window after ``messages``: an OOF takes its row out, an entry goes to its
    position (OOFs come first, then entries by position)."""
    rows = list(rows)
    for m in messages:
        if m["c"] in ("oof", "p", "sow"):
            order = m["data"]["order"]
            if order in rows:
                rows.remove(order)
            if m["c"] != "oof":
                rows.insert(m["pos"] - 1, order)
    return rows


async def test_a_window_found_through_a_kept_order_stays_live(start_server: StartServer) -> None:
    """A filter on the first field of a kept order: the window's order is made from the range of
    it the filter can match (and the strings and arrays it may match too), then kept live as
    records move into the range and out of it."""
    server = start_server(topics=RANGED)
    publisher = await Client.connect(server.url)
    await publisher.send(*[priced(n, n, n % 10) for n in range(200)])
    # " 195.5" compares as a number, "zzz" after every number, an array by any of its values.
    await publisher.send(priced(500, " 195.5", 4), priced(501, [1, 300], 2), priced(502, "zzz", 1))
    await publisher.request({"c": "sow", "t": "orders", "cid": "sync", "filter": "/order = 0"})
    by_price, by_qty = await Client.connect(server.url), await Client.connect(server.url)
    await by_price.send({**window("/price", 4, filter="/price >= 195"), "o": "oof,positions,count"})
    got = await by_price.until(lambda m: m["c"] == "group_end")
    price_rows = applied([], got)
    assert price_rows == [501, 195, 196, 197] and got[-1]["matches"] == 8
    await by_qty.send(
        {**window("/qty DESC", 3, filter="/price BETWEEN 190 AND 199"), "o": "oof,positions,count"}
    )
    got = await by_qty.until(lambda m: m["c"] == "group_end")
    qty_rows = applied([], got)
    assert qty_rows == [199, 198, 197] and got[-1]["matches"] == 11
    steps: list[tuple[Message, list[int] | None, int | None, list[int] | None, int | None]] = [
        # the change, then each window's rows and count after it (None: it hears nothing)
        (priced(10, 196.5, 20), [501, 195, 196, 10], 9, [10, 199, 198], 12),  # into both ranges
        (priced(195, 5, 5), [501, 196, 10, 197], 8, [10, 199, 198], 11),  # out of both
        (priced(501, [1, 2], 2), [196, 10, 197, 198], 7, None, None),  # no value in range now
        (priced(3, [0, 400], 3), [3, 196, 10, 197], 8, None, None),  # one value in range: in
        (
            {"c": "sow_delete", "t": "orders", "filter": "/order = 196"},
            [3, 10, 197, 198],
            7,
            [10, 199, 198],
            10,
        ),
        (priced(199, "zzz", 9), None, None, [10, 198, 197], 9),  # a text: after every number
    ]
    for change, price_after, price_count, qty_after, qty_count in steps:
        await publisher.send(change)
        for client, rows, count in ((by_price, price_after, price_count), (by_qty, qty_after, qty_count)):
            if rows is None:
                continue
            got = await client.until(lambda m: m["c"] == "count")
            assert got[-1]["matches"] == count, change
            if client is by_price:
                price_rows = applied(price_rows, got)
                assert price_rows == rows, change
            else:
                qty_rows = applied(qty_rows, got)
                assert qty_rows == rows, change
    await publisher.request({"c": "flush", "cid": "f"})
    assert await by_price.settled() == [] and await by_qty.settled() == []
    for client in (publisher, by_price, by_qty):
        await client.close()
