"""Durability in the core: log framing, persisted acks, recovery, expiration, bookmark replay."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from server.core.broker.bookmarks import parse_bookmark
from server.core.errors import CommandError
from server.core.handlers import recovery, replaying
from server.core.sow.txlog import entries_in, frame, scan

from ..harness import Harness, Peer, entries_of, replay_all

TOPICS = [
    {"name": "orders", "key": ["/id"], "durable": True},
    {"name": "quotes", "key": ["/id"], "durable": True, "expiration": "10s"},
    {"name": "scratch", "key": ["/id"]},
]


def hub() -> Harness:
    return Harness(topics=TOPICS)


def sync(h: Harness) -> None:
    """What the runtime's log writer does: take what is pending and say it is on disk."""
    taken = h.broker.durability.take()
    if taken is not None:
        h.broker.made_durable(taken[1])


def publish(t: str, record_id: int, seq: int | None = None, **fields: Any) -> dict[str, Any]:
    command: dict[str, Any] = {"c": "publish", "t": t, "data": {"id": record_id, **fields}, "a": "persisted"}
    if seq is not None:
        command["s"] = seq
    return command


# -- framing ------------------------------------------------------------------------------


def test_scan_stops_at_a_torn_or_corrupt_frame() -> None:
    frames = [frame([[n, "p", "t", "k", {"n": n}, None, None, 0.0, None]]) for n in range(3)]
    good = b"".join(frames)
    assert len(entries_in(scan(good).payloads)) == 3 and scan(good).problem is None
    torn = scan(good[:-5])
    assert len(torn.payloads) == 2 and "torn" in str(torn.problem)
    corrupt = bytearray(good)
    corrupt[-3] ^= 0xFF
    found = scan(bytes(corrupt))
    assert len(found.payloads) == 2 and "checksum" in str(found.problem)
    assert found.good_bytes == len(good) - len(frames[-1])


# -- persisted acks -----------------------------------------------------------------------


def test_persisted_acks_wait_for_the_disk_and_are_batched_per_client_name() -> None:
    h = hub()
    peer = h.peer()
    peer.send({"c": "logon", "client_name": "feed"})
    out = peer.send(*[publish("orders", n, seq=n + 1) for n in range(5)])
    assert [m for m in out if m["a"] == "persisted"] == [], "nothing is on disk yet"
    sync(h)
    assert peer.take() == [{"c": "ack", "a": "persisted", "status": "success", "s": 5}]


def test_persisted_acks_without_sequences_go_one_by_one_with_their_cid() -> None:
    h = hub()
    peer = h.peer()
    peer.send({**publish("orders", 1), "cid": "a"}, {**publish("orders", 2), "cid": "b"})
    sync(h)
    assert [(m["a"], m["cid"]) for m in peer.take()] == [("persisted", "a"), ("persisted", "b")]


def test_non_durable_topics_ack_persisted_with_processed() -> None:
    h = hub()
    peer = h.peer()
    out = peer.send({**publish("scratch", 1), "cid": "x"})
    assert [m["a"] for m in out] == ["processed", "persisted"]


def test_flush_persisted_waits_for_everything_before_it() -> None:
    h = hub()
    peer = h.peer()
    out = peer.send(
        {"c": "publish", "t": "orders", "data": {"id": 1}}, {"c": "flush", "cid": "f", "a": "persisted"}
    )
    assert [m["a"] for m in out] == ["processed"]
    sync(h)
    assert [(m["a"], m["cid"]) for m in peer.take()] == [("persisted", "f")]


def test_logon_reports_only_sequences_that_are_on_disk() -> None:
    h = hub()
    peer = h.peer()
    peer.send({"c": "logon", "client_name": "feed"}, publish("orders", 1, seq=7))
    assert h.peer().send({"c": "logon", "cid": 1, "client_name": "other"})[0]["s"] == 0
    again = h.peer()
    assert again.send({"c": "logon", "cid": 1, "client_name": "feed"})[0]["s"] == 0
    sync(h)
    assert h.peer().send({"c": "logon", "cid": 1, "client_name": "feed"})[0]["s"] == 7


