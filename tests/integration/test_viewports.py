"""Viewports and ``count`` (docs/protocol.md, Viewports) over a real socket to a real server,
checked frame by frame where the protocol speaks of frames."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson

from ..waiting import HANG_S
from .client import Client, Message
from .conftest import StartServer
from .server_process import auth_section

Connect = Callable[..., Any]


def publish(order: int, **fields: Any) -> Message:
    return {"c": "publish", "t": "orders", "data": {"order": order, **fields}}


def window(sub_id: str, top: int, skip: int = 0, options: str = "", **fields: Any) -> Message:
    return {
        "c": "sow_and_subscribe",
        "t": "orders",
        "sub_id": sub_id,
        "top_n": top,
        "skip_n": skip,
        "orderby": "/order",
        "o": options,
        **fields,
    }


async def frames_until(client: Client, done: Callable[[Message], bool]) -> list[list[Message]]:
    """Whole frames, as the socket delivered them, up to the one holding a message ``done`` holds for."""
    assert not client.pending
    frames: list[list[Message]] = []
    while True:
        async with asyncio.timeout(HANG_S):
            decoded = orjson.loads(await client.ws.recv())
        frame = decoded if isinstance(decoded, list) else [decoded]
        frames.append(frame)
        if any(done(m) for m in frame):
            return frames


async def next_frame(client: Client) -> list[Message]:
    (frame,) = await frames_until(client, lambda m: True)
    return frame


async def move(client: Client, command: Message) -> list[Message]:
    """Send a ``replace`` and return the frame that answers it, after checking it is one frame:
    acks may come before it, nothing of the answer outside it."""
    await client.send({**command, "o": ",".join(filter(None, [command.get("o", ""), "replace"]))})
    frames = await frames_until(client, lambda m: m["c"] == "group_end")
    answer = frames[-1]
    for frame in frames[:-1]:
        assert {m["c"] for m in frame} <= {"ack"}, frame
    return [m for m in answer if m["c"] != "ack"]


def orders(messages: list[Message]) -> list[tuple[Any, ...]]:
    """Each message briefly: its kind, its order (or key-only), its pos or reason."""
    out: list[tuple[Any, ...]] = []
    for m in messages:
        if m["c"] in ("sow", "oof", "p"):
            out.append(
                (m["c"], m["data"]["order"] if "data" in m else "key", m.get("pos") or m.get("reason"))
            )
        elif m["c"] in ("group_begin", "group_end", "count"):
            out.append((m["c"], m.get("matches")))
    return out


async def filled(connect: Connect, count: int, **fields: Any) -> Client:
    publisher: Client = await connect()
    await publisher.send(*[publish(n, **fields) for n in range(1, count + 1)])
    await publisher.request({"c": "flush", "cid": "sync"})
    return publisher


async def test_a_move_sends_kept_rows_as_keys_new_rows_in_full_and_oofs_in_one_frame(
    connect: Connect,
) -> None:
    await filled(connect, 30)
    viewer: Client = await connect()
    await viewer.request({**window("v", 5, options="oof,count"), "cid": "v"})
    snapshot = await viewer.until(lambda m: m["c"] == "group_end")
    assert orders(snapshot)[-1] == ("group_end", 30)
    answer = await move(viewer, window("v", 5, 2, options="oof,count"))
    assert orders(answer) == [
        ("oof", 1, "match"),
        ("oof", 2, "match"),
        ("group_begin", None),
        ("sow", "key", 1),
        ("sow", "key", 2),
        ("sow", "key", 3),
        ("sow", 6, 4),
        ("sow", 7, 5),
        ("group_end", 30),
    ]
    keys = [m for m in answer if m["c"] == "sow" and "data" not in m]
    assert all(set(m) >= {"c", "k", "pos"} for m in keys)
    # Live afterwards, as a window: order 0 pushes 2 back in (in full) and 7 out.
    publisher: Client = await connect()
    await publisher.send(publish(0))
    assert orders(await next_frame(viewer)) == [("p", 2, None), ("oof", 7, "match"), ("count", 31)]


async def test_without_oof_a_move_sends_no_oof_and_keys_stay_keys_both_ways(connect: Connect) -> None:
    await filled(connect, 20)
    viewer: Client = await connect()
    await viewer.request({**window("v", 4), "cid": "v"})
    await viewer.until(lambda m: m["c"] == "group_end")
    forward = await move(viewer, window("v", 4, 2))
    assert orders(forward) == [
        ("group_begin", None),
        ("sow", "key", 1),
        ("sow", "key", 2),
        ("sow", 5, 3),
        ("sow", 6, 4),
        ("group_end", None),
    ]
    back = await move(viewer, window("v", 4, 0))
    assert orders(back) == [
        ("group_begin", None),
        ("sow", 1, 1),
        ("sow", 2, 2),
        ("sow", "key", 3),
        ("sow", "key", 4),
        ("group_end", None),
    ]


async def test_a_window_that_shrinks_and_grows(connect: Connect) -> None:
    await filled(connect, 20)
    viewer: Client = await connect()
    await viewer.request({**window("v", 5, options="oof"), "cid": "v"})
    await viewer.until(lambda m: m["c"] == "group_end")
    shrunk = await move(viewer, window("v", 3, options="oof"))
    assert orders(shrunk) == [
        ("oof", 4, "match"),
        ("oof", 5, "match"),
        ("group_begin", None),
        *[("sow", "key", n) for n in (1, 2, 3)],
        ("group_end", None),
    ]
    grown = await move(viewer, window("v", 6, options="oof"))
    assert orders(grown) == [
        ("group_begin", None),
        *[("sow", "key", n) for n in (1, 2, 3)],
        *[("sow", n, n) for n in (4, 5, 6)],
        ("group_end", None),
    ]


async def test_a_new_orderby_or_filter_moves_the_same_viewport(connect: Connect) -> None:
    await filled(connect, 10)
    viewer: Client = await connect()
    await viewer.request({**window("v", 3, options="oof,count"), "cid": "v"})
    await viewer.until(lambda m: m["c"] == "group_end")
    descending = await move(viewer, {**window("v", 3, options="oof,count"), "orderby": "/order DESC"})
    assert orders(descending) == [
        *[("oof", n, "match") for n in (1, 2, 3)],
        ("group_begin", None),
        ("sow", 10, 1),
        ("sow", 9, 2),
        ("sow", 8, 3),
        ("group_end", 10),
    ]
    # A filter: 10 and 8 are kept (keys, at their places), 9 leaves, 6 enters.
    evens = await move(
        viewer, {**window("v", 3, options="oof,count"), "orderby": "/order DESC", "filter": "/order % 2 = 0"}
    )
    assert orders(evens) == [
        ("oof", 9, "match"),
        ("group_begin", None),
        ("sow", "key", 1),
        ("sow", "key", 2),
        ("sow", 6, 3),
        ("group_end", 5),
    ]
    # What a replace omits is gone: no filter, no count.
    plain = await move(viewer, {**window("v", 2, options="oof"), "orderby": "/order DESC"})
    assert orders(plain) == [
        ("oof", 8, "match"),
        ("oof", 6, "match"),
        ("group_begin", None),
        ("sow", "key", 1),
        ("sow", 9, 2),
        ("group_end", None),
    ]


async def test_the_answer_is_one_frame_past_bs_and_the_frame_size_limit(start_server: StartServer) -> None:
    server = start_server({"max_message_bytes": 4096})
    publisher = await Client.connect(server.url)
    viewer = await Client.connect(server.url)
    padding = "x" * 300
    for n in range(1, 61):  # one a frame: inbound frames are held to the limit too
        await publisher.send(publish(n, pad=padding))
    await publisher.request({"c": "flush", "cid": "sync"})
    await viewer.request({**window("v", 20, options="oof"), "cid": "v", "bs": 2})
    await viewer.until(lambda m: m["c"] == "group_end")
    answer = await move(viewer, {**window("v", 20, 30, options="oof"), "bs": 2})
    assert len(orjson.dumps(answer)) > 4096  # bigger than a frame may be, and still one frame
    assert [m.get("pos") for m in answer if m["c"] == "sow"] == list(range(1, 21))
    assert sum(m["c"] == "oof" for m in answer) == 20
    await publisher.close()
    await viewer.close()


async def test_a_delta_window_keeps_what_it_holds_across_a_move(connect: Connect) -> None:
    publisher = await filled(connect, 10, qty=1)
    viewer: Client = await connect()
    await viewer.request({**window("v", 4), "c": "sow_and_delta_subscribe", "cid": "v"})
    await viewer.until(lambda m: m["c"] == "group_end")
    await move(viewer, {**window("v", 4, 2), "c": "sow_and_delta_subscribe"})
    await publisher.send(publish(3, qty=2))  # kept by the move: a patch against what it holds
    (change,) = await viewer.until(lambda m: m["c"] == "p")
    assert change["patch"] == [{"op": "replace", "path": "/qty", "value": 2}]


async def test_count_follows_every_change_once_per_frame_with_the_latest_number(connect: Connect) -> None:
    publisher = await filled(connect, 10)
    viewer: Client = await connect()
    await viewer.request({**window("v", 3, options="count"), "cid": "v"})
    assert (await viewer.until(lambda m: m["c"] == "group_end"))[-1]["matches"] == 10
    # Rows past the window's end: nothing but the count, in one burst.
    await publisher.send(*[publish(n) for n in range(100, 150)])
    await publisher.request({"c": "flush", "cid": "f"})
    frames = await frames_until(viewer, lambda m: m["c"] == "count" and m["matches"] == 60)
    for frame in frames:
        counts = [m for m in frame if m["c"] == "count"]
        assert len(counts) <= 1 and {m["c"] for m in frame} == {"count"}
    assert await viewer.settled() == []
    # A delete at the window's top: the row that moves in, then the count, in one frame.
    await publisher.send({"c": "sow_delete", "t": "orders", "filter": "/order = 1"})
    frame = await next_frame(viewer)
    assert orders(frame) == [("p", 4, None), ("count", 59)]


async def test_count_on_a_subscription_that_is_not_a_window(connect: Connect) -> None:
    publisher = await filled(connect, 6, qty=5)
    viewer: Client = await connect()
    await viewer.request(
        {
            "c": "sow_and_subscribe",
            "t": "orders",
            "sub_id": "big",
            "filter": "/qty > 10",
            "o": "count",
            "cid": "b",
        }
    )
    assert (await viewer.until(lambda m: m["c"] == "group_end"))[-1]["matches"] == 0
    await publisher.send(publish(1, qty=20))
    assert orders(await next_frame(viewer)) == [("p", 1, None), ("count", 1)]
    await publisher.request({**publish(2, qty=1), "cid": "outside"})  # outside before and after: nothing
    assert await viewer.settled() == []
    await publisher.send(publish(1, qty=3))  # leaves (no oof asked): the count alone
    assert orders(await next_frame(viewer)) == [("count", 0)]
    await publisher.send(publish(7, qty=30), publish(8, qty=40))
    await publisher.request({"c": "flush", "cid": "f"})
    received = await viewer.until(lambda m: m["c"] == "count" and m["matches"] == 2)
    assert [m["matches"] for m in received if m["c"] == "count"][-1] == 2
    await publisher.send({"c": "sow_delete", "t": "orders", "filter": "/order = 7"})
    assert orders(await viewer.until(lambda m: m["c"] == "count")) == [("count", 1)]


async def test_subscriptions_of_one_socket_with_equal_counts_share_one_message(connect: Connect) -> None:
    publisher = await filled(connect, 4)
    viewer: Client = await connect()
    for sub_id, top in (("a", 1), ("b", 2)):
        await viewer.request({**window(sub_id, top, options="count"), "cid": sub_id})
        await viewer.until(lambda m: m["c"] == "group_end")
    await publisher.send(publish(50))
    frame = await next_frame(viewer)
    assert frame == [{"c": "count", "t": "orders", "sids": ["a", "b"], "matches": 5}]


async def test_a_transaction_carries_one_count_at_its_end(connect: Connect) -> None:
    publisher = await filled(connect, 2)
    viewer: Client = await connect()
    await viewer.request({**window("v", 5, options="count"), "cid": "v"})
    await viewer.until(lambda m: m["c"] == "group_end")
    await publisher.send({"c": "tx", "cmds": [publish(3), publish(4), publish(90)]})
    frame = await next_frame(viewer)
    assert [m["c"] for m in frame] == ["tx_begin", "p", "p", "p", "count", "tx_end"]
    assert frame[-2]["matches"] == 5


async def test_count_is_for_snapshot_subscriptions(connect: Connect) -> None:
    viewer: Client = await connect()
    for command in ("subscribe", "sow"):
        got = await viewer.request({"c": command, "t": "orders", "cid": command, "o": "count"})
        assert got[-1]["status"] == "failure" and got[-1]["reason"].startswith("invalid options")


USERS = [
    {"user_id": "alice", "password": "a", "read": ["orders"], "write": ["orders"]}
    | {"filter": {"orders": "/customer = 'Alice'"}},
    {"user_id": "desk", "password": "d", "read": ["orders"], "write": ["orders"]},
]


async def test_count_and_moves_see_only_what_the_user_may(start_server: StartServer) -> None:
    server = start_server(extra=auth_section(*USERS))
    desk, alice = await Client.connect(server.url), await Client.connect(server.url)
    for client, user, password in ((desk, "desk", "d"), (alice, "alice", "a")):
        await client.request({"c": "logon", "cid": "l", "user_id": user, "pw": password})
    await desk.send(*[publish(n, customer="Alice" if n % 3 == 0 else "Bob") for n in range(1, 31)])
    await desk.request({"c": "flush", "cid": "sync"})
    await alice.request({**window("v", 3, options="oof,count"), "cid": "v"})
    snapshot = await alice.until(lambda m: m["c"] == "group_end")
    assert orders(snapshot) == [
        ("group_begin", None),
        ("sow", 3, None),
        ("sow", 6, None),
        ("sow", 9, None),
        ("group_end", 10),
    ]
    answer = await move(alice, window("v", 3, 2, options="oof,count"))
    assert orders(answer) == [
        ("oof", 3, "match"),
        ("oof", 6, "match"),
        ("group_begin", None),
        ("sow", "key", 1),
        ("sow", 12, 2),
        ("sow", 15, 3),
        ("group_end", 10),
    ]
    await desk.send(publish(100, customer="Bob"), publish(101, customer="Alice"))
    assert orders(await alice.until(lambda m: m["c"] == "count")) == [("count", 11)]
    await desk.send(publish(12, customer="Bob"))  # leaves her view: out of the window too
    got = await alice.until(lambda m: m["c"] == "count")
    assert orders(got) == [("oof", 12, "entitlement"), ("p", 18, None), ("count", 10)]
    for client in (desk, alice):
        await client.close()
