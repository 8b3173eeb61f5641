"""The Python subscriber against a real server: a view's snapshot and changes (OOFs included), a
slow reader's net changes, a viewport's rows in order with the view's size, an aggregated view's
groups, a refused view's error, a DataFrame, and a reconnect that resubscribes every view."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from server.client.subscriber import Change, Subscriber, SubscriptionError, View

from ..browser.feed import publish, request
from ..integration.server_process import ServerProcess, write_config
from ..waiting import HANG_S

TOPICS = [{"name": "orders", "key": ["/order"]}]


async def take(changes: Any, count: int) -> list[Change]:
    """The next ``count`` changes of one reader (``view.__aiter__()``: a reader starts from the
    records held when it starts, as the JavaScript client's ``for await`` does)."""
    async with asyncio.timeout(HANG_S):
        return [await anext(changes) for _ in range(count)]


async def followed(subscriber: Subscriber, records: int) -> tuple[View, Any]:
    """A view of every order, and a reader that has read its snapshot of ``records``."""
    view = subscriber.subscribe("orders")
    await view.ready()
    reader = view.__aiter__()
    await take(reader, records)
    return view, reader


async def test_a_view_gets_its_snapshot_then_every_change(
    server: ServerProcess, subscriber: Subscriber
) -> None:
    publish(server, *[{"order": n, "qty": 10 * n} for n in range(1, 4)])
    view = subscriber.subscribe("orders", filter="/qty > 10")
    await view.ready()
    assert sorted(record["order"] for record in view.records.values()) == [2, 3]
    reader = view.__aiter__()
    snapshot = await take(reader, 2)
    assert {change.kind for change in snapshot} == {"snapshot"}
    await asyncio.to_thread(publish, server, {"order": 4, "qty": 40}, {"order": 2, "qty": 1})
    changes = await take(reader, 2)
    assert [(c.kind, c.record["order"]) for c in changes] == [("insert", 4), ("oof", 2)]
    assert changes[1].reason == "match" and changes[1].record["qty"] == 1  # as it now is
    frame = view.frame()
    assert sorted(frame["order"]) == [3, 4] and frame.index.name == "key"
    await view.close()


async def test_a_slow_reader_gets_the_net_change_per_record(
    server: ServerProcess, subscriber: Subscriber
) -> None:
    view = subscriber.subscribe("orders")
    await view.ready()
    iterator = view.__aiter__()
    await asyncio.to_thread(publish, server, *[{"order": 1, "qty": q} for q in range(100)])
    await asyncio.to_thread(publish, server, {"order": 2, "qty": 1})
    await asyncio.sleep(0.3)
    first = await anext(iterator)
    second = await anext(iterator)
    assert (first.kind, first.record["qty"]) == ("insert", 99), "one change for a hundred"
    assert second.record["order"] == 2


async def test_a_viewport_keeps_its_rows_in_order_and_the_views_size(
    server: ServerProcess, subscriber: Subscriber
) -> None:
    publish(server, *[{"order": n, "qty": n % 7} for n in range(1, 21)])
    window = subscriber.viewport("orders", rows=(0, 4), orderby="/qty DESC, /order")
    await window.ready()
    assert [row["order"] for row in window.rows] == [6, 13, 20, 5, 12] and window.count == 20
    await asyncio.to_thread(publish, server, {"order": 21, "qty": 9})
    async with asyncio.timeout(HANG_S):
        while [row["order"] for row in window.rows] != [21, 6, 13, 20, 5] or window.count != 21:
            await asyncio.sleep(0.05)
    groups = subscriber.aggregate(
        "orders", grouping=["/qty"], projection=["/qty", "COUNT(/order) AS /n"], filter="/qty >= 5"
    )
    await groups.ready()
    assert sorted((group["qty"], group["n"]) for group in groups.records.values()) == [
        (5, 3),
        (6, 3),
        (9, 1),
    ]


async def test_a_refused_view_raises_the_servers_reason(
    server: ServerProcess, subscriber: Subscriber
) -> None:
    view = subscriber.subscribe("orders", filter="/qty >")
    with pytest.raises(SubscriptionError, match="orders: bad filter"):
        await view.ready()
    with pytest.raises(SubscriptionError):
        await take(view.__aiter__(), 1)


async def test_after_a_restart_every_view_is_subscribed_again(tmp_path: Path) -> None:
    config = write_config(tmp_path / "server.toml", {}, TOPICS)
    first = ServerProcess(config, tmp_path / "data")
    port = first.port
    publish(first, {"order": 1, "qty": 5}, {"order": 2, "qty": 6})
    subscriber = Subscriber(first.url)
    await subscriber.connect()
    try:
        view, reader = await followed(subscriber, 2)
        first.stop()
        second = ServerProcess(config, tmp_path / "data", port=port)  # the same address, no records kept
        try:
            await asyncio.to_thread(
                request, second.url, [{"c": "publish", "t": "orders", "data": {"order": 3, "qty": 7}}]
            )
            changes = await take(reader, 3)
            assert sorted((c.kind, c.reason, c.record["order"]) for c in changes) == [
                ("insert", None, 3),
                ("oof", "stale", 1),
                ("oof", "stale", 2),
            ]
            assert list(view.records.values()) == [{"order": 3, "qty": 7}]
        finally:
            second.stop()
    finally:
        await subscriber.close()


async def test_a_view_resumes_from_its_bookmark_with_only_what_changed_meanwhile(
    server: ServerProcess,
) -> None:
    publish(server, *[{"order": n, "qty": n} for n in range(1, 4)])
    subscriber = Subscriber(server.url)
    await subscriber.connect()
    try:
        view, reader = await followed(subscriber, 3)
        assert view.resumed is None and view.bookmark is not None
        # Cut off, and kept away (its reconnects find nobody) while the records change.
        subscriber.url = "ws://127.0.0.1:9/ws"
        assert subscriber._ws is not None
        await subscriber._ws.close()
        await asyncio.to_thread(
            request,
            server.url,
            [
                {"c": "publish", "t": "orders", "data": {"order": 2, "qty": 20}},
                {
                    "c": "sow_delete",
                    "t": "orders",
                    "sow_keys": next(k for k, r in view.records.items() if r["order"] == 3),
                },
                {"c": "publish", "t": "orders", "data": {"order": 4, "qty": 4}},
            ],
        )
        subscriber.url = server.url
        changes = await take(reader, 3)
        # The net change only: record 1 is not sent again, nothing is stale.
        assert sorted((c.kind, c.reason, c.record["order"]) for c in changes) == [
            ("insert", None, 4),
            ("oof", "deleted", 3),
            ("update", None, 2),
        ]
        assert view.resumed is True
        assert sorted((r["order"], r["qty"]) for r in view.records.values()) == [(1, 1), (2, 20), (4, 4)]
        await asyncio.to_thread(publish, server, {"order": 1, "qty": 100})  # and it is live again
        [change] = await take(reader, 1)
        assert (change.kind, change.record) == ("update", {"order": 1, "qty": 100})
    finally:
        await subscriber.close()


async def test_close_ends_a_readers_loop_cleanly(server: ServerProcess) -> None:
    subscriber = Subscriber(server.url)
    await subscriber.connect()
    view = subscriber.subscribe("orders")
    await view.ready()
    seen: list[Change] = []

    async def read() -> None:
        async for change in view:
            seen.append(change)

    reading = asyncio.create_task(read())
    await asyncio.sleep(0.1)
    await subscriber.close()
    async with asyncio.timeout(HANG_S):
        await reading  # ends, without an error
    assert seen == []
