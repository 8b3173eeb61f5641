"""Subscription conflation (``conflation=250ms``) with a fake clock: one delivery per key per interval."""

from __future__ import annotations

from typing import Any

import jsonpatch

from server.core.records.merge import merge_record

from ..harness import Harness, Peer, publish


def tick(h: Harness, seconds: float) -> None:
    h.clock.now += seconds
    h.broker.advance(h.clock.now)


def live(peer: Peer) -> list[dict[str, Any]]:
    return [m for m in peer.take() if m["c"] in ("p", "oof")]


def holding(publisher: Peer, watcher: Peer, filter_text: str | None = None) -> None:
    """Order 1 (qty 50) delivered to a conflated OOF subscription, which now holds it."""
    publisher.send(publish(1, qty=50))
    subscribe = {"c": "sow_and_subscribe", "t": "orders", "sub_id": "s", "o": "oof,conflation=100ms"}
    if filter_text is not None:
        subscribe["filter"] = filter_text
    watcher.send(subscribe)
    watcher.take()


def test_updates_within_an_interval_become_one_with_the_final_state() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "s", "o": "conflation=250ms"})
    publisher.send(*[publish(1, qty=q) for q in range(5)], publish(2, qty=9))
    assert live(watcher) == []
    tick(h, 0.2)
    assert live(watcher) == [], "the interval has not ended"
    tick(h, 0.06)
    assert sorted((m["data"]["order"], m["data"]["qty"]) for m in live(watcher)) == [(1, 4), (2, 9)]
    publisher.send(publish(1, qty=10))
    tick(h, 0.25)
    assert [m["data"]["qty"] for m in live(watcher)] == [10], "a new interval starts with the next change"


def test_the_snapshot_is_never_conflated() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    publisher.send(publish(1, qty=1), publish(2, qty=2))
    out = watcher.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "s", "o": "conflation=1s"})
    assert len([m for m in out if m["c"] == "sow"]) == 2


def test_patch_deltas_compose_against_what_was_delivered() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    publisher.send(publish(1, qty=1, px=1.0, side="B"))
    held = next(
        m
        for m in watcher.send(
            {"c": "sow_and_delta_subscribe", "t": "orders", "sub_id": "s", "o": "conflation=100ms"}
        )
        if m["c"] == "sow"
    )["data"]
    publisher.send(publish(1, qty=2, px=1.0, side="B"), publish(1, qty=3, px=2.0, side="B"))
    tick(h, 0.1)
    [message] = live(watcher)
    assert jsonpatch.apply_patch(held, message["patch"]) == {"order": 1, "qty": 3, "px": 2.0, "side": "B"}


def test_merge_deltas_carry_every_field_any_delta_carried() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    publisher.send(publish(1, qty=1, px=1.0, side="B"))
    held = next(
        m
        for m in watcher.send(
            {
                "c": "sow_and_delta_subscribe",
                "t": "orders",
                "sub_id": "s",
                "o": "conflation=100ms,delta=merge",
            }
        )
        if m["c"] == "sow"
    )["data"]
    publisher.send(
        {"c": "delta_publish", "t": "orders", "data": {"order": 1, "qty": 5}},
        {"c": "delta_publish", "t": "orders", "data": {"order": 1, "qty": 1, "side": "S"}},
    )
    tick(h, 0.1)
    [message] = live(watcher)
    assert message["delta"] == {"order": 1, "qty": 1, "side": "S"}, (
        "qty came back to 1 but a delta carried it"
    )
    assert merge_record(held, message["delta"]) == {"order": 1, "qty": 1, "px": 1.0, "side": "S"}


def test_in_then_out_gives_the_oof_with_the_previously_delivered_state() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    holding(publisher, watcher, filter_text="/qty > 10")
    publisher.send(publish(1, qty=60), publish(1, qty=5))
    tick(h, 0.1)
    assert [(m["c"], m["reason"], m["data"]) for m in live(watcher)] == [
        ("oof", "match", {"order": 1, "qty": 50})
    ]


def test_out_then_in_gives_the_final_state_and_no_oof() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    holding(publisher, watcher, filter_text="/qty > 10")
    publisher.send(publish(1, qty=5), publish(1, qty=70))
    tick(h, 0.1)
    assert [(m["c"], m["data"]) for m in live(watcher)] == [("p", {"order": 1, "qty": 70})]


def test_a_delete_within_the_interval_is_a_deleted_oof() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    holding(publisher, watcher)
    publisher.send(publish(1, qty=51), {"c": "sow_delete", "t": "orders", "filter": "/order = 1"})
    tick(h, 0.1)
    assert [(m["c"], m["reason"], m["data"]) for m in live(watcher)] == [
        ("oof", "deleted", {"order": 1, "qty": 50})
    ]


def test_conflation_key_groups_records() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    watcher.send(
        {"c": "subscribe", "t": "orders", "sub_id": "s", "o": "conflation=100ms,conflation_key=[/sym]"}
    )
    publisher.send(publish(1, sym="A", qty=1), publish(2, sym="A", qty=2), publish(3, sym="B", qty=3))
    tick(h, 0.1)
    assert sorted((m["data"]["sym"], m["data"]["order"]) for m in live(watcher)) == [("A", 2), ("B", 3)]


def test_plain_topics_conflate_too() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    watcher.send(
        {"c": "subscribe", "t": "ticks", "sub_id": "s", "o": "conflation=100ms,conflation_key=[/sym]"}
    )
    publisher.send(*[{"c": "publish", "t": "ticks", "data": {"sym": "A", "px": px}} for px in range(5)])
    tick(h, 0.1)
    assert [m["data"] for m in live(watcher)] == [{"sym": "A", "px": 4}]


def test_an_unsubscribed_subscription_delivers_nothing_more() -> None:
    h = Harness()
    publisher, watcher = h.peer(), h.peer()
    watcher.send({"c": "subscribe", "t": "orders", "sub_id": "s", "o": "conflation=100ms"})
    publisher.send(publish(1, qty=1))
    watcher.send({"c": "unsubscribe", "sub_id": "s"})
    tick(h, 0.2)
    assert live(watcher) == []
    assert h.broker.timers.next_due() is None
