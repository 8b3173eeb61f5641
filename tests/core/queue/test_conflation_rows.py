"""Socket-queue conflation (docs/protocol.md, Conflation), the merge table row by row: what the net
effect of two queued messages about one record is."""

from __future__ import annotations

import jsonpatch

from server.core.records.merge import merge_record

from ..harness import Harness, Peer
from .conflation_hub import deliveries, hub, publish

# -- the merge table, row by row, on an `always` topic (eager) with a delta + oof subscriber --


def rich_peer(h: Harness, filter_text: str = "/v > 0", options: str = "oof") -> Peer:
    peer = h.peer()
    peer.send({"c": "sow_and_delta_subscribe", "t": "a", "sub_id": "d", "filter": filter_text, "o": options})
    peer.take()
    return peer


def test_row_insert_then_update_is_an_insert_of_the_newer_state() -> None:
    h = hub(max_messages=1000)
    publisher, peer = h.peer(), rich_peer(h)
    publisher.send(publish("a", 1, v=1, x="a"), publish("a", 1, v=2, x="a"))
    assert [(m["c"], m.get("data")) for m in deliveries(peer)] == [("p", {"id": 1, "v": 2, "x": "a"})]


def test_row_insert_then_oof_is_the_oof_alone() -> None:
    h = hub(max_messages=1000)
    publisher, peer = h.peer(), rich_peer(h)
    publisher.send(publish("a", 1, v=1), publish("a", 1, v=0))
    assert [(m["c"], m.get("reason")) for m in deliveries(peer)] == [("oof", "match")]


def test_row_update_then_update_is_a_composite_patch_or_the_record() -> None:
    h = hub(max_messages=1000)
    publisher = h.peer()
    publisher.send(publish("a", 1, v=1, text="t" * 200, n=0))
    peer = h.peer()
    held = next(
        m for m in peer.send({"c": "sow_and_delta_subscribe", "t": "a", "sub_id": "d"}) if m["c"] == "sow"
    )
    publisher.send(publish("a", 1, v=2, text="t" * 200, n=0), publish("a", 1, v=3, text="t" * 200, n=1))
    [composite] = deliveries(peer)
    assert composite["patch"] == [
        {"op": "replace", "path": "/v", "value": 3},
        {"op": "replace", "path": "/n", "value": 1},
    ]
    assert jsonpatch.apply_patch(held["data"], composite["patch"]) == {
        "id": 1,
        "v": 3,
        "text": "t" * 200,
        "n": 1,
    }
    # When the change is bigger than the record, the record goes instead.
    publisher.send(publish("a", 1, v=4, text="x", n=9), publish("a", 1, q=5))
    [whole] = deliveries(peer)
    assert whole["data"] == {"id": 1, "q": 5}


def test_row_update_then_update_for_merge_deltas() -> None:
    h = hub(max_messages=1000)
    publisher = h.peer()
    publisher.send(publish("a", 1, v=1, w=1, note="n" * 100))
    peer = h.peer()
    held = next(
        m
        for m in peer.send({"c": "sow_and_delta_subscribe", "t": "a", "sub_id": "d", "o": "delta=merge"})
        if m["c"] == "sow"
    )["data"]
    publisher.send(
        {"c": "delta_publish", "t": "a", "data": {"id": 1, "v": 2}},
        {"c": "delta_publish", "t": "a", "data": {"id": 1, "w": 2}},
    )
    [composite] = deliveries(peer)
    assert composite["delta"] == {"id": 1, "v": 2, "w": 2}
    assert merge_record(held, composite["delta"]) == {"id": 1, "v": 2, "w": 2, "note": "n" * 100}


def test_row_update_then_oof_is_the_oof_alone() -> None:
    h = hub(max_messages=1000)
    publisher = h.peer()
    publisher.send(publish("a", 1, v=1))
    peer = rich_peer(h)
    publisher.send(publish("a", 1, v=2), publish("a", 1, v=-1))
    assert [(m["c"], m.get("reason"), m["data"]) for m in deliveries(peer)] == [
        ("oof", "match", {"id": 1, "v": -1})
    ]


