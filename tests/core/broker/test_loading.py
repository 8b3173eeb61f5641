"""Loading a topic's SOW from a snapshot on a running server (broker/applying.py ``load``, what a
cluster node resynchronising from Redis does): subscribers hear the difference and only it, a
record the snapshot no longer holds leaves with the snapshot's bookmark, and every version stored
has its expiry armed. A server starting tells nobody."""

from __future__ import annotations

from typing import Any

from server.core.broker.applying import load
from server.core.records.version import RecordVersion

from ..harness import Harness, Peer

TOPICS = [{"name": "orders", "key": ["/order"], "expiration": "10s"}]


def running() -> tuple[Harness, Peer, dict[int, RecordVersion]]:
    """Orders 1, 2 and 3 stored (LSNs 1 to 3, expiring in 10 s), and a subscriber sent them."""
    h = Harness(topics=TOPICS)
    watcher = h.peer()
    watcher.send(*[{"c": "publish", "t": "orders", "data": {"order": n, "v": 1}} for n in (1, 2, 3)])
    watcher.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "s", "o": "resume,oof", "cid": "c"})
    stored = {version.data["order"]: version for version in h.broker.topics["orders"].records.values()}
    return h, watcher, stored


def snapshot(h: Harness, stored: dict[int, RecordVersion]) -> list[RecordVersion]:
    """As of LSN 10: order 1 unchanged, order 2 changed (for longer), order 4 new, order 3 gone."""
    now = h.clock.now
    return [
        RecordVersion(
            stored[1].key, {"order": 1, "v": 1}, stored[1].seq, stored[1].timestamp, stored[1].expires_at
        ),
        RecordVersion(stored[2].key, {"order": 2, "v": 2}, 8, now, now + 100),
        RecordVersion("four", {"order": 4, "v": 1}, 9, now, now + 5),
    ]


def orders(h: Harness) -> dict[int, Any]:
    return {v.data["order"]: v.data["v"] for v in h.broker.topics["orders"].records.values()}


def test_subscribers_hear_only_the_difference_and_a_removed_record_leaves_at_the_snapshot() -> None:
    h, watcher, stored = running()
    topic = h.broker.topics["orders"]
    load(topic, snapshot(h, stored), 10, h.broker.timers, told_at=h.clock.now)
    h.broker.settle()
    told = {m["data"]["order"]: m for m in watcher.take()}
    assert {n: (m["c"], m.get("reason"), m["bm"]) for n, m in told.items()} == {
        2: ("p", None, "8"),
        4: ("p", None, "9"),
        3: ("oof", "deleted", "10"),  # resuming from the bookmark it was sent must not send it again
    }
    assert told[3]["data"] == {"order": 3, "v": 1}, "an OOF carries the record's last state"
    assert orders(h) == {1: 1, 2: 2, 4: 1}
    assert topic.records[stored[1].key] is stored[1], "an unchanged record keeps its version"
    assert topic.sow.history is not None and topic.sow.history.floor == 10


def test_every_version_stored_has_its_expiry_armed() -> None:
    h, watcher, stored = running()
    load(h.broker.topics["orders"], snapshot(h, stored), 10, h.broker.timers, told_at=h.clock.now)
    h.broker.settle()
    watcher.take()
    h.clock.now += 6
    h.broker.advance(h.clock.now)
    assert orders(h) == {1: 1, 2: 2}, "order 4 expired at the snapshot's lifetime"
    h.clock.now += 5
    h.broker.advance(h.clock.now)
    assert orders(h) == {2: 2}, "order 1 kept its lifetime, order 2 has the snapshot's longer one"
    assert [(m["c"], m["data"]["order"]) for m in watcher.take()] == [("oof", 4), ("oof", 1)]


def test_a_server_starting_tells_nobody_and_arms_every_expiry() -> None:
    h = Harness(topics=TOPICS)
    watcher = h.peer()
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "s", "cid": "c"})
    now = h.clock.now
    versions = [RecordVersion(f"k{n}", {"order": n, "v": 1}, n, now, now + n) for n in (1, 2)]
    load(h.broker.topics["orders"], versions, 2, h.broker.timers)
    h.broker.settle()
    assert watcher.take() == [] and orders(h) == {1: 1, 2: 1}
    assert all(v.is_compact for v in h.broker.topics["orders"].records.values())
    h.clock.now += 1.5
    h.broker.advance(h.clock.now)
    assert orders(h) == {2: 1}
