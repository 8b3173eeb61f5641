"""Hidden views (docs/protocol.md, Hidden views) with a fake clock: while hidden, at most one
message per record per ``hidden_interval``; shown again, what is pending at once, in one frame."""

from __future__ import annotations

import time
from typing import Any

import orjson
import pytest

from ..harness import Harness, Peer, acks, publish

HIDE = {"c": "visibility", "hidden": True, "cid": "h"}
SHOW = {"c": "visibility", "hidden": False, "cid": "v"}


def tick(h: Harness, seconds: float) -> None:
    h.clock.now += seconds
    h.broker.advance(h.clock.now)


def live(messages: list[dict[str, Any]]) -> list[tuple[str, int, Any]]:
    return [
        (m["c"], m["data"]["order"], m.get("reason") or m["data"].get("qty"))
        for m in messages
        if m["c"] in ("p", "oof")
    ]


def watching(h: Harness, subscribe: dict[str, Any]) -> tuple[Peer, Peer]:
    publisher, watcher = h.peer(), h.peer()
    publisher.send(publish(1, qty=1), publish(2, qty=2))
    watcher.send(subscribe)
    return publisher, watcher


SUBSCRIPTIONS = [
    pytest.param({"c": "subscribe", "t": "orders", "sub_id": "s"}, id="stateless"),
    pytest.param({"c": "sow_and_subscribe", "t": "orders", "sub_id": "s", "o": "oof"}, id="oof"),
    pytest.param({"c": "sow_and_delta_subscribe", "t": "orders", "sub_id": "s", "o": "oof"}, id="delta"),
    pytest.param(
        {"c": "sow_and_subscribe", "t": "orders", "sub_id": "s", "filter": "/qty < 100"}, id="filtered"
    ),
]


@pytest.mark.parametrize("subscribe", SUBSCRIPTIONS)
def test_a_hidden_socket_gets_one_message_per_record_per_interval(subscribe: dict[str, Any]) -> None:
    h = Harness()
    publisher, watcher = watching(h, subscribe)
    assert acks(watcher.send(HIDE)) == [("processed", "success")]
    publisher.send(*[publish(1, qty=q) for q in range(10, 20)], publish(2, qty=50))
    assert live(watcher.take()) == []
    tick(h, 0.9)
    assert live(watcher.take()) == [], "within the interval (1s by default)"
    tick(h, 0.2)
    got = watcher.take()
    updates = [m for m in got if m["c"] == "p"]
    assert len(updates) == len({m["k"] for m in updates}) == 2
    full = [m for m in got if "data" in m and "patch" not in m]
    assert all(m["data"]["qty"] in (19, 50) for m in full), "the final state"
    publisher.send(publish(1, qty=30))
    tick(h, 0.5)
    assert live(watcher.take()) == []
    tick(h, 0.6)
    assert len([m for m in watcher.take() if m["c"] == "p"]) == 1


@pytest.mark.parametrize("subscribe", SUBSCRIPTIONS)
def test_shown_again_the_pending_changes_go_at_once_in_one_frame(subscribe: dict[str, Any]) -> None:
    h = Harness()
    publisher, watcher = watching(h, subscribe)
    watcher.send(HIDE)
    publisher.send(publish(1, qty=11), publish(2, qty=22), publish(3, qty=33))
    watcher.take()
    watcher.engine.receive(watcher.session, b'{"c":"visibility","hidden":false,"cid":"v"}')
    frame = watcher.session.outbox.take_frame(1 << 20)
    assert frame is not None and watcher.session.outbox.take_frame(1 << 20) is None, "one frame"
    messages = orjson.loads(frame)
    updates = [m for m in messages if m["c"] == "p"]
    assert len(updates) == len({m["k"] for m in updates}) == 3
    assert messages[-1]["c"] == "ack" and messages[-1]["cid"] == "v"
    # Back to normal delivery: the next change goes at once.
    publisher.send(publish(1, qty=12))
    assert len([m for m in watcher.take() if m["c"] == "p"]) == 1
    tick(h, 5)
    assert watcher.take() == [], "nothing was left behind"


def test_in_then_out_gives_the_oof_and_in_out_in_collapses() -> None:
    h = Harness()
    subscribe = {"c": "sow_and_subscribe", "t": "orders", "sub_id": "s", "o": "oof", "filter": "/qty < 100"}
    publisher, watcher = watching(h, subscribe)
    watcher.take()
    watcher.send(HIDE)
    publisher.send(publish(1, qty=500))  # leaves
    publisher.send(publish(2, qty=500), publish(2, qty=3))  # leaves and comes back
    tick(h, 1.1)
    assert sorted(live(watcher.take())) == [("oof", 1, "match"), ("p", 2, 3)]
    publisher.send({"c": "sow_delete", "t": "orders", "sow_keys": None, "filter": "/order = 2"})
    tick(h, 1.1)
    assert live(watcher.take()) == [("oof", 2, "deleted")]


