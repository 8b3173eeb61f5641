"""Viewports and ``count`` over groups (docs/protocol.md, Viewports and Aggregated views): a window
over an aggregated view moves as a window over records does, in one frame, and ``count`` counts
groups, over a real socket to a real server."""

from __future__ import annotations

from typing import Any

from .client import Client, Message
from .test_viewports import Connect, frames_until, move, next_frame

PROJECTION = ["/desk", "SUM(/qty) AS /qty", "COUNT(*) AS /orders"]


def publish(order: int, desk: str, qty: int) -> Message:
    return {"c": "publish", "t": "orders", "data": {"order": order, "desk": desk, "qty": qty}}


def window(sub_id: str, top: int, skip: int = 0, options: str = "oof,count", **fields: Any) -> Message:
    return {
        "c": "sow_and_subscribe",
        "t": "orders",
        "sub_id": sub_id,
        "top_n": top,
        "skip_n": skip,
        "orderby": "/qty DESC",
        "grouping": ["/desk"],
        "projection": PROJECTION,
        "o": options,
        **fields,
    }


def brief(messages: list[Message]) -> list[tuple[Any, ...]]:
    """Each message briefly: its kind, its desk and total (or key-only), its pos or reason."""
    out: list[tuple[Any, ...]] = []
    for m in messages:
        if m["c"] in ("sow", "oof", "p"):
            data = m.get("data")
            shown = (data["desk"], data["qty"]) if data is not None else "key"
            out.append((m["c"], shown, m.get("pos") or m.get("reason")))
        elif m["c"] in ("group_begin", "group_end", "count"):
            out.append((m["c"], m.get("matches")))
    return out


async def desks(connect: Connect, count: int) -> Client:
    """Desks d1..dN whose totals are 10, 20, ... (two orders each)."""
    publisher: Client = await connect()
    await publisher.send(
        *[publish(2 * n + half, f"d{n}", 5 * n) for n in range(1, count + 1) for half in (0, 1)]
    )
    await publisher.request({"c": "flush", "cid": "sync"})
    return publisher


async def test_a_window_over_groups_moves_in_one_frame_with_keys_for_what_the_client_holds(
    connect: Connect,
) -> None:
    publisher = await desks(connect, 8)
    viewer: Client = await connect()
    await viewer.request({**window("v", 3), "cid": "v"})
    snapshot = await viewer.until(lambda m: m["c"] == "group_end")
    assert brief(snapshot) == [
        ("group_begin", None),
        ("sow", ("d8", 80), None),
        ("sow", ("d7", 70), None),
        ("sow", ("d6", 60), None),
        ("group_end", 8),
    ]
    answer = await move(viewer, window("v", 3, 2))
    assert brief(answer) == [
        ("oof", ("d8", 80), "match"),
        ("oof", ("d7", 70), "match"),
        ("group_begin", None),
        ("sow", "key", 1),
        ("sow", ("d5", 50), 2),
        ("sow", ("d4", 40), 3),
        ("group_end", 8),
    ]
    # Live afterwards, as a window of groups: d6 grows to the top, d7 comes back in (in full).
    await publisher.send(publish(100, "d6", 100))
    assert brief(await next_frame(viewer)) == [("oof", ("d6", 160), "match"), ("p", ("d7", 70), None)]
    # Sorted by another projected field: the same aggregation, the window moves again.
    by_orders = await move(viewer, {**window("v", 3, 2), "orderby": "/orders DESC, /qty"})
    assert brief(by_orders) == [
        ("oof", ("d5", 50), "match"),
        ("oof", ("d7", 70), "match"),
        ("group_begin", None),
        ("sow", ("d2", 20), 1),
        ("sow", ("d3", 30), 2),
        ("sow", "key", 3),
        ("group_end", 8),
    ]
    for client in (publisher, viewer):
        await client.close()


async def test_a_move_onto_another_aggregation_keeps_the_groups_whose_totals_are_the_same(
    connect: Connect,
) -> None:
    publisher = await desks(connect, 5)
    viewer: Client = await connect()
    await viewer.request({**window("v", 3, options="oof,positions"), "cid": "v"})
    await viewer.until(lambda m: m["c"] == "group_end")
    # Without order 11 (one of d5's): d5 totals 25 now, d4 and d3 are as the client holds them.
    answer = await move(viewer, {**window("v", 3, options="oof,positions"), "filter": "/order != 11"})
    assert brief(answer) == [
        ("group_begin", None),
        ("sow", "key", 1),
        ("sow", "key", 2),
        ("sow", ("d5", 25), 3),
        ("group_end", None),
    ]
    await publisher.request({**publish(11, "d5", 1000), "cid": "out"})  # filtered out of this view: nothing
    assert await viewer.settled() == []
    await publisher.send(publish(12, "d5", 1))
    assert brief(await next_frame(viewer)) == [("p", ("d5", 26), 3)]
    for client in (publisher, viewer):
        await client.close()


async def test_count_counts_groups_as_they_appear_and_empty(connect: Connect) -> None:
    publisher = await desks(connect, 3)
    viewer, whole = await connect(), await connect()
    await viewer.request({**window("v", 2, options="count"), "cid": "v"})
    assert brief(await viewer.until(lambda m: m["c"] == "group_end"))[-1] == ("group_end", 3)
    every = {"c": "sow_and_subscribe", "t": "orders", "cid": "w", "grouping": ["/desk"], "o": "count"}
    await whole.request(every)
    assert (await whole.until(lambda m: m["c"] == "group_end"))[-1]["matches"] == 3
    # A new group past the window's end: the count alone; it is in the whole view with its count.
    await publisher.send(publish(50, "d0", 1))
    assert brief(await next_frame(viewer)) == [("count", 4)]
    assert [m["c"] for m in await next_frame(whole)] == ["p", "count"]
    # A group changes, the number does not: no count.
    await publisher.request({**publish(50, "d0", 2), "cid": "same"})
    assert await viewer.settled() == []
    assert [m["c"] for m in await next_frame(whole)] == ["p"]
    # A burst of new groups: at most one count per frame, the last one right.
    await publisher.send(*[publish(60 + n, f"e{n}", 1) for n in range(20)])
    frames = await frames_until(viewer, lambda m: m["c"] == "count" and m["matches"] == 24)
    assert all(sum(m["c"] == "count" for m in frame) <= 1 for frame in frames)
    # Groups that empty (their last order deleted) go, and so does the number.
    await publisher.send({"c": "sow_delete", "t": "orders", "filter": "/order >= 60"})
    got = await viewer.until(lambda m: m["c"] == "count" and m["matches"] == 4)
    assert brief(got)[-1] == ("count", 4)
    await publisher.send({"c": "sow_delete", "t": "orders", "filter": "/desk = 'd3'"})  # the top one
    got = await viewer.until(lambda m: m["c"] == "count" and m["matches"] == 3)
    assert brief(got)[-2:] == [("p", ("d1", 10), None), ("count", 3)]
    for client in (publisher, viewer, whole):
        await client.close()
