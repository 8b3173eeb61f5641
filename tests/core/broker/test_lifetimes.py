"""A record expires at the lifetime of its newest publish, longer or shorter than the last one,
and ``e: 0`` means never (issue 11, item 5)."""

from __future__ import annotations

from typing import Any

import pytest

from ..harness import Harness, Peer

TOPICS = [
    {"name": "quotes", "key": ["/id"]},
    {"name": "timed", "key": ["/id"], "expiration": "10s"},
]


def publish(record_id: int, lifetime: float | None, topic: str = "quotes") -> dict[str, Any]:
    command: dict[str, Any] = {"c": "publish", "t": topic, "data": {"id": record_id}}
    if lifetime is not None:
        command["e"] = lifetime
    return command


def tick(h: Harness, seconds: float) -> None:
    h.clock.now += seconds
    h.broker.advance(h.clock.now)


def watch(h: Harness, topic: str = "quotes") -> Peer:
    watcher = h.peer()
    watcher.send({"c": "subscribe", "t": topic, "sub_id": "w", "o": "oof"})
    return watcher


def expired(watcher: Peer) -> list[Any]:
    return [m["data"]["id"] for m in watcher.take() if m["c"] == "oof" and m["reason"] == "expired"]


@pytest.mark.parametrize(("first", "second", "expires_after"), [(12, 1, 1), (1, 12, 12), (12, 5.5, 5.5)])
def test_a_republish_expires_at_its_own_lifetime(first: float, second: float, expires_after: float) -> None:
    h = Harness(TOPICS)
    watcher, publisher = watch(h), h.peer()
    publisher.send(publish(1, first))
    tick(h, 0.5)
    publisher.send(publish(1, second))
    tick(h, expires_after - 0.01)
    assert expired(watcher) == [] and h.broker.topics["quotes"].records
    tick(h, 0.02)
    assert expired(watcher) == [1] and not h.broker.topics["quotes"].records


@pytest.mark.parametrize("topic", ["quotes", "timed"])
def test_a_republish_with_e_0_never_expires(topic: str) -> None:
    h = Harness(TOPICS)
    watcher, publisher = watch(h, topic), h.peer()
    publisher.send(publish(1, 12, topic))
    publisher.send(publish(1, 0, topic))
    tick(h, 13)
    tick(h, 3600)
    assert expired(watcher) == [] and len(h.broker.topics[topic].records) == 1


def test_a_shorter_lifetime_then_a_longer_one_keeps_the_longer() -> None:
    h = Harness(TOPICS)
    watcher, publisher = watch(h), h.peer()
    publisher.send(publish(1, 12), publish(1, 1), publish(1, 30))
    tick(h, 13)
    assert expired(watcher) == []
    tick(h, 17.01)
    assert expired(watcher) == [1]


def test_a_record_deleted_and_published_again_expires_once_at_its_new_lifetime() -> None:
    h = Harness(TOPICS)
    watcher, publisher = watch(h), h.peer()
    publisher.send(publish(1, 12))
    publisher.send({"c": "sow_delete", "t": "quotes", "data": {"id": 1}})
    publisher.send(publish(1, 2))
    watcher.take()
    tick(h, 2.01)
    assert expired(watcher) == [1]
    tick(h, 11)
    assert expired(watcher) == []


def test_lifetimes_shortened_again_and_again_do_not_grow_the_heap() -> None:
    h = Harness(TOPICS)
    publisher = h.peer()
    for lifetime in range(10_000, 0, -1):
        publisher.send(publish(lifetime % 3, lifetime))
    assert h.broker.timers.expiry_entries <= 200, "stale entries are swept"
    tick(h, 3.01)
    assert not h.broker.topics["quotes"].records
    tick(h, 10_000)
    assert h.broker.timers.expiry_entries == 0


def test_the_runtime_is_woken_for_the_earlier_expiry() -> None:
    """The runtime sleeps until ``next_due`` and looks at it again after every call into the core
    (runtime/pump.py): a lifetime made shorter moves it earlier at once, a longer one does not."""
    h = Harness(TOPICS)
    publisher = h.peer()
    dues = []
    for lifetime in (12, 1, 30):
        publisher.send(publish(1, lifetime))
        dues.append(h.broker.timers.next_due())
    assert dues == [h.clock.now + 12, h.clock.now + 1, h.clock.now + 1]
