"""Entitlement filters are a gate of their own on every read and write path (docs/protocol.md,
Entitlements)."""

from __future__ import annotations

from typing import Any

import pytest

from ..harness import Harness, Peer, acks, entries_of, logged_on, of_type, order, replay_all

TOPICS = [
    {"name": "orders", "key": ["/order"], "durable": True},
    {
        "name": "books",
        "key": ["/order"],
        "conflation": "always",
        "conflation_merge": "tests.core.queue.merge_functions:reassign",
    },
]


def user(user_id: str, orders: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"user_id": user_id, "password": "pw", "read": ["*"], "write": ["*"]}
    if orders is not None:
        entry["filter"] = {"orders": orders, "books": orders}
    return entry


AUTH = {
    "user": [
        user("alice", "/customer = 'Alice'"),
        user("bob", "/customer = 'Bob'"),
        user("owner", "/owner = USER()"),
        user("feed", None),
    ]
}


@pytest.fixture
def h() -> Harness:
    return Harness(topics=TOPICS, auth=AUTH)


@pytest.fixture
def feed(h: Harness) -> Peer:
    feed = logged_on(h, "feed")
    feed.send(
        order(1, "Alice", qty=10, secret="a1"),
        order(2, "Bob", qty=20, secret="b2"),
        order(3, "Alice", qty=30, secret="a3"),
        order(4, "Bob", qty=40, secret="b4"),
    )
    return feed


def sow(peer: Peer, topic: str = "orders") -> dict[int, Any]:
    return {
        m["data"]["order"]: m["data"] for m in of_type(peer.send({"c": "sow", "t": topic, "cid": "q"}), "sow")
    }


# -- reads ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        {"c": "sow_and_subscribe", "o": "oof"},
        {"c": "sow_and_delta_subscribe", "o": "oof"},
        {"c": "sow_and_delta_subscribe", "o": "oof,delta=merge"},
        {"c": "sow_and_subscribe", "o": "oof,select=[-/secret]"},
        {"c": "sow_and_subscribe", "o": "oof,conflation=1s"},
    ],
)
def test_a_record_leaving_the_entitlement_is_an_entitlement_oof_with_the_last_allowed_state(
    h: Harness, feed: Peer, command: dict[str, Any]
) -> None:
    alice = logged_on(h, "alice")
    snapshot = alice.send({**command, "t": "orders", "sub_id": "s", "filter": "/qty > 0"})
    assert sorted(m["data"]["order"] for m in of_type(snapshot, "sow")) == [1, 3]
    feed.send(order(3, "Bob", qty=31, secret="moved"))
    h.clock.now += 2
    h.broker.advance(h.clock.now)
    got = alice.take()
    assert [(m["c"], m["reason"]) for m in got] == [("oof", "entitlement")]
    body = got[0]["data"]
    assert body["customer"] == "Alice" and body["qty"] == 30
    assert body.get("secret") in ("a3", None) and "moved" not in str(got)


def test_the_entitlement_reason_wins_over_the_subscriptions_own_filter(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    alice.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "s", "filter": "/qty < 35", "o": "oof"})
    feed.send(order(3, "Bob", qty=99))
    got = alice.take()
    assert [(m["reason"], m["data"]["customer"], m["data"]["qty"]) for m in got] == [
        ("entitlement", "Alice", 30)
    ]


