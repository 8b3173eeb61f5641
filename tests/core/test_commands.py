"""Command handling in the engine: acks, errors, unsubscribe, sequences, client names, limits."""

from __future__ import annotations

import pytest

from .harness import Harness, acks, of_type, publish


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
    assert set(hub.engine.broker.topics) == {"orders", "trades"}
    watcher.send(
        {"c": "subscribe", "t": "chat", "sub_id": "a"}, {"c": "subscribe", "t": "chat", "sub_id": "b"}
    )
    watcher.send({"c": "unsubscribe", "sub_id": "a"})
    assert "chat" in hub.engine.broker.topics
    hub.engine.broker.close_session(watcher.session)
    assert set(hub.engine.broker.topics) == {"orders", "trades"}


def test_failed_and_one_off_queries_leave_no_topic_behind(hub: Harness) -> None:
    peer = hub.peer()
    peer.send({"c": "sow", "t": "ghost", "cid": 1})
    peer.send({"c": "subscribe", "t": "ghost", "cid": 2, "filter": "/a >"})
    peer.send({"c": "sow_and_subscribe", "t": "ghost", "cid": 3, "o": "bogus"})
    assert set(hub.engine.broker.topics) == {"orders", "trades"}


def test_unix_timestamp_reads_the_clock_when_evaluated(hub: Harness) -> None:
    publisher, watcher = hub.peer(), hub.peer()
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "s", "filter": "/until > UNIX_TIMESTAMP()"})
    until = hub.clock.now + 60
    publisher.send(publish(1, until=until))
    hub.clock.now += 120
    publisher.send(publish(2, until=until))
    assert [m["data"]["order"] for m in watcher.take()] == [1]


def test_a_sow_delete_naming_one_key_twice_deletes_it_once() -> None:
    h = Harness()
    peer = h.peer()
    peer.send(publish(1), publish(2))
    keys = [m["k"] for m in peer.send({"c": "sow", "t": "orders", "cid": "q"}) if m["c"] == "sow"]
    out = peer.send(
        {"c": "sow_delete", "t": "orders", "cid": "d", "a": "stats", "sow_keys": [keys[0], keys[0], keys[1]]}
    )
    assert [(m["a"], m["status"], m.get("records_deleted")) for m in out] == [
        ("processed", "success", 2),
        ("stats", "success", 2),
    ]