def test_row_update_then_delete_is_the_deleted_oof() -> None:
    h = hub(max_messages=1000)
    publisher = h.peer()
    publisher.send(publish("a", 1, v=1))
    peer = rich_peer(h)
    publisher.send(publish("a", 1, v=2), {"c": "sow_delete", "t": "a", "filter": "/id = 1"})
    assert [(m["c"], m.get("reason")) for m in deliveries(peer)] == [("oof", "deleted")]


def test_row_out_then_in_is_the_final_state_in_full() -> None:
    h = hub(max_messages=1000)
    publisher = h.peer()
    publisher.send(publish("a", 1, v=1))
    peer = rich_peer(h)
    publisher.send(publish("a", 1, v=-1), publish("a", 1, v=5), publish("a", 1, v=6))
    assert [(m["c"], m["data"]["v"], "patch" in m) for m in deliveries(peer)] == [("p", 6, False)]


def test_row_delete_then_insert_is_the_new_record_in_full() -> None:
    h = hub(max_messages=1000)
    publisher = h.peer()
    publisher.send(publish("a", 1, v=1))
    peer = rich_peer(h)
    publisher.send({"c": "sow_delete", "t": "a", "filter": "/id = 1"}, publish("a", 1, v=5))
    assert [(m["c"], m["data"]) for m in deliveries(peer)] == [("p", {"id": 1, "v": 5})]


def test_row_in_then_out_then_in_then_out_is_one_oof() -> None:
    h = hub(max_messages=1000)
    publisher = h.peer()
    publisher.send(publish("a", 1, v=1))
    peer = rich_peer(h)
    publisher.send(*[publish("a", 1, v=v) for v in (-1, 2, -2, 3, -3)])
    assert [(m["c"], m["reason"], m["data"]["v"]) for m in deliveries(peer)] == [("oof", "match", -3)]


def test_row_full_then_full_is_the_newer_or_the_structural_merge() -> None:
    h = hub(max_messages=1000)
    publisher, summing, plain = h.peer(), h.peer(), h.peer()
    summing.send({"c": "subscribe", "t": "s", "sub_id": "sum"})
    plain.send({"c": "subscribe", "t": "a", "sub_id": "last"})
    publisher.send(
        *[publish("s", 1, count=n) for n in (1, 2, 3)], *[publish("a", 1, count=n) for n in (1, 2, 3)]
    )
    assert [m["data"]["count"] for m in deliveries(summing)] == [6]
    assert [m["data"]["count"] for m in deliveries(plain)] == [3]


def test_a_failing_structural_merge_keeps_the_newer_record() -> None:
    h = hub(max_messages=1000)
    publisher, peer = h.peer(), h.peer()
    peer.send({"c": "subscribe", "t": "bad", "sub_id": "s"})
    publisher.send(publish("bad", 1, count=1), publish("bad", 1, count=2))
    assert [m["data"]["count"] for m in deliveries(peer)] == [2]


def test_structural_merge_keeps_delta_subscribers_consistent() -> None:
    h = hub(max_messages=1000)
    publisher = h.peer()
    publisher.send(publish("s", 1, count=1))
    peer = h.peer()
    held = [
        m for m in peer.send({"c": "sow_and_delta_subscribe", "t": "s", "sub_id": "d"}) if m["c"] == "sow"
    ]
    state = held[0]["data"]
    publisher.send(publish("s", 1, count=2), publish("s", 1, count=3))
    for message in deliveries(peer):
        state = jsonpatch.apply_patch(state, message["patch"]) if "patch" in message else message["data"]
    assert state == {"id": 1, "count": 5}
    publisher.send(publish("s", 1, count=7))
    for message in deliveries(peer):
        state = jsonpatch.apply_patch(state, message["patch"]) if "patch" in message else message["data"]
    assert state == {"id": 1, "count": 7}, "the next delta applies to what the subscriber holds"
