"""Aggregated views (docs/protocol.md, Aggregated views) over a real socket to a real server."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from ..waiting import HANG_S
from .client import Client, Message
from .conftest import StartServer
from .server_process import ServerProcess, auth_section, write_config

Connect = Callable[..., Any]

BOOK = (
    "grouping=[/desk],projection=[/desk,SUM(/qty) AS /qty,SUM(/qty * /px) AS /notional,"
    "COUNT(/order) AS /orders,AVG(/px) AS /avg_px,MIN(/px) AS /low,MAX(/px) AS /high]"
)


def pub(order: int, **fields: Any) -> Message:
    return {"c": "publish", "t": "orders", "data": {"order": order, **fields}}


async def feed(client: Client, *publishes: Message) -> None:
    """Publish, and wait until every publish is applied (a flush's ack comes after them)."""
    await client.send(*publishes)
    await client.request({"c": "flush", "cid": "f"})


async def groups_of(client: Client, command: Message) -> tuple[dict[str, Any], list[Message]]:
    """Subscribe (or query); the groups of the snapshot by ``k``, and every message up to group_end."""
    await client.send(command)
    got = await client.until(lambda m: m["c"] == "group_end" or m.get("status") == "failure")
    return {m["k"]: m["data"] for m in got if m["c"] == "sow"}, got


async def frame(client: Client, timeout: float = HANG_S) -> list[Message]:
    """The messages of the next frame."""
    assert not client.pending
    async with asyncio.timeout(timeout):
        decoded = orjson.loads(await client.ws.recv())
    return decoded if isinstance(decoded, list) else [decoded]


def by_desk(messages: list[Message]) -> dict[str, Any]:
    return {m["data"]["desk"]: m["data"] for m in messages if m["c"] in ("sow", "p") and "data" in m}


async def test_the_book_example_and_a_move_updates_both_groups_in_one_frame(connect: Connect) -> None:
    publisher, viewer = await connect(), await connect()
    await feed(
        publisher,
        pub(1, desk="fx", qty=10, px=2.0),
        pub(2, desk="fx", qty=30, px=4.0),
        pub(3, desk="rates", qty=5, px=None),
    )
    groups, _ = await groups_of(
        viewer, {"c": "sow_and_subscribe", "t": "orders", "cid": "g", "o": "oof," + BOOK}
    )
    assert sorted(groups.values(), key=lambda g: g["desk"]) == [
        {"desk": "fx", "qty": 40, "notional": 140.0, "orders": 2, "avg_px": 3.0, "low": 2.0, "high": 4.0},
        {"desk": "rates", "qty": 5, "notional": None, "orders": 1, "avg_px": None, "low": None, "high": None},
    ]
    await publisher.send(pub(2, desk="rates", qty=30, px=4.0))
    moved = await frame(viewer)
    assert [m["c"] for m in moved] == ["p", "p"]
    assert by_desk(moved) == {
        "fx": {
            "desk": "fx",
            "qty": 10,
            "notional": 20.0,
            "orders": 1,
            "avg_px": 2.0,
            "low": 2.0,
            "high": 2.0,
        },
        "rates": {
            "desk": "rates",
            "qty": 35,
            "notional": 120.0,
            "orders": 2,
            "avg_px": 4.0,
            "low": 4.0,
            "high": 4.0,
        },
    }


async def test_grouping_alone_counts_and_keys_are_stable(connect: Connect) -> None:
    publisher, viewer = await connect(), await connect()
    await feed(
        publisher, pub(1, desk="fx", sym="EUR"), pub(2, desk="fx", sym="EUR"), pub(3, desk="fx", sym="GBP")
    )
    command = {"c": "sow", "t": "orders", "cid": "q", "grouping": ["/desk", "/sym"], "orderby": "/sym"}
    groups, got = await groups_of(viewer, command)
    assert [m["data"] for m in got if m["c"] == "sow"] == [
        {"desk": "fx", "sym": "EUR", "count": 2},
        {"desk": "fx", "sym": "GBP", "count": 1},
    ]
    again, _ = await groups_of(
        viewer, {**command, "cid": "r", "o": "grouping=[/desk,/sym]", "grouping": None}
    )
    assert again == groups  # the same k for the same grouping values


async def test_oof_reasons_match_deleted_and_expired(connect: Connect) -> None:
    publisher, viewer = await connect(), await connect()
    await feed(publisher, pub(1, desk="a", qty=1), pub(2, desk="b", qty=1), pub(3, desk="c", qty=1))
    await groups_of(
        viewer,
        {
            "c": "sow_and_subscribe",
            "t": "orders",
            "cid": "g",
            "filter": "/qty > 0",
            "o": "oof,grouping=[/desk]",
        },
    )
    await publisher.send(pub(1, desk="a", qty=0))  # no longer passes the filter
    await publisher.send({"c": "sow_delete", "t": "orders", "filter": "/order = 2"})
    await publisher.send({**pub(3, desk="c", qty=1), "e": 1})
    got = await viewer.until(lambda m: m["c"] == "oof" and m["data"]["desk"] == "c", timeout=HANG_S)
    oofs = [(m["data"]["desk"], m["reason"]) for m in got if m["c"] == "oof"]
    assert oofs == [("a", "match"), ("b", "deleted"), ("c", "expired")]


async def test_limits_are_invalid_options(connect: Connect) -> None:
    viewer = await connect()
    long_projection = [f"SUM(/qty) AS /{'x' * 60}{i}" for i in range(60)]  # some 4 KB: the o may be that long
    cases: list[tuple[Message, str]] = [
        ({"o": "projection=[/desk,SUM(MAX(/qty)) AS /x]"}, "aggregate of an aggregate"),
        ({"grouping": [f"/g{i}" for i in range(17)]}, "16 grouping"),
        ({"projection": [f"COUNT(*) AS /n{i}" for i in range(65)]}, "64 projected"),
        ({"projection": ["SUM(/" + "q" * 70_000 + ") AS /x"]}, "64 KB"),
        ({"o": "grouping=[/desk],projection=[/desk,SUM(/qty)]"}, "AS"),
    ]
    for number, (fields, says) in enumerate(cases):
        replies = await viewer.request({"c": "sow_and_subscribe", "t": "orders", "cid": number, **fields})
        assert replies[-1]["status"] == "failure", replies
        assert replies[-1]["reason"].startswith("invalid options") and says in replies[-1]["reason"], replies
    o = "grouping=[/desk],projection=[/desk," + ",".join(long_projection) + "]"
    assert len(o) > 4096
    _, got = await groups_of(viewer, {"c": "sow", "t": "orders", "cid": "long", "o": o})
    assert got[-1]["c"] == "group_end"


async def test_a_window_over_groups_ordered_by_a_projected_field(connect: Connect) -> None:
    publisher, viewer = await connect(), await connect()
    await feed(publisher, pub(1, desk="a", qty=1), pub(2, desk="b", qty=2), pub(3, desk="c", qty=3))
    command = {
        "c": "sow_and_subscribe",
        "t": "orders",
        "cid": "w",
        "top_n": 2,
        "orderby": "/qty DESC",
        "o": "oof,positions,grouping=[/desk],projection=[/desk,SUM(/qty) AS /qty]",
        "a": "stats",
    }
    await viewer.send(command)
    got = await viewer.until(lambda m: m["c"] == "ack" and m["a"] == "stats")
    assert [(m["data"]["desk"], m["pos"]) for m in got if m["c"] == "sow"] == [("c", 1), ("b", 2)]
    assert got[-1]["matches"] == 3  # groups
    await publisher.send(pub(4, desk="a", qty=10))  # a: 11, to the top; b pushed out
    changed = await frame(viewer)
    assert [(m["c"], m["data"]["desk"], m.get("pos"), m.get("reason")) for m in changed] == [
        ("oof", "b", None, "match"),
        ("p", "a", 1, None),
    ]


async def test_delta_patches_and_no_empties(connect: Connect) -> None:
    publisher, viewer = await connect(), await connect()
    await feed(publisher, pub(1, desk="a", qty=1, note="x"), pub(2, desk="a", qty=2))
    await groups_of(
        viewer,
        {
            "c": "sow_and_delta_subscribe",
            "t": "orders",
            "cid": "d",
            "o": "no_empties,grouping=[/desk],projection=[/desk,SUM(/qty) AS /qty]",
        },
    )
    await publisher.send(pub(1, desk="a", qty=1, note="y"))  # the group is unchanged: nothing
    await publisher.send(pub(2, desk="a", qty=5))
    (patch,) = await frame(viewer)
    assert patch["patch"] == [{"op": "replace", "path": "/qty", "value": 6}]


async def test_subscription_conflation_sends_the_final_totals(connect: Connect) -> None:
    publisher, viewer = await connect(), await connect()
    await feed(publisher, pub(1, desk="a", qty=1))
    await groups_of(
        viewer,
        {
            "c": "sow_and_subscribe",
            "t": "orders",
            "cid": "c",
            "o": "conflation=300ms,grouping=[/desk],projection=[/desk,SUM(/qty) AS /qty]",
        },
    )
    await feed(publisher, *[pub(n, desk="a", qty=1) for n in range(2, 12)])
    got = await viewer.until(lambda m: m["c"] == "p")
    assert [m["data"] for m in got] == [{"desk": "a", "qty": 11}]
    assert await viewer.silence(0.5) == []


async def test_a_transaction_changes_each_group_once(connect: Connect) -> None:
    publisher, viewer = await connect(), await connect()
    await feed(publisher, pub(1, desk="a", qty=1), pub(2, desk="b", qty=1))
    await groups_of(
        viewer,
        {
            "c": "sow_and_subscribe",
            "t": "orders",
            "cid": "g",
            "o": "grouping=[/desk],projection=[/desk,SUM(/qty) AS /qty]",
        },
    )
    cmds = [
        pub(3, desk="a", qty=10),
        pub(4, desk="a", qty=100),
        pub(1, desk="b", qty=1),
        pub(5, desk="c", qty=7),
    ]
    await publisher.request({"c": "tx", "cid": "t", "cmds": cmds})
    got = await frame(viewer)
    assert [m["c"] for m in got] == ["tx_begin", "p", "p", "p", "tx_end"]
    assert by_desk(got) == {
        "a": {"desk": "a", "qty": 110},
        "b": {"desk": "b", "qty": 2},
        "c": {"desk": "c", "qty": 7},
    }


async def test_a_view_resumes_while_its_state_lives_and_is_answered_in_full_after(connect: Connect) -> None:
    publisher, viewer, keeper = await connect(), await connect(), await connect()
    await feed(publisher, pub(1, desk="a"), pub(2, desk="b"), pub(3, desk="c"))
    command = {"c": "sow_and_subscribe", "t": "orders", "cid": "r", "o": "oof,resume,grouping=[/desk]"}
    await groups_of(keeper, command)  # keeps the aggregation alive
    _, got = await groups_of(viewer, command)
    bm = got[-1]["bm"]
    await viewer.request({"c": "unsubscribe", "cid": "u", "sub_id": "r"})
    await feed(publisher, pub(4, desk="a"), {"c": "sow_delete", "t": "orders", "filter": "/desk = 'b'"})
    _, got = await groups_of(viewer, {**command, "bm": bm})
    assert got[-1]["resumed"] is True
    net = [(m["c"], m["data"], m.get("reason")) for m in got if m["c"] in ("sow", "oof")]
    assert net == [("sow", {"desk": "a", "count": 2}, None), ("oof", {"desk": "b", "count": 1}, "deleted")]
    bm = got[-1]["bm"]
    # With every subscriber gone, the state goes: a later resume gets the groups in full.
    await viewer.request({"c": "unsubscribe", "cid": "u2", "sub_id": "r"})
    await keeper.request({"c": "unsubscribe", "cid": "u3", "sub_id": "r"})
    await feed(publisher, pub(5, desk="c"))
    groups, got = await groups_of(viewer, {**command, "bm": bm})
    assert got[-1]["resumed"] is False
    assert sorted(g["desk"] for g in groups.values()) == ["a", "c"]


async def test_hidden_view_gets_one_message_per_group_per_interval(start_server: StartServer) -> None:
    server = start_server({"hidden_interval": "300ms"})
    publisher, viewer = await Client.connect(server.url), await Client.connect(server.url)
    try:
        await feed(publisher, pub(1, desk="a", qty=1))
        await groups_of(
            viewer,
            {
                "c": "sow_and_subscribe",
                "t": "orders",
                "cid": "h",
                "o": "grouping=[/desk],projection=[/desk,SUM(/qty) AS /qty]",
            },
        )
        await viewer.send({"c": "visibility", "hidden": True})
        await feed(publisher, *[pub(n, desk="a", qty=1) for n in range(2, 6)])
        got = await viewer.until(lambda m: m["c"] == "p")
        assert [m["data"] for m in got] == [{"desk": "a", "qty": 5}]
    finally:
        await publisher.close()
        await viewer.close()


async def test_identical_views_share_and_outlive_each_other(connect: Connect) -> None:
    publisher, one, two = await connect(), await connect(), await connect()
    await feed(publisher, pub(1, desk="a", qty=1))
    command = {
        "c": "sow_and_subscribe",
        "t": "orders",
        "cid": "s",
        "o": "grouping=[/desk],projection=[/desk,SUM(/qty) AS /qty]",
    }
    first, _ = await groups_of(one, command)
    second, _ = await groups_of(two, command)
    assert first == second
    await one.request({"c": "unsubscribe", "cid": "u", "sub_id": "s"})
    await publisher.send(pub(2, desk="a", qty=2))
    assert [m["data"] for m in await two.until(lambda m: m["c"] == "p")] == [{"desk": "a", "qty": 3}]


def _person(name: str, customer: str) -> dict[str, Any]:
    return {
        "user_id": name,
        "password": name,
        "read": ["*"],
        "write": ["*"],
        "filter": {"orders": f"/customer = '{customer}'"},
    }


DESK = {"user_id": "desk", "password": "desk", "read": ["*"], "write": ["*"]}


async def _logon(url: str, user: str) -> Client:
    client = await Client.connect(url)
    replies = await client.request({"c": "logon", "cid": "l", "user_id": user, "pw": user})
    assert replies[-1]["status"] == "success", replies
    return client


async def test_totals_count_only_entitled_rows_and_follow_a_reload(tmp_path: Path) -> None:
    config = tmp_path / "auth.toml"
    topics = [{"name": "orders", "key": ["/order"]}]
    write_config(config, {}, topics, auth_section(_person("alice", "Alice"), DESK))
    server = ServerProcess(config, tmp_path / "data")
    try:
        desk = await _logon(server.url, "desk")
        await feed(
            desk,
            pub(1, desk="a", qty=1, customer="Alice"),
            pub(2, desk="a", qty=10, customer="Bob"),
            pub(3, desk="b", qty=100, customer="Bob"),
            pub(6, desk="c", qty=3, customer="Alice"),
        )
        alice = await _logon(server.url, "alice")
        command = {
            "c": "sow_and_subscribe",
            "t": "orders",
            "cid": "e",
            "o": "oof,grouping=[/desk],projection=[/desk,SUM(/qty) AS /qty]",
        }
        groups, _ = await groups_of(alice, command)
        assert sorted(groups.values(), key=str) == [{"desk": "a", "qty": 1}, {"desk": "c", "qty": 3}]
        # Alice may now see Bob's rows instead of her own.
        write_config(config, {}, topics, auth_section(_person("alice", "Bob"), DESK))
        server.process.send_signal(signal.SIGHUP)
        got = await alice.until(lambda m: m["c"] == "p" and m["data"]["desk"] == "b")
        got += await alice.settled()
        assert by_desk(got) == {"a": {"desk": "a", "qty": 10}, "b": {"desk": "b", "qty": 100}}
        oofs = [(m["data"], m["reason"]) for m in got if m["c"] == "oof"]
        assert oofs == [({"desk": "c", "qty": 3}, "entitlement")]  # a group she no longer has
        await desk.send(pub(4, desk="b", qty=1, customer="Alice"), pub(5, desk="b", qty=1, customer="Bob"))
        assert by_desk(await alice.until(lambda m: m["c"] == "p")) == {"b": {"desk": "b", "qty": 101}}
        await desk.close()
        await alice.close()
    finally:
        server.stop()


async def test_a_plain_field_is_the_latest_changed_records_and_skip_n_pages_groups(connect: Connect) -> None:
    publisher, viewer = await connect(), await connect()
    await feed(
        publisher, pub(1, desk="a", sym="EUR"), pub(2, desk="a", sym="GBP"), pub(3, desk="b", sym="JPY")
    )
    command = {
        "c": "sow_and_subscribe",
        "t": "orders",
        "cid": "l",
        "o": "grouping=[/desk],projection=[/desk,/sym,COUNT(*) AS /n]",
        "orderby": "/desk",
        "skip_n": 1,
        "top_n": 1,
    }
    groups, _ = await groups_of(viewer, command)
    assert list(groups.values()) == [{"desk": "b", "sym": "JPY", "n": 1}]
    one_shot, _ = await groups_of(viewer, {**command, "c": "sow", "cid": "s", "skip_n": 0})
    assert list(one_shot.values()) == [{"desk": "a", "sym": "GBP", "n": 2}]  # order 2 changed last
    await feed(publisher, pub(1, desk="a", sym="CHF"))
    again, _ = await groups_of(viewer, {**command, "c": "sow", "cid": "t", "skip_n": 0})
    assert list(again.values()) == [{"desk": "a", "sym": "CHF", "n": 2}]
