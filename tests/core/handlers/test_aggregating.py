"""Aggregated views through the engine: groups as records of a derived topic."""

from __future__ import annotations

from typing import Any

import jsonpatch

from server.core.aggregate.view import aggregations_of

from ..harness import Harness, Peer, acks, of_type

GROUPS = "grouping=[/desk],projection=[/desk,SUM(/qty) AS /qty,COUNT(*) AS /n]"


def _pub(order: int, **fields: Any) -> dict[str, Any]:
    return {"c": "publish", "t": "orders", "data": {"order": order, **fields}}


def _feed(peer: Peer) -> None:
    peer.send(_pub(1, desk="a", qty=1), _pub(2, desk="a", qty=2), _pub(3, desk="b", qty=5))


def _data(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {m["data"]["desk"]: m["data"] for m in messages if "data" in m and m["c"] in ("sow", "p")}


def test_snapshot_then_a_move_changes_both_groups_in_one_frame() -> None:
    h = Harness()
    publisher, viewer = h.peer(), h.peer()
    _feed(publisher)
    snapshot = viewer.send({"c": "sow_and_subscribe", "t": "orders", "cid": "g", "o": "oof," + GROUPS})
    assert _data(snapshot) == {"a": {"desk": "a", "qty": 3, "n": 2}, "b": {"desk": "b", "qty": 5, "n": 1}}
    publisher.send(_pub(1, desk="b", qty=1))
    moved = viewer.take()
    assert _data(moved) == {"a": {"desk": "a", "qty": 2, "n": 1}, "b": {"desk": "b", "qty": 6, "n": 2}}


def test_the_last_record_deleted_is_an_oof_deleted() -> None:
    h = Harness()
    publisher, viewer = h.peer(), h.peer()
    _feed(publisher)
    viewer.send({"c": "sow_and_subscribe", "t": "orders", "cid": "g", "o": "oof," + GROUPS})
    publisher.send({"c": "sow_delete", "t": "orders", "data": {"order": 3}})
    (oof,) = of_type(viewer.take(), "oof")
    assert oof["reason"] == "deleted" and oof["data"] == {"desk": "b", "qty": 5, "n": 1}


def test_a_transaction_changes_each_group_once() -> None:
    h = Harness()
    publisher, viewer = h.peer(), h.peer()
    _feed(publisher)
    viewer.send({"c": "sow_and_subscribe", "t": "orders", "cid": "g", "o": GROUPS})
    tx = [_pub(7, desk="a", qty=10), _pub(8, desk="a", qty=20), _pub(2, desk="b", qty=2)]
    publisher.send({"c": "tx", "cid": "t", "cmds": tx})
    messages = viewer.take()
    assert [m["c"] for m in messages] == ["tx_begin", "p", "p", "tx_end"]
    assert _data(messages) == {"a": {"desk": "a", "qty": 31, "n": 3}, "b": {"desk": "b", "qty": 7, "n": 2}}


def test_identical_subscriptions_share_one_state_released_with_the_last() -> None:
    h = Harness()
    one, two = h.peer(), h.peer()
    _feed(one)
    one.send({"c": "sow_and_subscribe", "t": "orders", "cid": "g", "o": GROUPS})
    two.send({"c": "sow_and_subscribe", "t": "orders", "cid": "g", "o": GROUPS})
    topic = h.broker.topics["orders"]
    assert len(aggregations_of(topic)) == 1
    one.send({"c": "unsubscribe", "sub_id": "g"})
    assert len(aggregations_of(topic)) == 1
    two.send({"c": "unsubscribe", "sub_id": "g"})
    assert topic.derived == {}


def test_limits_and_misuse_are_refused() -> None:
    h = Harness()
    viewer = h.peer()
    cases = [
        {"c": "sow_and_subscribe", "t": "orders", "cid": "a", "o": "projection=[SUM(SUM(/q)) AS /x]"},
        {"c": "subscribe", "t": "orders", "cid": "b", "o": GROUPS},
        {"c": "sow_and_subscribe", "t": "orders", "cid": "c", "grouping": [f"/g{i}" for i in range(17)]},
        {"c": "sow", "t": "orders", "cid": "d", "grouping": "/desk"},
    ]
    for command in cases:
        reply = viewer.send(command)
        assert acks(reply) == [("processed", "failure")], reply
    assert h.broker.topics["orders"].derived == {}


def test_a_replace_moves_a_window_over_groups_and_a_new_filter_moves_to_another_state() -> None:
    h = Harness()
    publisher, viewer = h.peer(), h.peer()
    _feed(publisher)
    base = {"c": "sow_and_subscribe", "t": "orders", "sub_id": "v", "grouping": ["/desk"]}
    first = viewer.send({**base, "cid": 1, "o": "oof", "top_n": 1, "orderby": "/count DESC"})
    assert [m["data"]["desk"] for m in of_type(first, "sow")] == ["a"]
    # Sorted the other way: the same state, the window moves.
    moved = viewer.send({**base, "cid": 2, "o": "oof,replace", "top_n": 1, "orderby": "/count"})
    assert [(m["c"], m["data"]["desk"]) for m in moved if m["c"] in ("oof", "sow")] == [
        ("oof", "a"),
        ("sow", "b"),
    ]
    assert len(aggregations_of(h.broker.topics["orders"])) == 1
    # Filtered: another state; the one left behind is dropped.
    filtered = viewer.send({**base, "cid": 3, "o": "oof,replace", "filter": "/qty > 1"})
    assert [(m["c"], m["data"]) for m in filtered if m["c"] in ("oof", "sow")] == [
        ("oof", {"desk": "b", "count": 1}),
        ("sow", {"desk": "a", "count": 1}),
        ("sow", {"desk": "b", "count": 1}),
    ]
    (state,) = aggregations_of(h.broker.topics["orders"])
    publisher.send(_pub(1, desk="a", qty=7))
    assert of_type(viewer.take(), "p")[0]["data"] == {"desk": "a", "count": 2}
    assert state.topic.subscribers


def test_a_replace_between_a_plain_and_an_aggregated_view_is_refused() -> None:
    h = Harness()
    viewer = h.peer()
    viewer.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "v", "cid": 1, "grouping": ["/desk"]})
    reply = viewer.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "v", "cid": 2, "o": "replace"})
    assert acks(reply) == [("processed", "failure")] and "kind of view" in reply[0]["reason"]
    viewer.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "w", "cid": 3})
    reply = viewer.send(
        {"c": "sow_and_subscribe", "t": "orders", "sub_id": "w", "cid": 4, "o": "replace,grouping=[/desk]"}
    )
    assert acks(reply) == [("processed", "failure")] and "kind of view" in reply[0]["reason"]


