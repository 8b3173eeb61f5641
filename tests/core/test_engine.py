"""The protocol engine, with no event loop and no socket: commands in, queued messages out."""

from __future__ import annotations

import jsonpatch
import pytest

from server.core.merge import merge_record

from .harness import Harness, acks, of_type


@pytest.fixture
def hub() -> Harness:
    return Harness()


def publish(order: int, **fields: object) -> dict[str, object]:
    return {"c": "publish", "t": "orders", "data": {"order": order, **fields}}


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


def test_acks_rules(hub: Harness) -> None:
    peer = hub.peer()
    assert peer.send(publish(1)) == [], "no cid and no acks asked: nothing"
    assert acks(peer.send({**publish(1), "cid": 7})) == [("processed", "success")]
    out = peer.send({**publish(1), "a": "received,processed,persisted,stats"})
    assert [m["a"] for m in out] == ["received", "processed", "persisted", "stats"]
    failed = peer.send({"c": "publish", "t": "orders", "data": {"qty": 1}, "a": "received,persisted"})
    assert failed == [{"c": "ack", "a": "processed", "status": "failure", "reason": failed[0]["reason"]}]
    assert failed[0]["reason"].startswith("bad message")


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ({"c": "sow", "t": "orders", "cid": 1, "filter": "/qty >"}, "bad filter"),
        ({"c": "sow", "t": "nosow", "cid": 1}, "invalid topic"),
        ({"c": "sow_delete", "t": "nosow", "cid": 1, "filter": "1 = 1"}, "invalid topic"),
        ({"c": "subscribe", "t": "orders", "cid": 1, "o": "wat"}, "invalid options"),
        ({"c": "sow", "t": "orders", "cid": 1, "orderby": "qty"}, "invalid order by"),
        ({"c": "subscribe", "cid": 1}, "no topic"),
        ({"c": "subscribe", "t": "orders"}, "bad message"),
        ({"c": "publish", "t": "orders", "cid": 1, "data": {"order": [1]}}, "bad message"),
        ({"c": "publish", "t": "orders", "cid": 1, "data": "text"}, "bad message"),
        ({"c": "publish", "t": 5, "cid": 1, "data": {}}, "bad message"),
        ({"c": "nope", "cid": 1}, "bad message"),
        ({"cid": 1}, "bad message"),
        ({"c": "publish", "t": "orders", "cid": 1, "data": {"order": 1}, "a": "bogus"}, "bad message"),
        ({"c": "sow_delete", "t": "orders", "cid": 1}, "bad message"),
        ({"c": "subscribe", "t": "orders", "cid": 1, "bm": "0"}, "invalid topic"),
    ],
)
def test_failures_name_their_reason_and_echo_the_cid(
    hub: Harness, command: dict[str, object], reason: str
) -> None:
    out = hub.peer().send(command)
    assert len(out) == 1 and out[0]["status"] == "failure" and out[0]["a"] == "processed"
    assert out[0]["reason"].startswith(reason), out[0]["reason"]
    if "cid" in command:
        assert out[0]["cid"] == command["cid"]


def test_bad_input_changes_no_stored_data(hub: Harness) -> None:
    peer = hub.peer()
    peer.send(publish(1, qty=5))
    peer.send({"c": "delta_publish", "t": "orders", "data": {"qty": 9}})
    peer.send({"c": "sow_delete", "t": "orders", "filter": "/qty >"})
    assert of_type(peer.send({"c": "sow", "t": "orders", "cid": 1}), "sow")[0]["data"] == {
        "order": 1,
        "qty": 5,
    }


def test_an_array_frame_keeps_going_after_a_bad_element(hub: Harness) -> None:
    peer = hub.peer()
    out = peer.send({**publish(1), "cid": "a"}, {"c": "bogus", "cid": "b"}, {**publish(2), "cid": "c"})
    assert [(m["cid"], m["status"]) for m in out] == [("a", "success"), ("b", "failure"), ("c", "success")]


def test_subid_in_use_and_replace(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    publisher.send(publish(1, qty=5), publish(2, qty=50))
    watcher.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "s", "filter": "/qty > 1", "o": "oof"})
    again = watcher.send({"c": "subscribe", "t": "orders", "sub_id": "s", "cid": 2})
    assert again[0]["reason"] == "subid in use: sub_id 's' is already subscribed on this connection"
    out = watcher.send(
        {"c": "subscribe", "t": "orders", "sub_id": "s", "filter": "/qty > 10", "o": "oof,replace"}
    )
    assert [(m["c"], m.get("reason"), m.get("data")) for m in out] == [
        ("oof", "match", {"order": 1, "qty": 5})
    ]
    publisher.send(publish(2, qty=51), publish(1, qty=6))
    assert [m["data"] for m in watcher.take()] == [{"order": 2, "qty": 51}]