def test_a_duplicate_is_not_logged_again_and_its_persisted_ack_waits_for_the_original() -> None:
    h = hub()
    peer = h.peer()
    peer.send({"c": "logon", "client_name": "feed"}, publish("orders", 1, seq=1))
    duplicate = peer.send({**publish("orders", 1, seq=1), "cid": "d"})
    assert [(m["a"], m.get("reason")) for m in duplicate] == [("processed", "duplicate")]
    assert len(entries_of(h)) == 1
    h.broker.made_durable(h.broker.durability.last_lsn)
    acks = peer.take()
    assert {
        "c": "ack",
        "a": "persisted",
        "cid": "d",
        "status": "success",
        "reason": "duplicate",
        "s": 1,
    } in acks


def test_the_log_holds_merged_records_deletes_and_sequences() -> None:
    h = hub()
    peer = h.peer()
    peer.send(
        {"c": "logon", "client_name": "feed"},
        publish("orders", 1, seq=1, qty=5, side="B"),
        {"c": "delta_publish", "t": "orders", "data": {"id": 1, "qty": 6}, "s": 2},
        {"c": "sow_delete", "t": "orders", "filter": "/id = 1", "s": 3},
        {"c": "sow_delete", "t": "orders", "filter": "/id = 99", "s": 4},
        publish("scratch", 1, seq=5),
    )
    logged = entries_of(h)
    assert [(e.op, e.data, e.seq) for e in logged] == [
        ("p", {"id": 1, "qty": 5, "side": "B"}, 1),
        ("p", {"id": 1, "qty": 6, "side": "B"}, 2),
        ("d", None, 3),
        ("n", None, 4),
    ]
    assert [e.lsn for e in logged] == sorted(e.lsn for e in logged)


# -- recovery -----------------------------------------------------------------------------


def test_snapshot_round_trip_and_restore_with_the_log_tail() -> None:
    h = hub()
    peer = h.peer()
    peer.send(
        {"c": "logon", "client_name": "feed"}, *[publish("orders", n, seq=n + 1, v=n) for n in range(3)]
    )
    snapshot = recovery.capture(h.broker)
    encoded = b"".join(recovery.encode_snapshot(snapshot))
    decoded = recovery.decode_snapshot(encoded)
    assert decoded is not None and decoded.lsn == snapshot.lsn and len(decoded.rows) == 3
    assert recovery.decode_snapshot(encoded[:-3]) is None, "a snapshot without its footer is not used"
    before = entries_of(h)
    peer.send(
        publish("orders", 1, seq=4, v=100), {"c": "sow_delete", "t": "orders", "filter": "/id = 2", "s": 5}
    )
    tail = entries_of(h)
    fresh = hub()
    report = recovery.restore(
        fresh.broker,
        decoded,
        [
            orjson.loads(
                orjson.dumps(
                    [e.lsn, e.op, e.topic, e.key, e.data, e.client_name, e.seq, e.timestamp, e.expires_at]
                )
            )
            for e in before + tail
        ],
    )
    records = {v.data["id"]: v.data for v in fresh.broker.topics["orders"].records.values()}
    assert records == {0: {"id": 0, "v": 0}, 1: {"id": 1, "v": 100}}
    assert report.entries == 2, "entries the snapshot covers are skipped"
    assert fresh.broker.sequences == {"feed": 5}
    assert fresh.peer().send({"c": "logon", "cid": 1, "client_name": "feed"})[0]["s"] == 5
    newer = fresh.peer()
    newer.send(publish("orders", 9))
    assert entries_of(fresh)[0].lsn > max(e.lsn for e in tail), "LSNs keep increasing after a restart"


# -- expiration ---------------------------------------------------------------------------


def tick(h: Harness, seconds: float) -> None:
    h.clock.now += seconds
    h.broker.advance(h.clock.now)