def test_a_record_that_comes_back_into_the_entitlement_is_sent_in_full(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    alice.send({"c": "sow_and_delta_subscribe", "t": "orders", "sub_id": "s", "o": "oof"})
    feed.send(order(2, "Alice", qty=21, secret="b2"))
    got = alice.take()
    assert [(m["c"], m["data"]["order"]) for m in got] == [("p", 2)]
    feed.send(order(2, "Bob", qty=22), order(2, "Bob", qty=23))
    assert [(m["c"], m["reason"], m["data"]["qty"]) for m in alice.take()] == [("oof", "entitlement", 21)]


def test_a_stateless_subscription_never_receives_rows_outside_the_entitlement(h: Harness, feed: Peer) -> None:
    alice, everyone = logged_on(h, "alice"), logged_on(h, "feed")
    alice.send({"c": "subscribe", "t": "orders", "sub_id": "s"})
    everyone.send({"c": "subscribe", "t": "orders", "sub_id": "s"})
    feed.send(order(5, "Bob"), order(6, "Alice"), order(7, "Bob"))
    assert [m["data"]["order"] for m in alice.take()] == [6]
    assert [m["data"]["order"] for m in everyone.take()] == [5, 6, 7]


def test_queries_and_their_stats_count_only_allowed_rows(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    out = alice.send({"c": "sow", "t": "orders", "cid": "q", "a": "stats", "filter": "/qty >= 0"})
    assert sorted(m["data"]["order"] for m in of_type(out, "sow")) == [1, 3]
    stats = [m for m in out if m["c"] == "ack" and m["a"] == "stats"]
    assert (stats[0]["matches"], stats[0]["records_returned"]) == (2, 2)


def test_entitlement_filters_may_name_the_user(h: Harness) -> None:
    owner, feed = logged_on(h, "owner"), logged_on(h, "feed")
    feed.send(
        {"c": "publish", "t": "orders", "data": {"order": 1, "owner": "owner"}},
        {"c": "publish", "t": "orders", "data": {"order": 2, "owner": "someone"}},
    )
    assert list(sow(owner)) == [1]


def test_a_bookmark_replay_passes_the_same_gate(h: Harness, feed: Peer) -> None:
    feed.send(order(3, "Bob", qty=31, secret="moved"), order(5, "Bob", secret="b5"))
    log = entries_of(h)
    alice = logged_on(h, "alice")
    alice.send({"c": "subscribe", "t": "orders", "sub_id": "b", "bm": "0", "o": "oof"})
    replay_all(h, log)
    got = alice.take()
    assert [(m["c"], m["data"]["order"]) for m in got] == [("p", 1), ("p", 3), ("oof", 3)]
    assert got[2]["reason"] == "entitlement" and got[2]["data"]["secret"] == "a3"
    assert "moved" not in str(got) and "b5" not in str(got)


def test_a_structural_merge_its_reader_may_not_see_is_never_sent(h: Harness) -> None:
    alice, feed = logged_on(h, "alice"), logged_on(h, "feed")
    alice.send({"c": "subscribe", "t": "books", "sub_id": "s"})
    # The merge function hands the record to another customer: the gate keeps the newer one.
    feed.send(
        {"c": "publish", "t": "books", "data": {"order": 1, "customer": "Alice", "qty": 1}},
        {"c": "publish", "t": "books", "data": {"order": 1, "customer": "Alice", "qty": 2}},
    )
    assert [(m["data"]["customer"], m["data"]["qty"]) for m in alice.take()] == [("Alice", 2)]


# -- writes -----------------------------------------------------------------------------------


def failure(out: list[dict[str, Any]]) -> str:
    failed = [m for m in out if m["c"] == "ack" and m["status"] == "failure"]
    assert len(failed) == 1, out
    return str(failed[0]["reason"])


@pytest.mark.parametrize(
    "command",
    [
        order(2, "Alice"),  # replaces Bob's row
        order(9, "Bob"),  # a new row she could not see
        {"c": "delta_publish", "t": "orders", "data": {"order": 2, "customer": "Alice"}},
        {"c": "delta_publish", "t": "orders", "data": {"order": 1, "customer": "Bob"}},
        {"c": "delta_publish", "t": "orders", "data": {"order": 9, "customer": "Bob"}},
    ],
)
def test_a_write_outside_the_entitlement_is_refused_and_changes_nothing(
    h: Harness, feed: Peer, command: dict[str, Any]
) -> None:
    alice = logged_on(h, "alice")
    watcher = logged_on(h, "feed")
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "w"})
    before = sow(feed)
    assert failure(alice.send({**command, "cid": "w"})).startswith("not entitled")
    assert sow(feed) == before
    assert watcher.take() == []


def test_a_delta_publish_inside_the_entitlement_is_applied(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    out = alice.send({"c": "delta_publish", "t": "orders", "cid": "d", "data": {"order": 1, "qty": 11}})
    assert acks(out) == [("processed", "success")]
    assert sow(feed)[1]["qty"] == 11


@pytest.mark.parametrize(
    "selector",
    [{"filter": "/customer = 'Bob'"}, {"filter": "/qty > 0"}, {"data": {"order": 2}}],
)
def test_a_delete_reaches_only_allowed_rows(h: Harness, feed: Peer, selector: dict[str, Any]) -> None:
    alice = logged_on(h, "alice")
    out = alice.send({"c": "sow_delete", "t": "orders", "cid": "d", "a": "stats", **selector})
    stats = next(m for m in out if m["c"] == "ack" and m["a"] == "stats")
    remaining = sow(feed)
    assert {2, 4} <= set(remaining)
    assert stats["matches"] == stats["records_deleted"] == 4 - len(remaining)


def test_a_delete_by_sow_key_of_a_row_outside_the_entitlement_deletes_nothing(h: Harness, feed: Peer) -> None:
    keys = {
        m["data"]["order"]: m["k"] for m in of_type(feed.send({"c": "sow", "t": "orders", "cid": "k"}), "sow")
    }
    alice = logged_on(h, "alice")
    out = alice.send(
        {"c": "sow_delete", "t": "orders", "cid": "d", "a": "stats", "sow_keys": [keys[2], keys[1]]}
    )
    assert [m["records_deleted"] for m in out if m["a"] == "stats"] == [1]
    assert set(sow(feed)) == {2, 3, 4}


# -- identity ---------------------------------------------------------------------------------


def test_a_connection_cannot_change_who_it_is(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    alice.send({"c": "subscribe", "t": "orders", "sub_id": "s"})
    out = alice.send({"c": "logon", "cid": "again", "user_id": "feed", "pw": "pw"})
    assert failure(out).startswith("bad message: this connection is logged on as user 'alice'")
    feed.send(order(7, "Bob", secret="b7"))
    assert alice.take() == []
    again = alice.send({"c": "logon", "cid": "same", "user_id": "alice", "pw": "pw"})
    assert acks(again) == [("processed", "success")]


def test_replace_sends_one_oof_per_record_it_drops(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    feed.send(order(5, "Alice", qty=50))
    alice.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "s", "o": "oof"})
    out = alice.send(
        {"c": "sow_and_subscribe", "t": "orders", "sub_id": "s", "o": "oof,replace", "filter": "/qty = 10"}
    )
    assert sorted((m["data"]["order"], m["reason"]) for m in of_type(out, "oof")) == [
        (3, "match"),
        (5, "match"),
    ]
    assert len({m["k"] for m in of_type(out, "oof")}) == 2