def test_unsubscribe_one_list_and_all(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    for sub_id in ("a", "b", "c", "d"):
        watcher.send({"c": "subscribe", "t": "orders", "sub_id": sub_id, "o": f"select=[-/x{sub_id}]"})
    watcher.send({"c": "unsubscribe", "sub_id": "a"})
    publisher.send(publish(1))
    assert sorted(sid for m in watcher.take() for sid in m["sids"]) == ["b", "c", "d"]
    watcher.send({"c": "unsubscribe", "sub_id": "b,c"})
    publisher.send(publish(1))
    assert [m["sids"] for m in watcher.take()] == [["d"]]
    assert acks(watcher.send({"c": "unsubscribe", "sub_id": "all", "cid": 1})) == [("processed", "success")]
    publisher.send(publish(1))
    assert watcher.take() == []


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


def test_bookmark_now_subscribes_live(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    publisher.send(publish(1))
    assert acks(watcher.send({"c": "subscribe", "t": "orders", "cid": "b", "bm": "now"})) == [
        ("processed", "success")
    ]
    publisher.send(publish(2))
    assert [m["data"]["order"] for m in watcher.take()] == [2]


def test_heartbeat_and_flush(hub: Harness) -> None:
    peer = hub.peer()
    assert peer.send({"c": "heartbeat"}) == [{"c": "heartbeat"}]
    out = peer.send({"c": "flush", "cid": "f", "a": "persisted"})
    assert [m["a"] for m in out] == ["processed", "persisted"]


def test_timestamp_and_no_sowkey(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "s", "o": "timestamp,no_sowkey"})
    publisher.send(publish(1))
    message = watcher.take()[0]
    assert "k" not in message
    assert message["ts"] == "2027-01-15T08:00:00.000Z"


def test_publisher_sequences_deduplicate_per_client_name(hub: Harness) -> None:
    peer, watcher = hub.peer(), hub.peer()
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "s"})
    logon = peer.send({"c": "logon", "client_name": "feed", "cid": "l"})
    assert logon[0]["s"] == 0
    assert acks(peer.send({**publish(1, qty=1), "s": 1, "cid": 1})) == [("processed", "success")]
    duplicate = peer.send({**publish(1, qty=2), "s": 1, "cid": 2})
    assert duplicate[0]["status"] == "success" and duplicate[0]["reason"] == "duplicate"
    assert len(watcher.take()) == 1
    assert peer.send({"c": "logon", "client_name": "feed", "cid": "again"})[0]["s"] == 1


def test_client_name_in_use(hub: Harness) -> None:
    first, same_user, other_user = hub.peer(), hub.peer(), hub.peer()
    first.send({"c": "logon", "client_name": "desk", "user_id": "u1"})
    same_user.send({"c": "logon", "client_name": "desk", "user_id": "u1", "cid": 1})
    assert first.session.close_code == 4002
    refused = other_user.send({"c": "logon", "client_name": "desk", "user_id": "u2", "cid": 1})
    assert refused[0]["reason"].startswith("name in use")
    assert same_user.session.close_code is None


def test_snapshot_and_subscription_are_atomic(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    publisher.send(*[publish(n, qty=0) for n in range(100)])
    hub.engine.receive(watcher.session, b'{"c":"sow_and_subscribe","t":"orders","sub_id":"s"}')
    publisher.send(publish(5, qty=1))
    out = watcher.take()
    assert [m["c"] for m in out] == ["group_begin", *["sow"] * 100, "group_end", "p"]
    assert out[-1]["data"] == {"order": 5, "qty": 1}
    assert {"order": 5, "qty": 0} in [m["data"] for m in out[1:-2]]


def test_queue_overflow_closes_with_4001() -> None:
    hub = Harness(server={"queue_max_messages": 10})
    publisher, slow = hub.peer(), hub.peer()
    slow.send({"c": "subscribe", "t": "orders", "sub_id": "s"})
    publisher.send(*[publish(n) for n in range(20)])
    assert slow.session.close_code == 4001
    assert publisher.session.close_code is None


def test_plain_topics_exist_only_while_someone_listens(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    publisher.send(*[{"c": "publish", "t": f"noise-{n}", "data": {"n": n}} for n in range(100)])
    assert set(hub.engine.topics) == {"orders", "trades"}
    watcher.send(
        {"c": "subscribe", "t": "chat", "sub_id": "a"}, {"c": "subscribe", "t": "chat", "sub_id": "b"}
    )
    watcher.send({"c": "unsubscribe", "sub_id": "a"})
    assert "chat" in hub.engine.topics
    hub.engine.close_session(watcher.session)
    assert set(hub.engine.topics) == {"orders", "trades"}


def test_failed_and_one_off_queries_leave_no_topic_behind(hub: Harness) -> None:
    peer = hub.peer()
    peer.send({"c": "sow", "t": "ghost", "cid": 1})
    peer.send({"c": "subscribe", "t": "ghost", "cid": 2, "filter": "/a >"})
    peer.send({"c": "sow_and_subscribe", "t": "ghost", "cid": 3, "o": "bogus"})
    assert set(hub.engine.topics) == {"orders", "trades"}


def test_unix_timestamp_reads_the_clock_when_evaluated(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "s", "filter": "/until > UNIX_TIMESTAMP()"})
    until = hub.clock.now + 60
    publisher.send(publish(1, until=until))
    hub.clock.now += 120
    publisher.send(publish(2, until=until))
    assert [m["data"]["order"] for m in watcher.take()] == [1]