def test_a_stalled_socket_gets_its_groups_conflated_to_their_final_state() -> None:
    h = Harness(server={"queue_max_messages": 20})
    publisher, stalled = h.peer(), h.peer()
    stalled.send({"c": "sow_and_delta_subscribe", "t": "orders", "sub_id": "s", "o": "oof," + GROUPS})
    stalled.take()
    for n in range(2000):
        publisher.send(_pub(n % 7, desk="abc"[n % 3], qty=n))
    assert stalled.session.close_code is None
    held: dict[str, Any] = {}
    messages = stalled.take()
    assert len(messages) <= 20
    for message in messages:
        if message["c"] == "oof":
            held.pop(message["k"])
        elif "data" in message:
            held[message["k"]] = message["data"]
        else:
            held[message["k"]] = jsonpatch.apply_patch(held[message["k"]], message["patch"])
    server = h.peer().send({"c": "sow", "t": "orders", "cid": "q", "o": GROUPS})
    assert held == {m["k"]: m["data"] for m in server if m["c"] == "sow"}


def test_count_counts_groups_as_they_appear_and_empty() -> None:
    h = Harness()
    publisher, viewer, windowed = h.peer(), h.peer(), h.peer()
    _feed(publisher)
    base = {"c": "sow_and_subscribe", "t": "orders", "o": "count," + GROUPS}
    assert of_type(viewer.send({**base, "cid": "all"}), "group_end")[0]["matches"] == 2
    top = {**base, "cid": "top", "top_n": 1, "orderby": "/qty DESC"}
    assert of_type(windowed.send(top), "group_end")[0]["matches"] == 2
    publisher.send(_pub(4, desk="c", qty=1))  # a new group: past the window's end, the count alone
    assert [m["matches"] for m in of_type(viewer.take(), "count")] == [3]
    assert [(m["c"], m.get("matches")) for m in windowed.take()] == [("count", 3)]
    publisher.send(_pub(1, desk="a", qty=9))  # a group changes, the number does not
    assert of_type(viewer.take(), "count") == [] and of_type(windowed.take(), "count") == []
    publisher.send({"c": "sow_delete", "t": "orders", "filter": "/desk = 'c'"})  # c empties
    assert [m["matches"] for m in of_type(viewer.take(), "count")] == [2]
    assert [m["matches"] for m in of_type(windowed.take(), "count")] == [2]
    reply = viewer.send({"c": "sow", "t": "orders", "cid": "q", "o": "count," + GROUPS})
    assert reply[-1]["reason"].startswith("invalid options: count is for")


