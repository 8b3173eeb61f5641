"""The protocol engine, with no event loop and no socket: commands in, queued messages out."""

from __future__ import annotations

import jsonpatch

from server.core.records.merge import merge_record

from .harness import Harness, of_type, publish


def test_publish_then_sow_returns_the_latest_version(hub: Harness) -> None:
    peer = hub.peer()
    peer.send(publish(1, qty=5), publish(2, qty=7), publish(1, qty=6))
    out = peer.send({"c": "sow", "t": "orders", "cid": "q", "a": "stats,completed", "orderby": "/order"})
    assert [m["c"] for m in out] == ["ack", "group_begin", "sow", "sow", "group_end", "ack", "ack"]
    assert [m["data"] for m in of_type(out, "sow")] == [{"order": 1, "qty": 6}, {"order": 2, "qty": 7}]
    assert out[4] == {"c": "group_end", "query_id": "q", "records": 2}
    assert out[5] == {
        "c": "ack",
        "a": "stats",
        "cid": "q",
        "status": "success",
        "matches": 2,
        "records_returned": 2,
    }
    assert out[6]["a"] == "completed"


def test_sow_filter_orderby_top_n_skip_n(hub: Harness) -> None:
    peer = hub.peer()
    peer.send(*[publish(n, qty=n * 10) for n in range(1, 8)])
    out = peer.send(
        {
            "c": "sow",
            "t": "orders",
            "cid": 1,
            "filter": "/qty > 20",
            "orderby": "/qty DESC",
            "top_n": 2,
            "skip_n": 1,
            "a": "stats",
        }
    )
    assert [m["data"]["order"] for m in of_type(out, "sow")] == [6, 5]
    assert of_type(out, "ack")[-1]["matches"] == 5
    assert of_type(out, "ack")[-1]["records_returned"] == 2
    options = peer.send({"c": "sow", "t": "orders", "cid": 2, "orderby": "/qty", "o": "top_n=1"})
    assert [m["data"]["order"] for m in of_type(options, "sow")] == [1]


def test_sow_batch_size_splits_frames(hub: Harness) -> None:
    peer = hub.peer()
    peer.send(*[publish(n) for n in range(5)])
    hub.engine.receive(peer.session, b'{"c":"sow","t":"orders","cid":1,"bs":2}')
    frames = []
    while (frame := peer.session.outbox.take_frame(1 << 20)) is not None:
        frames.append(frame)
    assert [frame.count(b'"c":"sow"') for frame in frames] == [2, 2, 1]


def test_delta_publish_merges_and_the_merged_record_is_stored(hub: Harness) -> None:
    peer = hub.peer()
    peer.send(publish(1, qty=5, px={"bid": 1, "ask": 2}, tags=["a"]))
    peer.send({"c": "delta_publish", "t": "orders", "data": {"order": 1, "px": {"ask": 3}, "tags": ["b"]}})
    record = of_type(peer.send({"c": "sow", "t": "orders", "cid": 1}), "sow")[0]["data"]
    assert record == {"order": 1, "qty": 5, "px": {"bid": 1, "ask": 3}, "tags": ["b"]}


def test_delta_publish_without_a_record_is_a_publish(hub: Harness) -> None:
    peer = hub.peer()
    peer.send({"c": "delta_publish", "t": "orders", "data": {"order": 9, "qty": 1}})
    assert of_type(peer.send({"c": "sow", "t": "orders", "cid": 1}), "sow")[0]["data"] == {
        "order": 9,
        "qty": 1,
    }