def test_records_expire_with_an_expired_oof() -> None:
    h = hub()
    publisher, watcher = h.peer(), h.peer()
    watcher.send({"c": "subscribe", "t": "quotes", "sub_id": "q", "o": "oof"})
    publisher.send(
        publish("quotes", 1, px=1), publish("quotes", 2, px=2), {**publish("quotes", 3, px=3), "e": 0}
    )
    publisher.send({**publish("quotes", 4, px=4), "e": 2})
    watcher.take()
    tick(h, 5)
    tick(h, 3)
    assert [(m["data"]["id"], m["reason"]) for m in watcher.take()] == [(4, "expired")]
    publisher.send(publish("quotes", 1, px=10))  # a publish starts a new lifetime
    tick(h, 3)
    expired = [m for m in watcher.take() if m["c"] == "oof"]
    assert [(m["c"], m["data"]["id"], m["reason"]) for m in expired] == [("oof", 2, "expired")]
    assert {v.data["id"] for v in h.broker.topics["quotes"].records.values()} == {1, 3}
    assert [e.op for e in entries_of(h)].count("x") == 2, "expiries of durable topics are logged"


def test_expiries_survive_a_restart() -> None:
    h = hub()
    h.peer().send(publish("quotes", 1), publish("quotes", 2))
    snapshot = recovery.capture(h.broker)
    fresh = hub()
    fresh.clock.now = h.clock.now
    recovery.restore(fresh.broker, snapshot, [])
    assert len(fresh.broker.topics["quotes"].records) == 2
    tick(fresh, 11)
    assert fresh.broker.topics["quotes"].records == {}


# -- bookmarks ----------------------------------------------------------------------------


def test_bookmark_forms() -> None:
    assert parse_bookmark("now").live_only
    assert parse_bookmark("0").after_lsn == 0
    assert parse_bookmark("42").after_lsn == 42
    assert parse_bookmark("2026-11-21T01:00:00Z").since == 1795222800.0
    assert parse_bookmark("20261121T010000Z").since == 1795222800.0
    with pytest.raises(CommandError):
        parse_bookmark("yesterday")


def test_replay_then_live_with_no_gap_and_no_duplicate() -> None:
    h = hub()
    publisher = h.peer()
    publisher.send(publish("orders", 1, v=1), publish("orders", 2, v=1), publish("orders", 1, v=2))
    log = entries_of(h)
    watcher: Peer = h.peer()
    out = watcher.send(
        {
            "c": "subscribe",
            "t": "orders",
            "sub_id": "b",
            "bm": str(log[0].lsn),
            "a": "completed",
            "filter": "/id = 1",
        }
    )
    assert [m["c"] for m in out] == []
    publisher.send(publish("orders", 1, v=3))  # live while the replay has not run: waits
    assert watcher.take() == []
    log += entries_of(h)
    replay_all(h, log)
    got = watcher.take()
    assert [(m["c"], m.get("data", {}).get("v"), m.get("bm")) for m in got] == [
        ("p", 2, str(log[2].lsn)),
        ("ack", None, str(log[2].lsn)),
        ("p", 3, str(log[3].lsn)),
    ]


def test_bookmark_zero_replays_everything_and_now_replays_nothing() -> None:
    h = hub()
    h.peer().send(publish("orders", 1), publish("orders", 2))
    log = entries_of(h)
    everything, live = h.peer(), h.peer()
    everything.send({"c": "subscribe", "t": "orders", "sub_id": "all", "bm": "0"})
    out = live.send(
        {"c": "subscribe", "t": "orders", "sub_id": "now", "bm": "now", "a": "completed", "cid": 1}
    )
    assert [m["a"] for m in out] == ["processed", "completed"] and out[1]["bm"] == str(log[-1].lsn)
    replay_all(h, log)
    assert [m["data"]["id"] for m in everything.take()] == [1, 2]
    assert live.take() == []


def test_bookmarks_need_a_durable_topic_and_plain_subscribe() -> None:
    h = hub()
    peer = h.peer()
    assert peer.send({"c": "subscribe", "t": "scratch", "cid": 1, "bm": "0"})[0]["reason"].startswith(
        "invalid topic"
    )
    assert peer.send({"c": "sow_and_subscribe", "t": "orders", "cid": 2, "bm": "0"})[0]["reason"].startswith(
        "bad message"
    )
    assert peer.send({"c": "subscribe", "t": "orders", "cid": 3, "bm": "soon"})[0]["reason"].startswith(
        "bad message"
    )


