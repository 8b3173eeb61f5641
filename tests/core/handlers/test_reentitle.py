"""Entitlements that move (docs/protocol.md, Reloading entitlements): ``[auth]`` reloaded, every
live socket and subscription re-decided at once, as if each of its records had changed."""

from __future__ import annotations

from typing import Any

import pytest

from server.core.handlers import logons
from server.core.log.shared import SharedLog
from server.core.session.session import CLOSE_POLICY
from server.core.settings.config import parse_config

from ..harness import Harness, Peer, acks, logged_on, of_type, order

TOPICS = [{"name": "orders", "key": ["/order"]}, {"name": "trades", "key": ["/id"]}]


def user(user_id: str, orders: str | None = None, **settings: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"user_id": user_id, "password": "pw", "read": ["*"], "write": ["*"]}
    if orders is not None:
        entry["filter"] = {"orders": orders}
    return entry | settings


ALICE = "/customer = 'Alice'"
BOB = "/customer = 'Bob'"
FEED = user("feed")


def reload(h: Harness, *users: dict[str, Any] | None) -> Any:
    """Reload ``[auth]`` with ``users`` (none: no [auth] section at all)."""
    document: dict[str, Any] = {"topic": TOPICS}
    if users != (None,):
        document["auth"] = {"user": list(users)}
    return h.engine.reload_auth(parse_config(document).users)


@pytest.fixture
def h() -> Harness:
    return Harness(topics=TOPICS, auth={"user": [user("alice", ALICE), user("bob", BOB), FEED]})


@pytest.fixture
def feed(h: Harness) -> Peer:
    feed = logged_on(h, "feed")
    feed.send(
        order(1, "Alice", qty=10),
        order(2, "Bob", qty=20),
        order(3, "Alice", qty=30),
        order(4, "Bob", qty=40),
    )
    return feed


def subscribed(peer: Peer, command: str = "sow_and_subscribe", **fields: Any) -> list[dict[str, Any]]:
    out = peer.send({"c": command, "t": "orders", "sub_id": "s", **fields})
    return [m["data"]["order"] for m in of_type(out, "sow")]