def test_a_window_over_groups_moves_as_a_viewport() -> None:
    h = Harness()
    publisher, viewer = h.peer(), h.peer()
    publisher.send(*[_pub(n, desk=f"d{n}", qty=n) for n in range(1, 9)])
    base = {"c": "sow_and_subscribe", "t": "orders", "sub_id": "v", "orderby": "/qty", "o": "oof,count"}
    viewer.send(
        {**base, "cid": 1, "top_n": 3, "grouping": ["/desk"], "projection": ["/desk", "SUM(/qty) AS /qty"]}
    )
    moved = viewer.send(
        {
            **base,
            "cid": 2,
            "top_n": 3,
            "skip_n": 2,
            "o": "oof,count,replace",
            "grouping": ["/desk"],
            "projection": ["/desk", "SUM(/qty) AS /qty"],
        }
    )
    brief = [
        (m["c"], m["data"]["qty"] if "data" in m else "key", m.get("pos"))
        for m in moved
        if m["c"] in ("oof", "sow")
    ]
    assert brief == [("oof", 1, None), ("oof", 2, None), ("sow", "key", 1), ("sow", 4, 2), ("sow", 5, 3)]
    assert of_type(moved, "group_end")[0]["matches"] == 8
    # Onto another aggregation (a filter): a group whose totals are the same stays a key, one
    # whose totals changed is sent in full, one that is not in the new view leaves.
    publisher.send(_pub(21, desk="d3", qty=0.5))
    viewer.take()
    other = viewer.send(
        {
            **base,
            "cid": 3,
            "top_n": 3,
            "skip_n": 2,
            "filter": "/order != 4 AND /order != 21",
            "o": "oof,count,replace",
            "grouping": ["/desk"],
            "projection": ["/desk", "SUM(/qty) AS /qty"],
        }
    )
    brief = [
        (m["c"], m["data"]["qty"] if "data" in m else "key", m.get("pos"))
        for m in other
        if m["c"] in ("oof", "sow")
    ]
    assert brief == [("oof", 4, None), ("sow", 3, 1), ("sow", "key", 2), ("sow", 6, 3)]
    assert len(aggregations_of(h.broker.topics["orders"])) == 1  # the old one went with its last view