def test_a_failed_replay_ends_the_subscription_and_tells_the_client() -> None:
    h = hub()
    publisher, watcher = h.peer(), h.peer()
    publisher.send(publish("orders", 1))
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "b", "bm": "0"})
    request = h.broker.replays.popleft()
    publisher.send(publish("orders", 2))  # waits in the replaying subscription
    replaying.abort(h.broker, request, "replay_failed")
    assert watcher.take() == [{"c": "unsubscribed", "sub_id": "b", "reason": "replay_failed"}]
    publisher.send(publish("orders", 3))
    assert watcher.take() == [] and "b" not in watcher.session.subscriptions


def test_the_expiry_heap_holds_one_entry_per_record_however_often_it_is_published() -> None:
    h = hub()
    publisher = h.peer()
    for round_number in range(50):
        publisher.send(*[publish("quotes", n, r=round_number) for n in range(20)])
        h.clock.now += 0.1
    assert h.broker.timers.expiry_entries == 20
    tick(h, 9)  # the first lifetimes have ended, but every record was published again since
    assert len(h.broker.topics["quotes"].records) == 20 and h.broker.timers.expiry_entries == 20
    tick(h, 10)
    assert h.broker.topics["quotes"].records == {} and h.broker.timers.expiry_entries == 0


def test_a_bookmark_replay_with_deltas_and_oof_is_defined() -> None:
    """AMPS refuses a bookmark with delta_subscribe or oof; here both are defined: a replay is a
    subscription that starts holding nothing, so its first message about a record is the whole
    record, then deltas against what it received, and OOFs for records it received that leave."""
    h = hub()
    feed = h.peer()
    feed.send(
        publish("orders", 1, qty=10),
        publish("orders", 1, qty=20),
        publish("orders", 2, qty=5),
        publish("orders", 1, qty=1),
    )
    log = entries_of(h)
    peer = h.peer()
    peer.send(
        {"c": "delta_subscribe", "t": "orders", "sub_id": "d", "bm": "0", "filter": "/qty > 2", "o": "oof"}
    )
    replay_all(h, log)
    got = peer.take()
    assert [(m["c"], "data" in m, "patch" in m) for m in got] == [
        ("p", True, False),
        ("p", False, True),
        ("p", True, False),
        ("oof", True, False),
    ]
    assert got[1]["patch"] == [{"op": "replace", "path": "/qty", "value": 20}]
    assert (got[3]["reason"], got[3]["data"]) == ("match", {"id": 1, "qty": 1})
    assert all("bm" in m for m in got)
    feed.send(publish("orders", 2, qty=6))
    live = peer.take()
    assert [m.get("patch") for m in live] == [[{"op": "replace", "path": "/qty", "value": 6}]]


def test_a_replay_keeps_the_last_version_of_a_record_only_where_a_delete_can_use_it() -> None:
    """The last version replayed of each record is kept for the OOF of a later delete (or for a
    conflation interval to fold it): a plain bookmark subscription is sent nothing about a delete,
    so its replay keeps no copy of the topic."""
    h = hub()
    feed = h.peer()
    feed.send(*[publish("orders", n, qty=n) for n in range(5)])
    feed.send({"c": "sow_delete", "t": "orders", "filter": "/id = 1"})
    log = entries_of(h)
    plain, oof = h.peer(), h.peer()
    plain.send({"c": "subscribe", "t": "orders", "sub_id": "p", "bm": "0"})
    oof.send({"c": "subscribe", "t": "orders", "sub_id": "o", "bm": "0", "o": "oof"})
    kept: dict[Any, list[int]] = {}
    while h.broker.replays:
        request = h.broker.replays.popleft()
        replaying.replay(h.broker, request, log)
        kept[request.subscription.sub_id] = sorted(v.data["id"] for v in request.state.values())
        replaying.finish(h.broker, request)
    assert kept == {"p": [], "o": [0, 2, 3, 4]}
    assert [m["c"] for m in plain.take()] == ["p"] * 5
    assert [(m["c"], m["data"]["id"]) for m in oof.take() if m["c"] == "oof"] == [("oof", 1)]