def brief(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Each message as (c, sids, order, reason or what the p carries)."""
    out = []
    for m in messages:
        if m["c"] == "unsubscribed":
            out.append(("unsubscribed", m["sub_id"], m["reason"]))
            continue
        body = m.get("data") or {}
        what = m.get("reason") or next(field for field in ("data", "patch", "delta") if field in m)
        out.append((m["c"], m["sids"], body.get("order"), what))
    return out


# -- records leave and enter --------------------------------------------------------------------


def test_records_the_user_may_no_longer_see_leave_and_newly_visible_ones_enter_in_full(
    h: Harness, feed: Peer
) -> None:
    alice = logged_on(h, "alice")
    assert subscribed(alice, o="oof") == [1, 3]
    done = reload(h, user("alice", "/customer = 'Bob' OR /order = 1"), user("bob", BOB), FEED)
    assert (done.closed, done.ended, done.regated) == (0, 0, 1)
    got = alice.take()
    assert brief(got) == [
        ("oof", ["s"], 3, "entitlement"),
        ("p", ["s"], 2, "data"),
        ("p", ["s"], 4, "data"),
    ]
    assert got[0]["data"] == {"order": 3, "customer": "Alice", "qty": 30}  # the last state she saw
    assert got[1]["data"] == {"order": 2, "customer": "Bob", "qty": 20}


def test_the_oof_body_is_the_last_state_sent_through_the_select_list(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    subscribed(alice, o="oof,select=[-/qty]")
    reload(h, user("alice", "/qty > 100"), FEED)
    assert sorted((m["reason"], m["data"]["order"], "qty" in m["data"]) for m in alice.take()) == [
        ("entitlement", 1, False),
        ("entitlement", 3, False),
    ]


def test_a_record_that_still_matches_sends_nothing(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    subscribed(alice, "sow_and_delta_subscribe", o="oof")
    reload(h, user("alice", "/customer = 'Alice' AND /qty >= 10"), FEED)
    assert alice.take() == []
    feed.send(order(3, "Alice", qty=31))  # still held: a patch against what she has
    assert [m["patch"] for m in alice.take()] == [[{"op": "replace", "path": "/qty", "value": 31}]]


def test_reloading_the_same_settings_sends_nothing(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    subscribed(alice, o="oof")
    done = reload(h, user("alice", ALICE), user("bob", BOB), FEED)
    assert (done.closed, done.ended, done.regated) == (0, 0, 0)
    assert alice.take() == []


def test_a_delta_subscription_gets_entered_records_in_full_then_deltas_against_them(
    h: Harness, feed: Peer
) -> None:
    alice = logged_on(h, "alice")
    subscribed(alice, "sow_and_delta_subscribe", o="oof,delta=merge")
    reload(h, user("alice", None), FEED)  # no entitlement filter: she may see everything
    assert brief(alice.take()) == [("p", ["s"], 2, "data"), ("p", ["s"], 4, "data")]
    feed.send(order(2, "Bob", qty=21))
    assert [m["delta"] for m in alice.take()] == [{"order": 2, "qty": 21}]


def test_without_oof_leaving_records_send_nothing_and_come_back_in_full(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    subscribed(alice, "sow_and_delta_subscribe")
    reload(h, user("alice", BOB), FEED)
    assert brief(alice.take()) == [("p", ["s"], 2, "data"), ("p", ["s"], 4, "data")]
    reload(h, user("alice", ALICE), FEED)
    assert brief(alice.take()) == [("p", ["s"], 1, "data"), ("p", ["s"], 3, "data")]
    feed.send(order(1, "Alice", qty=11))
    assert [m["patch"] for m in alice.take()] == [[{"op": "replace", "path": "/qty", "value": 11}]]


def test_a_plain_subscription_gets_newly_visible_records_and_then_live_changes_through_the_new_gate(
    h: Harness, feed: Peer
) -> None:
    alice = logged_on(h, "alice")
    alice.send({"c": "subscribe", "t": "orders", "sub_id": "s"})
    reload(h, user("alice", BOB), FEED)
    assert brief(alice.take()) == [("p", ["s"], 2, "data"), ("p", ["s"], 4, "data")]
    feed.send(order(5, "Alice"), order(6, "Bob"), order(1, "Alice", qty=1))
    assert [m["data"]["order"] for m in alice.take()] == [6]


def test_subscriptions_of_one_socket_with_the_same_view_share_one_message(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    alice.send(
        {"c": "sow_and_subscribe", "t": "orders", "sub_id": "a", "o": "oof"},
        {"c": "sow_and_subscribe", "t": "orders", "sub_id": "b", "o": "oof", "filter": "/qty > 15"},
    )
    reload(h, user("alice", BOB), FEED)
    assert brief(alice.take()) == [
        ("oof", ["a"], 1, "entitlement"),
        ("oof", ["a", "b"], 3, "entitlement"),
        ("p", ["a", "b"], 2, "data"),
        ("p", ["a", "b"], 4, "data"),
    ]


def test_other_users_are_not_touched(h: Harness, feed: Peer) -> None:
    alice, bob = logged_on(h, "alice"), logged_on(h, "bob")
    subscribed(alice, o="oof")
    subscribed(bob, o="oof")
    reload(h, user("alice", None), user("bob", BOB), FEED)
    assert bob.take() == [] and feed.take() == []
    assert len(alice.take()) == 2


# -- windows ------------------------------------------------------------------------------------


def test_a_window_re_decides_its_membership(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    assert subscribed(alice, o="oof,positions", top_n=2, orderby="/qty DESC") == [3, 1]
    feed.send(order(5, "Bob", qty=35))
    reload(h, user("alice", "/qty >= 20"), FEED)
    got = alice.take()
    # Now 4 (40), 5 (35), 3 (30), 2 (20): 1 leaves (entitlement), 3 is pushed out (match).
    assert [(m["c"], m["data"]["order"], m.get("reason"), m.get("pos")) for m in got] == [
        ("oof", 3, "match", None),
        ("oof", 1, "entitlement", None),
        ("p", 4, None, 1),
        ("p", 5, None, 2),
    ]
    feed.send(order(2, "Bob", qty=50))  # the window's live order is the new gate's
    assert [(m["c"], m["data"]["order"], m.get("pos")) for m in alice.take()] == [
        ("oof", 5, None),
        ("p", 2, 1),
    ]


def test_a_window_without_oof_only_gets_its_entries(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    assert subscribed(alice, top_n=1, orderby="/order") == [1]
    reload(h, user("alice", BOB), FEED)
    assert brief(alice.take()) == [("p", ["s"], 2, "data")]


# -- deferred delivery --------------------------------------------------------------------------


@pytest.mark.parametrize("hidden", [False, True])
def test_conflation_and_hidden_views_defer_the_re_decision_like_any_change(
    h: Harness, feed: Peer, hidden: bool
) -> None:
    alice = logged_on(h, "alice")
    if hidden:
        alice.send({"c": "visibility", "hidden": True})
        subscribed(alice, o="oof")
    else:
        subscribed(alice, o="oof,conflation=1s")
    reload(h, user("alice", BOB), FEED)
    assert alice.take() == []
    h.clock.now += 2
    h.broker.advance(h.clock.now)
    assert sorted((m["c"], m["data"]["order"], m.get("reason")) for m in alice.take()) == [
        ("oof", 1, "entitlement"),
        ("oof", 3, "entitlement"),
        ("p", 2, None),
        ("p", 4, None),
    ]


# -- topics, users, passwords -------------------------------------------------------------------


def test_a_subscription_to_a_topic_the_user_may_no_longer_read_ends(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    alice.send(
        {"c": "sow_and_subscribe", "t": "orders", "sub_id": "o", "o": "oof"},
        {"c": "subscribe", "t": "trades", "sub_id": "t"},
    )
    done = reload(h, user("alice", ALICE, read=["trades"]), FEED)
    assert (done.ended, done.regated) == (1, 0)
    assert alice.take() == [{"c": "unsubscribed", "sub_id": "o", "reason": "entitlement"}]
    feed.send(order(5, "Alice"), {"c": "publish", "t": "trades", "data": {"id": 1}})
    assert [m["t"] for m in alice.take()] == ["trades"]
    refused = alice.send({"c": "subscribe", "t": "orders", "cid": "again"})
    assert refused[0]["reason"].startswith("not entitled")


def test_the_socket_of_a_user_who_no_longer_exists_is_closed_with_1008(h: Harness, feed: Peer) -> None:
    alice, bob = logged_on(h, "alice"), logged_on(h, "bob")
    subscribed(alice, o="oof")
    done = reload(h, user("bob", BOB), FEED)
    assert done.closed == 1
    assert alice.session.close_code == CLOSE_POLICY
    assert alice.session.id not in h.broker.sessions and not alice.session.subscriptions
    feed.send(order(1, "Alice", qty=11))
    assert alice.take() == []
    assert bob.session.close_code is None
    gone = h.peer()
    assert gone.send({"c": "logon", "cid": "l", "user_id": "alice", "pw": "pw"})[0]["reason"].startswith(
        "auth failure"
    )


def test_a_changed_password_keeps_the_live_socket_and_applies_to_new_logons(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    subscribed(alice)
    reload(h, user("alice", ALICE, password="new"), FEED)
    assert alice.session.close_code is None
    feed.send(order(1, "Alice", qty=12))
    assert [m["data"]["qty"] for m in alice.take()] == [12]
    old = h.peer().send({"c": "logon", "cid": "l", "user_id": "alice", "pw": "pw"})
    assert old[0]["reason"].startswith("auth failure")
    logged_on(h, "alice", "new")


def test_later_writes_are_checked_with_the_new_write_list_and_filter(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    assert acks(alice.send({**order(7, "Alice"), "cid": "a"})) == [("processed", "success")]
    reload(h, user("alice", BOB, write=["trades"]), user("bob", None), FEED)
    refused = alice.send({**order(8, "Bob"), "cid": "b"})
    assert refused[0]["reason"].startswith("not entitled: user 'alice' may not write 'orders'")
    bob = logged_on(h, "bob")
    assert acks(bob.send({**order(9, "Alice"), "cid": "c"})) == [("processed", "success")]
    reload(h, user("alice", BOB), FEED)
    assert acks(alice.send({**order(10, "Bob"), "cid": "d"})) == [("processed", "success")]
    assert alice.send({**order(11, "Alice"), "cid": "e"})[0]["reason"].startswith("not entitled")


def test_user_in_a_reloaded_filter_is_still_the_sockets_user(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    subscribed(alice, o="oof")
    feed.send({"c": "publish", "t": "orders", "data": {"order": 9, "owner": "alice"}})
    alice.take()
    reload(h, user("alice", "/owner = USER()"), FEED)
    assert brief(alice.take()) == [
        ("oof", ["s"], 1, "entitlement"),
        ("oof", ["s"], 3, "entitlement"),
        ("p", ["s"], 9, "data"),
    ]


def test_the_engine_told_auth_is_gone_lets_everyone_see_everything(h: Harness, feed: Peer) -> None:
    # (A SIGHUP never does this: turning [auth] off takes a restart, runtime/reload.py.)
    alice = logged_on(h, "alice")
    subscribed(alice, o="oof")
    reload(h, None)
    assert brief(alice.take()) == [("p", ["s"], 2, "data"), ("p", ["s"], 4, "data")]
    assert acks(alice.send({**order(8, "Bob"), "cid": "w"})) == [("processed", "success")]


def test_auth_added_closes_the_sockets_that_never_authenticated() -> None:
    h = Harness(topics=TOPICS)
    trusted, idle = h.peer(), h.peer()
    trusted.send({"c": "logon", "user_id": "alice"}, {"c": "subscribe", "t": "orders", "sub_id": "s"})
    done = reload(h, user("alice", ALICE))
    assert done.closed == 1 and trusted.session.close_code == CLOSE_POLICY
    assert idle.session.close_code is None  # it has done nothing yet: it must log on first
    assert idle.send({"c": "subscribe", "t": "orders", "cid": "s"})[0]["reason"].startswith("logon required")


@pytest.mark.parametrize("reloaded", [[FEED], None])
def test_a_logon_the_cluster_answers_after_a_reload_is_decided_by_the_new_users(
    reloaded: list[dict[str, Any]] | None,
) -> None:
    shared = SharedLog("node")  # a cluster node's: a client name is claimed in Redis
    h = Harness(
        topics=TOPICS,
        log=lambda _broker: shared,
        auth={"user": [user("alice", ALICE), user("bob", BOB), FEED]},
    )
    alice = h.peer()
    assert alice.send({"c": "logon", "cid": "l", "user_id": "alice", "pw": "pw", "client_name": "desk"}) == []
    claim = shared.claims.popleft()  # on its way to Redis when [auth] changes
    reload(h, *(reloaded or [None]))
    logons.claimed(h.broker, claim, None)
    if reloaded is None:  # (no [auth]: the engine alone, a SIGHUP never turns it off)
        assert acks(alice.take()) == [("processed", "success")] and alice.session.user is None
        return
    assert alice.take()[0]["reason"].startswith("auth failure")
    assert alice.session.close_code == CLOSE_POLICY and not alice.session.logged_on
    assert shared.releases == [("desk", shared.holder(alice.session))]


# -- resuming a view (docs/protocol.md, Resuming a view)
# ------------------------------------------------------------


def resumed(peer: Peer, bm: str) -> tuple[bool, list[int]]:
    got = peer.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "r", "o": "resume", "bm": bm})
    return of_type(got, "group_end")[0]["resumed"], sorted(m["data"]["order"] for m in of_type(got, "sow"))


@pytest.mark.parametrize(
    ("reloads", "view"),
    [
        ([[user("alice", BOB), FEED]], [2, 4, 5]),  # another filter
        ([[FEED], [user("alice", ALICE), FEED]], [1, 3]),  # removed, then back as she was
    ],
)
def test_a_bookmark_from_before_a_reload_that_moved_the_topic_gets_the_whole_snapshot(
    h: Harness, feed: Peer, reloads: list[list[dict[str, Any]]], view: list[int]
) -> None:
    alice = logged_on(h, "alice")
    got = alice.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "r", "o": "resume"})
    bm = of_type(got, "group_end")[0]["bm"]
    h.broker.close_session(alice.session)  # she is away when [auth] changes
    for users in reloads:
        reload(h, *users)
    feed.send(order(5, "Bob"))
    assert resumed(logged_on(h, "alice"), bm) == (False, view)


def test_a_reload_that_moves_no_one_keeps_every_resume_point(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    got = alice.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "r", "o": "resume"})
    bm = of_type(got, "group_end")[0]["bm"]
    reload(h, user("alice", ALICE, password="new", write=[]), user("bob", BOB), FEED, user("dave", BOB))
    feed.send(order(5, "Alice"))
    assert resumed(logged_on(h, "alice", "new"), bm) == (True, [5])


def test_count_over_groups_is_told_the_groups_a_reload_leaves(h: Harness, feed: Peer) -> None:
    alice = logged_on(h, "alice")
    view = alice.send(
        {"c": "sow_and_subscribe", "t": "orders", "sub_id": "g", "grouping": ["/qty"], "o": "count"}
    )
    assert of_type(view, "group_end")[0]["matches"] == 2  # her two orders, of 10 and 30
    reload(h, user("alice", None), FEED)  # every order: four groups
    got = alice.take()
    assert [m["matches"] for m in of_type(got, "count")] == [4] and got[-1]["c"] == "count"