def test_a_transaction_counts_its_groups_once_inside_its_block() -> None:
    h = Harness()
    publisher, viewer = h.peer(), h.peer()
    _feed(publisher)
    viewer.send({"c": "sow_and_subscribe", "t": "orders", "cid": "g", "o": "count," + GROUPS})
    publisher.send(
        {"c": "tx", "cmds": [_pub(7, desk="x", qty=1), _pub(8, desk="y", qty=1), _pub(9, desk="x", qty=2)]}
    )
    got = viewer.take()
    assert [m["c"] for m in got] == ["tx_begin", "p", "p", "count", "tx_end"]
    assert got[-2]["matches"] == 4


def test_changes_of_one_frame_write_each_group_once_with_its_final_state() -> None:
    h = Harness()
    publisher, viewer = h.peer(), h.peer()
    _feed(publisher)
    viewer.send({"c": "sow_and_subscribe", "t": "orders", "cid": "g", "o": "oof," + GROUPS})
    publisher.send(_pub(1, desk="a", qty=10), _pub(3, desk="b", qty=6), _pub(2, desk="a", qty=20))
    messages = viewer.take()
    assert [m["c"] for m in messages] == ["p", "p"]
    # In the order of the last change each got, versioned by it.
    assert [m["data"]["desk"] for m in messages] == ["b", "a"]
    assert _data(messages) == {"a": {"desk": "a", "qty": 30, "n": 2}, "b": {"desk": "b", "qty": 6, "n": 1}}
    source = h.broker.topics["orders"]
    (view,) = aggregations_of(source)
    groups = {g.data["desk"]: g.seq for g in view.topic.records.values()}  # type: ignore[attr-defined]
    seqs = {v.data["order"]: v.seq for v in source.records.values()}
    assert groups == {"a": seqs[2], "b": seqs[3]}


def test_a_group_emptied_and_refilled_in_one_frame_is_one_update() -> None:
    h = Harness()
    publisher, viewer = h.peer(), h.peer()
    _feed(publisher)
    viewer.send({"c": "sow_and_subscribe", "t": "orders", "cid": "g", "o": "oof," + GROUPS})
    publisher.send({"c": "sow_delete", "t": "orders", "data": {"order": 3}}, _pub(4, desk="b", qty=7))
    (message,) = viewer.take()
    assert message["c"] == "p" and message["data"] == {"desk": "b", "qty": 7, "n": 1}


def test_a_group_made_and_emptied_in_one_frame_is_not_sent_and_one_emptied_is_an_oof() -> None:
    h = Harness()
    publisher, viewer = h.peer(), h.peer()
    _feed(publisher)
    viewer.send({"c": "sow_and_subscribe", "t": "orders", "cid": "g", "o": "oof," + GROUPS})
    publisher.send(
        _pub(9, desk="c", qty=1),
        {"c": "sow_delete", "t": "orders", "data": {"order": 9}},
        _pub(3, desk="a", qty=5),  # b loses its last record, a gets it
    )
    messages = viewer.take()
    assert [m["c"] for m in messages] == ["oof", "p"]
    assert messages[0]["reason"] == "match" and messages[0]["data"] == {"desk": "b", "qty": 5, "n": 1}
    assert _data(messages) == {"a": {"desk": "a", "qty": 8, "n": 3}}
    (view,) = aggregations_of(h.broker.topics["orders"])
    assert {g.data["desk"] for g in view.topic.records.values()} == {"a"}  # type: ignore[attr-defined]


def test_a_query_after_changes_in_the_same_frame_sees_them() -> None:
    h = Harness()
    publisher = h.peer()
    _feed(publisher)
    publisher.send({"c": "sow_and_subscribe", "t": "orders", "cid": "g", "sub_id": "g", "o": GROUPS})
    replies = publisher.send(
        _pub(4, desk="a", qty=100),
        {"c": "sow", "t": "orders", "cid": "q", "o": GROUPS},
    )
    snapshot = {m["data"]["desk"]: m["data"] for m in replies if m["c"] == "sow"}
    assert snapshot["a"] == {"desk": "a", "qty": 103, "n": 3}
    updates = [m for m in replies if m["c"] == "p"]
    assert _data(updates) == {"a": {"desk": "a", "qty": 103, "n": 3}}