def test_delta_subscription_first_gets_data_then_patches(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    watcher.send({"c": "delta_subscribe", "t": "orders", "sub_id": "d"})
    publisher.send(publish(1, qty=5, side="B"))
    first = watcher.take()
    assert first == [
        {
            "c": "p",
            "t": "orders",
            "sids": ["d"],
            "k": first[0]["k"],
            "data": {"order": 1, "qty": 5, "side": "B"},
        }
    ]
    publisher.send(publish(1, qty=6, side="B"))
    second = watcher.take()
    assert second[0]["patch"] == [{"op": "replace", "path": "/qty", "value": 6}]
    assert jsonpatch.apply_patch(first[0]["data"], second[0]["patch"]) == {"order": 1, "qty": 6, "side": "B"}


def test_delta_is_relative_to_what_this_subscriber_last_received(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    publisher.send(publish(1, qty=5))
    watcher.send({"c": "delta_subscribe", "t": "orders", "sub_id": "d", "filter": "/qty > 10"})
    publisher.send(publish(1, qty=20))  # first message about the record: full, though it existed before
    assert watcher.take()[0]["data"] == {"order": 1, "qty": 20}
    publisher.send(publish(1, qty=3))  # leaves the view (no oof asked: silence)
    publisher.send(publish(1, qty=30))  # comes back: full again
    assert [("data" in m, m.get("data")) for m in watcher.take()] == [(True, {"order": 1, "qty": 30})]


def test_merge_deltas_carry_keys_and_changed_fields(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    publisher.send(
        {"c": "publish", "t": "trades", "data": {"id": 1, "buyer": {"id": "B", "n": "x"}, "q": 1, "z": 0}}
    )
    out = watcher.send({"c": "sow_and_delta_subscribe", "t": "trades", "sub_id": "m", "o": "delta=merge"})
    held = of_type(out, "sow")[0]["data"]
    publisher.send({"c": "delta_publish", "t": "trades", "data": {"id": 1, "buyer": {"id": "B"}, "q": 2}})
    delta = watcher.take()[0]["delta"]
    assert delta == {"id": 1, "buyer": {"id": "B"}, "q": 2}
    assert merge_record(held, delta) == {"id": 1, "buyer": {"id": "B", "n": "x"}, "q": 2, "z": 0}


def test_merge_delta_sends_data_when_a_field_was_lost(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    publisher.send(publish(1, qty=5, note="x"))
    watcher.send({"c": "sow_and_delta_subscribe", "t": "orders", "sub_id": "m", "o": "delta=merge"})
    publisher.send(publish(1, qty=5))
    assert watcher.take()[0]["data"] == {"order": 1, "qty": 5}


def test_empty_changes_and_no_empties(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    publisher.send(publish(1, qty=5))
    watcher.send(
        {"c": "sow_and_delta_subscribe", "t": "orders", "sub_id": "patch"},
        {"c": "sow_and_delta_subscribe", "t": "orders", "sub_id": "merge", "o": "delta=merge"},
        {"c": "sow_and_delta_subscribe", "t": "orders", "sub_id": "quiet", "o": "no_empties"},
    )
    publisher.send(publish(1, qty=5))  # an unchanged value is still an update
    out = watcher.take()
    by_sid = {m["sids"][0]: m for m in out}
    assert set(by_sid) == {"patch", "merge"}
    assert by_sid["patch"]["patch"] == []
    assert by_sid["merge"]["delta"] == {"order": 1}


def test_select_list_applies_to_snapshot_updates_and_deltas(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    publisher.send(publish(1, qty=5, px=1.0, secret="s"))
    out = watcher.send(
        {"c": "sow_and_delta_subscribe", "t": "orders", "sub_id": "s", "o": "select=[-/,+/qty,+/px]"}
    )
    assert of_type(out, "sow")[0]["data"] == {"qty": 5, "px": 1.0}
    publisher.send(publish(1, qty=5, px=1.0, secret="changed"))
    assert watcher.take()[0]["patch"] == [], "a change confined to deselected fields is an empty change"
    publisher.send(publish(1, qty=6, px=1.0, secret="changed"))
    assert watcher.take()[0]["patch"] == [{"op": "replace", "path": "/qty", "value": 6}]


def test_merge_delta_keeps_key_fields_even_when_deselected(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    publisher.send(publish(1, qty=5))
    watcher.send(
        {"c": "sow_and_delta_subscribe", "t": "orders", "sub_id": "s", "o": "delta=merge,select=[-/order]"}
    )
    publisher.send(publish(1, qty=6))
    assert watcher.take()[0]["delta"] == {"order": 1, "qty": 6}


def test_oof_match_and_deleted_only_with_the_option(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    publisher.send(publish(1, qty=50), publish(2, qty=60))
    watcher.send(
        {"c": "sow_and_subscribe", "t": "orders", "sub_id": "with", "filter": "/qty > 10", "o": "oof"},
        {"c": "sow_and_subscribe", "t": "orders", "sub_id": "without", "filter": "/qty > 10"},
    )
    publisher.send(publish(1, qty=5))
    out = watcher.take()
    assert [(m["c"], m["sids"]) for m in out] == [("oof", ["with"])]
    assert out[0]["reason"] == "match" and out[0]["data"] == {"order": 1, "qty": 5}
    publisher.send({"c": "sow_delete", "t": "orders", "sow_keys": out[0]["k"]})
    assert watcher.take() == [], "a record the subscription no longer holds is not OOF'd twice"
    publisher.send({"c": "sow_delete", "t": "orders", "filter": "/order = 2"})
    out = watcher.take()
    assert [(m["c"], m["reason"], m["data"]) for m in out] == [("oof", "deleted", {"order": 2, "qty": 60})]


def test_oof_only_for_records_the_subscription_received(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    publisher.send(publish(1, qty=50))
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "s", "filter": "/qty > 10", "o": "oof"})
    publisher.send(publish(1, qty=5))
    assert watcher.take() == []


def test_one_message_names_every_subscription_with_the_same_view(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    watcher.send(
        {"c": "subscribe", "t": "orders", "sub_id": "a"},
        {"c": "subscribe", "t": "orders", "sub_id": "b", "filter": "/qty > 1"},
        {"c": "subscribe", "t": "orders", "sub_id": "c", "o": "select=[-/qty]"},
        {"c": "subscribe", "t": "orders", "sub_id": "d", "filter": "/qty > 100"},
    )
    publisher.send(publish(1, qty=5))
    out = watcher.take()
    assert sorted(tuple(m["sids"]) for m in out) == [("a", "b"), ("c",)]


def test_plain_topics_pass_messages_through(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    out = watcher.send(
        {"c": "sow_and_delta_subscribe", "t": "chat", "sub_id": "s", "filter": "/room = 'x'", "o": "oof"}
    )
    assert [m["c"] for m in out] == ["group_begin", "group_end"] and out[1]["records"] == 0
    publisher.send({"c": "publish", "t": "chat", "data": {"room": "x", "text": "hi"}})
    publisher.send({"c": "delta_publish", "t": "chat", "data": {"room": "x", "text": "again"}})
    publisher.send({"c": "publish", "t": "chat", "data": {"room": "y", "text": "no"}})
    assert watcher.take() == [
        {"c": "p", "t": "chat", "sids": ["s"], "data": {"room": "x", "text": "hi"}},
        {"c": "p", "t": "chat", "sids": ["s"], "data": {"room": "x", "text": "again"}},
    ]


def test_timestamp_and_no_sowkey(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "s", "o": "timestamp,no_sowkey"})
    publisher.send(publish(1))
    message = watcher.take()[0]
    assert "k" not in message
    assert message["ts"] == "2027-01-15T08:00:00.000Z"