def test_acks_heartbeats_and_snapshots_are_never_held() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    publisher.send(publish(1, qty=1))
    watcher.send(HIDE)
    got = watcher.send(
        {"c": "heartbeat"}, {"c": "sow_and_subscribe", "t": "orders", "sub_id": "s", "cid": "q"}
    )
    assert [m["c"] for m in got] == ["heartbeat", "ack", "group_begin", "sow", "group_end"]
    publisher.send(publish(1, qty=2))
    assert watcher.take() == [], "a subscription made while hidden is hidden too"
    tick(h, 1.1)
    assert live(watcher.take()) == [("p", 1, 2)]


def test_the_interval_is_configurable_and_a_longer_own_conflation_is_kept() -> None:
    h = Harness(server={"hidden_interval": "200ms"})
    publisher, watcher = h.peer(), h.peer()
    watcher.send(
        {"c": "subscribe", "t": "orders", "sub_id": "fast"},
        {"c": "subscribe", "t": "orders", "sub_id": "slow", "filter": "/qty > 0", "o": "conflation=2s"},
    )
    watcher.send(HIDE)
    publisher.send(publish(1, qty=1))
    tick(h, 0.25)
    assert [m["sids"] for m in watcher.take() if m["c"] == "p"] == [["fast"]]
    tick(h, 2)
    assert [m["sids"] for m in watcher.take() if m["c"] == "p"] == [["slow"]]


def test_hiding_twice_or_showing_a_visible_socket_changes_nothing() -> None:
    h = Harness()
    publisher, watcher = watching(h, {"c": "subscribe", "t": "orders", "sub_id": "s"})
    assert acks(watcher.send(SHOW)) == [("processed", "success")]
    publisher.send(publish(1, qty=5))
    assert len(live(watcher.take())) == 1
    watcher.send(HIDE)
    publisher.send(publish(1, qty=6))
    tick(h, 0.6)
    watcher.send(HIDE)  # does not restart the interval
    tick(h, 0.5)
    assert live(watcher.take()) == [("p", 1, 6)]


@pytest.mark.parametrize("hidden", [None, "yes", 1, 0])
def test_visibility_needs_a_boolean(hidden: Any) -> None:
    h = Harness()
    peer = h.peer()
    command: dict[str, Any] = {"c": "visibility", "cid": 1}
    if hidden is not None:
        command["hidden"] = hidden
    [ack] = peer.send(command)
    assert ack["status"] == "failure" and ack["reason"] == "bad message: visibility needs hidden, a boolean"


def test_a_plain_topic_delivers_its_latest_message_per_interval() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    watcher.send({"c": "subscribe", "t": "news", "sub_id": "s"}, HIDE)
    watcher.take()
    publisher.send(*[{"c": "publish", "t": "news", "data": {"n": n}} for n in range(5)])
    tick(h, 1.1)
    assert [m["data"] for m in watcher.take() if m["c"] == "p"] == [{"n": 4}]


def _release_cost(records: int) -> float:
    """The CPU time of delivering a hidden view's changes as each one's interval ends, while the
    others still wait (a feed loads ``records`` records within the interval)."""
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "s"}, HIDE)
    start, step = h.clock.now, 0.5 / records
    for n in range(records):
        h.clock.now = start + n * step
        publisher.send(publish(n, qty=n))
    delivered = 0
    began = time.thread_time()
    for n in range(records):
        h.clock.now = start + 1.0 + n * step + step / 2
        h.broker.advance(h.clock.now)
        delivered += sum(1 for m in watcher.take() if m["c"] == "p")
    cost = time.thread_time() - began
    assert delivered == records, "each record once, as its interval ended"
    return cost


def test_releasing_what_is_due_costs_what_it_releases_not_what_is_pending() -> None:
    """A hidden tab with five views while a feed loaded 20,000 records: every other socket waited
    15 to 29 s, since each interval's end scanned every pending change. Eight times the records
    must cost about eight times as much (a scan makes it sixty-four)."""
    small = min(_release_cost(1_000) for _ in range(3))
    large = min(_release_cost(8_000) for _ in range(3))
    assert large < 24 * small, f"1,000 records: {small:.3f} s, 8,000: {large:.3f} s"
