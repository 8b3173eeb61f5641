"""Every command and option of the wire protocol, over a real socket to a real server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonpatch

from server.core.records.merge import merge_record

from .client import Client

Connect = Callable[..., Any]


def data_of(messages: list[dict[str, Any]], c: str = "sow") -> list[Any]:
    return [m["data"] for m in messages if m["c"] == c]


async def test_publish_and_sow_with_every_query_field(connect: Connect) -> None:
    client: Client = await connect()
    await client.send(
        *[{"c": "publish", "t": "orders", "data": {"order": n, "qty": n * 10}} for n in range(1, 11)]
    )
    got = await client.request(
        {
            "c": "sow",
            "t": "orders",
            "cid": "q",
            "filter": "/qty >= 30",
            "orderby": "/qty DESC",
            "top_n": 3,
            "skip_n": 1,
            "query_id": "Q",
            "a": "stats,completed",
        },
        "completed",
    )
    assert [m["c"] for m in got] == ["ack", "group_begin", "sow", "sow", "sow", "group_end", "ack", "ack"]
    assert [d["order"] for d in data_of(got)] == [9, 8, 7]
    assert {m["query_id"] for m in got if m["c"] in ("group_begin", "sow", "group_end")} == {"Q"}
    assert got[5]["records"] == 3
    assert (got[6]["matches"], got[6]["records_returned"]) == (8, 3)


async def test_sow_and_subscribe_then_live_updates_and_oof(connect: Connect) -> None:
    publisher, watcher = await connect(), await connect()
    await publisher.request({"c": "publish", "t": "orders", "data": {"order": 1, "qty": 50}, "cid": 0})
    got = await watcher.request(
        {
            "c": "sow_and_subscribe",
            "t": "orders",
            "cid": "s",
            "filter": "/qty > 10",
            "o": "oof",
            "a": "completed",
        },
        "completed",
    )
    assert data_of(got) == [{"order": 1, "qty": 50}]
    await publisher.send({"c": "publish", "t": "orders", "data": {"order": 1, "qty": 60}})
    update = await watcher.recv()
    assert (update["c"], update["sids"], update["data"]) == ("p", ["s"], {"order": 1, "qty": 60})
    await publisher.send({"c": "publish", "t": "orders", "data": {"order": 1, "qty": 5}})
    oof = await watcher.recv()
    assert (oof["c"], oof["reason"], oof["data"], oof["k"]) == (
        "oof",
        "match",
        {"order": 1, "qty": 5},
        update["k"],
    )
    await publisher.send({"c": "publish", "t": "orders", "data": {"order": 1, "qty": 70}})
    assert (await watcher.recv())["data"] == {"order": 1, "qty": 70}, (
        "a record that comes back is sent in full"
    )
    await publisher.send({"c": "sow_delete", "t": "orders", "data": {"order": 1}, "cid": "d", "a": "stats"})
    deleted = await watcher.recv()
    assert (deleted["c"], deleted["reason"], deleted["data"]) == ("oof", "deleted", {"order": 1, "qty": 70})
    stats = await publisher.ack("d", "stats")
    assert (stats[-1]["matches"], stats[-1]["records_deleted"]) == (1, 1)


async def test_delta_subscription_patches_apply_with_jsonpatch(connect: Connect) -> None:
    publisher, watcher = await connect(), await connect()
    record = {"order": 1, "qty": 5, "px": {"bid": 1.0, "ask": 1.1}, "legs": [1, 2]}
    await publisher.request({"c": "publish", "t": "orders", "data": record, "cid": 0})
    got = await watcher.request(
        {"c": "sow_and_delta_subscribe", "t": "orders", "cid": "d", "a": "completed"}, "completed"
    )
    held = data_of(got)[0]
    await publisher.send({"c": "delta_publish", "t": "orders", "data": {"order": 1, "px": {"ask": 1.2}}})
    patch = (await watcher.recv())["patch"]
    assert patch == [{"op": "replace", "path": "/px/ask", "value": 1.2}]
    held = jsonpatch.apply_patch(held, patch)
    await publisher.send({"c": "publish", "t": "orders", "data": {"order": 1, "qty": 6, "legs": [1, 2, 3]}})
    held = jsonpatch.apply_patch(held, (await watcher.recv())["patch"])
    assert held == {"order": 1, "qty": 6, "legs": [1, 2, 3]}


async def test_merge_delta_subscription(connect: Connect) -> None:
    publisher, watcher = await connect(), await connect()
    await publisher.request(
        {"c": "publish", "t": "trades", "data": {"id": 7, "buyer": {"id": "B"}, "q": 1}, "cid": 0}
    )
    got = await watcher.request(
        {"c": "sow_and_delta_subscribe", "t": "trades", "cid": "m", "o": "delta=merge", "a": "completed"},
        "completed",
    )
    held = data_of(got)[0]
    await publisher.send(
        {"c": "delta_publish", "t": "trades", "data": {"id": 7, "buyer": {"id": "B"}, "q": 2}}
    )
    delta = (await watcher.recv())["delta"]
    assert delta == {"id": 7, "buyer": {"id": "B"}, "q": 2}
    assert merge_record(held, delta) == {"id": 7, "buyer": {"id": "B"}, "q": 2}


async def test_options_select_no_sowkey_timestamp_no_empties(connect: Connect) -> None:
    publisher, watcher = await connect(), await connect()
    await watcher.request(
        {
            "c": "delta_subscribe",
            "t": "orders",
            "cid": "s",
            "o": "select=[-/,+/qty], no_sowkey, timestamp, no_empties",
        }
    )
    await publisher.send({"c": "publish", "t": "orders", "data": {"order": 1, "qty": 5, "x": 1}})
    first = await watcher.recv()
    assert first["data"] == {"qty": 5} and "k" not in first and first["ts"].endswith("Z")
    await publisher.send({"c": "publish", "t": "orders", "data": {"order": 1, "qty": 5, "x": 2}})
    await publisher.send({"c": "publish", "t": "orders", "data": {"order": 1, "qty": 6, "x": 2}})
    assert (await watcher.recv())["patch"] == [{"op": "replace", "path": "/qty", "value": 6}]


async def test_shared_sids_for_subscriptions_with_the_same_view(connect: Connect) -> None:
    publisher, watcher = await connect(), await connect()
    await watcher.send(
        {"c": "subscribe", "t": "orders", "sub_id": "a"},
        {"c": "subscribe", "t": "orders", "sub_id": "b", "filter": "/qty > 1"},
    )
    await watcher.request({"c": "subscribe", "t": "orders", "sub_id": "c", "cid": 3, "filter": "/qty > 100"})
    await publisher.send({"c": "publish", "t": "orders", "data": {"order": 1, "qty": 5}})
    message = await watcher.recv()
    assert message["sids"] == ["a", "b"]
    await publisher.request({"c": "flush", "cid": "f"})
    assert await watcher.settled() == []


async def test_unsubscribe_and_replace(connect: Connect) -> None:
    publisher, watcher = await connect(), await connect()
    await watcher.request({"c": "subscribe", "t": "orders", "cid": "s", "filter": "/qty > 100"})
    await watcher.request({"c": "subscribe", "t": "orders", "cid": "s", "filter": "/qty > 1", "o": "replace"})
    await publisher.send({"c": "publish", "t": "orders", "data": {"order": 1, "qty": 5}})
    assert (await watcher.recv())["sids"] == ["s"]
    await watcher.request({"c": "unsubscribe", "sub_id": "s", "cid": "u"})
    await publisher.request({"c": "publish", "t": "orders", "data": {"order": 1, "qty": 6}, "cid": "p"})
    assert await watcher.settled() == []


async def test_errors_are_acks_and_the_socket_stays_open(connect: Connect) -> None:
    client: Client = await connect()
    await client.ws.send("{not json")
    assert (await client.recv())["reason"].startswith("bad message")
    for command, reason in [
        ({"c": "subscribe", "t": "orders", "cid": 1, "filter": "/qty >"}, "bad filter"),
        ({"c": "sow", "t": "plain", "cid": 2}, "invalid topic"),
        ({"c": "subscribe", "t": "orders", "cid": 3, "o": "nope"}, "invalid options"),
        ({"c": "sow", "t": "orders", "cid": 4, "orderby": "qty"}, "invalid order by"),
        ({"c": "publish", "cid": 5, "data": {}}, "no topic"),
        ({"c": "publish", "t": "orders", "cid": 6, "data": {"qty": 1}}, "bad message"),
    ]:
        ack = (await client.request(command))[-1]
        assert ack["status"] == "failure" and ack["reason"].startswith(reason), ack
    await client.request({"c": "subscribe", "t": "orders", "cid": "x"})
    again = (await client.request({"c": "subscribe", "t": "orders", "cid": "x"}))[-1]
    assert again["reason"].startswith("subid in use")
    assert (await client.request({"c": "heartbeat", "cid": "alive"}))[-1]["status"] == "success"


async def test_plain_topic_pub_sub(connect: Connect) -> None:
    publisher, watcher = await connect(), await connect()
    got = await watcher.request(
        {"c": "sow_and_delta_subscribe", "t": "news", "cid": "n", "a": "completed"}, "completed"
    )
    assert [m["c"] for m in got if m["c"] != "ack"] == ["group_begin", "group_end"]
    await publisher.send({"c": "delta_publish", "t": "news", "data": {"headline": "hi"}})
    message = await watcher.recv()
    assert message == {"c": "p", "t": "news", "sids": ["n"], "data": {"headline": "hi"}}


async def test_heartbeat_flush_and_acks(connect: Connect) -> None:
    client: Client = await connect()
    await client.send({"c": "heartbeat"})
    assert await client.recv() == {"c": "heartbeat"}
    got = await client.request(
        {
            "c": "publish",
            "t": "orders",
            "data": {"order": 1},
            "cid": "p",
            "a": "received,processed,persisted",
        },
        "persisted",
    )
    assert [m["a"] for m in got] == ["received", "processed", "persisted"]
    got = await client.request({"c": "flush", "cid": "f", "a": "persisted"}, "persisted")
    assert [m["a"] for m in got] == ["processed", "persisted"]


async def test_publisher_sequence_duplicates(connect: Connect) -> None:
    publisher, watcher = await connect(), await connect()
    await watcher.request({"c": "subscribe", "t": "orders", "cid": "w"})
    logon = await publisher.request({"c": "logon", "client_name": "feed-1", "cid": "l"})
    assert logon[-1]["s"] == 0
    await publisher.request({"c": "publish", "t": "orders", "data": {"order": 1}, "s": 5, "cid": 1})
    duplicate = (
        await publisher.request({"c": "publish", "t": "orders", "data": {"order": 1}, "s": 5, "cid": 2})
    )[-1]
    assert (duplicate["status"], duplicate["reason"]) == ("success", "duplicate")
    assert len([m for m in await watcher.settled() if m["c"] == "p"]) == 1
