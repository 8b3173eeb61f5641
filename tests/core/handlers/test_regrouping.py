"""Reloading entitlements under aggregated views (docs/protocol.md, Reloading entitlements;
handlers/regrouping.py): each user's view moves to the aggregation of their own new gate."""

from __future__ import annotations

from ..harness import Harness, logged_on, of_type
from .test_reentitle import FEED, TOPICS, reload, user


def test_a_reload_moves_each_users_aggregated_view_to_their_own_gate_not_to_another_users() -> None:
    # Alice and Bob share one aggregation while their entitlement is the same text with no
    # USER(). The reload gives both "/owner = USER()": each one's totals must count only their
    # own rows. Bob's view must not move onto the aggregation made for Alice's gate.
    mine = "/owner = USER()"
    h = Harness(topics=TOPICS, auth={"user": [user("alice", "/qty > 0"), user("bob", "/qty > 0"), FEED]})
    feed = logged_on(h, "feed")
    feed.send(
        {"c": "publish", "t": "orders", "data": {"order": 1, "owner": "alice", "desk": "d", "qty": 10}},
        {"c": "publish", "t": "orders", "data": {"order": 2, "owner": "bob", "desk": "d", "qty": 20}},
    )
    alice, bob = logged_on(h, "alice"), logged_on(h, "bob")
    view = {"c": "sow_and_subscribe", "t": "orders", "sub_id": "g", "grouping": ["/desk"]}
    view["projection"] = ["/desk", "SUM(/qty) AS /qty"]
    assert [m["data"] for m in of_type(alice.send(view), "sow")] == [{"desk": "d", "qty": 30}]
    assert [m["data"] for m in of_type(bob.send(view), "sow")] == [{"desk": "d", "qty": 30}]
    reload(h, user("alice", mine), user("bob", mine), FEED)
    assert [m["data"] for m in of_type(alice.take(), "p")] == [{"desk": "d", "qty": 10}]
    assert [m["data"] for m in of_type(bob.take(), "p")] == [{"desk": "d", "qty": 20}]  # got Alice's 10
    # A fresh view of Bob's agrees.
    fresh = bob.send({**view, "sub_id": "h"})
    assert [m["data"] for m in of_type(fresh, "sow")] == [{"desk": "d", "qty": 20}]
