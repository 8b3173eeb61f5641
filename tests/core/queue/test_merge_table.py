"""The merge table of socket-queue conflation (queue/conflation.py's docstring, docs/protocol.md, Conflation),
row by row, and where the merged message goes: no engine, a fake subscription (fakes.py).

A row: what the subscriber held before anything was queued, the messages queued for it about
record ``a`` (oldest first, the last being the new one), how many messages are then queued, what
it holds after, and what it is sent. Each row runs five ways, which must agree: an ``always``
topic (folded as pushed), a ``conflate`` topic (queued as it came, then relieved), each in mode
``replace`` and ``append``, and a ``conflate`` topic whose first message was in a transaction
(merged at a relief: the rest join the merged block, queue/tx_merge.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from server.core.queue.outbox import Outbox

from .fakes import FakeFeed, FakeReader, plain, policy, sent, tx_block

STATELESS = "stateless"  # held before: it holds nothing, ever (FULL messages)
NOTHING = None

# held before, messages queued, queued after, held after, sent
TABLE: list[tuple[Any, str, int, Any, list[str]]] = [
    # one message: nothing to merge, sent as the fan-out made it
    (NOTHING, "insert 1", 1, 1, ["p s a=1"]),
    (0, "update 1", 1, 1, ["p s a:0>1"]),
    (0, "oof 1", 1, NOTHING, ["oof s a=1"]),
    (STATELESS, "full 1", 1, STATELESS, ["p s a=1"]),
    # a queued message, then a new one
    (NOTHING, "insert 1, update 2", 1, 2, ["p s a=2"]),  # a new record is never a delta
    (NOTHING, "insert 1, oof 2", 1, NOTHING, ["oof s a=2"]),  # an OOF is never silenced
    (0, "update 1, update 2", 1, 2, ["p s a:0>2"]),  # from the first base to the last state
    (0, "update 1, oof 2", 1, NOTHING, ["oof s a=2"]),
    (0, "oof 1, insert 2", 1, 2, ["p s a=2"]),  # out then back in: the final state in full
    (STATELESS, "full 1, full 2", 1, STATELESS, ["p s a=2"]),  # the last record
    # longer runs come to the same
    (NOTHING, "insert 1, update 2, update 3", 1, 3, ["p s a=3"]),
    (NOTHING, "insert 1, oof 2, insert 3", 1, 3, ["p s a=3"]),
    (0, "update 1, update 2, update 3", 1, 3, ["p s a:0>3"]),
    (0, "oof 1, insert 2, update 3", 1, 3, ["p s a=3"]),
    (0, "update 1, oof 2, insert 3", 1, 3, ["p s a=3"]),
    (0, "oof 1, insert 2, oof 3", 1, NOTHING, ["oof s a=3"]),
    (0, "update 1, oof 2, insert 3, oof 4", 1, NOTHING, ["oof s a=4"]),
    (STATELESS, "full 1, full 2, full 3", 1, STATELESS, ["p s a=3"]),
]

# How the messages come to be merged: (the topic's policy, its mode, how).
WAYS = {
    "always": ("always", "replace", "as pushed"),
    "always-append": ("always", "append", "as pushed"),
    "conflate-relieved": ("conflate", "replace", "relieved"),
    "conflate-append-relieved": ("conflate", "append", "relieved"),
    "conflate-in-a-merged-block": ("conflate", "replace", "in a block"),
}


def queue_up(way: str, before: Any, steps: str) -> tuple[Outbox, FakeReader, FakeFeed]:
    conflation, mode, how = WAYS[way]
    feed = FakeFeed(policy(conflation, mode))
    sub = FakeReader("s", stateful=before is not STATELESS)
    if before not in (NOTHING, STATELESS):
        assert sub.held is not None
        sub.held["a"] = before  # sent (and written) before anything was queued
    outbox = Outbox(max_bytes=1 << 20, max_messages=1000)
    deliveries = [
        feed.change(kind, "a", int(value), sub) for kind, value in map(str.split, steps.split(", "))
    ]
    if how == "in a block":  # the first in a transaction, merged at a relief; the rest join it
        outbox.push_tx(tx_block(1, deliveries.pop(0)))
        outbox.relieve()
    for delivery in deliveries:
        assert outbox.push_delivery(delivery)
    if how == "relieved":
        assert outbox.queued_messages == len(deliveries), "not merged before a relief"
        assert outbox.relieve() == []
    return outbox, sub, feed


def changes(outbox: Outbox) -> list[str]:
    """What is sent, less a transaction's marks."""
    return [line for line in sent(outbox) if not line.startswith("tx_")]


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize(("before", "steps", "queued", "after", "expected"), TABLE)
def test_merge_table_row(
    way: str, before: Any, steps: str, queued: int, after: Any, expected: list[str]
) -> None:
    outbox, sub, _ = queue_up(way, before, steps)
    assert outbox.queued_messages == queued
    assert changes(outbox) == expected
    assert (STATELESS if sub.held is None else sub.held.get("a")) == after
    assert outbox.queued_messages == 0 and outbox.queued_bytes == 0 and not outbox


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize(("before", "steps"), [(before, steps) for before, steps, *_ in TABLE])
def test_each_merge_is_counted_once_for_the_topic(way: str, before: Any, steps: str) -> None:
    outbox, _, feed = queue_up(way, before, steps)
    counters = feed.policy.counters
    assert (counters["conflated"], counters["dropped"]) == (len(steps.split(", ")) - 1, 0)
    assert outbox.conflated == len(steps.split(", ")) - 1


# -- where the merged message goes ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("replace", ["p s a=2", "p s b=1", "x"]), ("append", ["p s b=1", "x", "p s a=2"])],
)
def test_a_change_joins_its_record_in_its_place_or_at_the_end(mode: str, expected: list[str]) -> None:
    feed, sub = FakeFeed(policy("always", mode)), FakeReader("s", stateful=False)
    outbox = Outbox(1 << 20, 1000)
    outbox.push_delivery(feed.full("a", 1, sub))
    outbox.push_delivery(feed.full("b", 1, sub))
    outbox.push(plain("x"))
    outbox.push_delivery(feed.full("a", 2, sub))
    assert outbox.queued_messages == 3
    assert sent(outbox) == expected


def test_a_subscription_new_to_the_record_starts_after_its_ack() -> None:
    feed = FakeFeed(policy("always"))
    s, t = FakeReader("s"), FakeReader("t")
    outbox = Outbox(1 << 20, 1000)
    outbox.push_delivery(feed.insert("a", 1, s))
    outbox.push(plain("ack"))  # t's subscribe ack
    outbox.push_delivery(feed.update("a", 2, s))
    outbox.push_delivery(feed.insert("a", 2, t))
    # s's change goes in the record's place; t's first message never passes its ack.
    assert sent(outbox) == ["p s a=2", "ack", "p t a=2"]


def test_a_snapshot_of_the_record_ends_what_a_later_change_may_join() -> None:
    feed, sub = FakeFeed(policy("always")), FakeReader("s")
    sub.held = {"a": 0}
    outbox = Outbox(1 << 20, 1000)
    outbox.push_delivery(feed.update("a", 1, sub))
    outbox.push_stream(iter([plain("sow")]), 1, 10, [("t", "a")])
    outbox.push_delivery(feed.update("a", 2, sub))
    outbox.push_stream(iter([plain("sow")]), 1, 10, [("t", "other")])  # not this record
    outbox.push_delivery(feed.update("a", 3, sub))
    assert outbox.queued_messages == 4
    assert sent(outbox) == ["p s a:0>1", "sow", "p s a:1>3", "sow"]


def test_subscriptions_sent_the_same_message_share_it_in_subscription_order() -> None:
    feed = FakeFeed(policy("always"))
    s, t, u = FakeReader("s"), FakeReader("t"), FakeReader("u")
    outbox = Outbox(1 << 20, 1000)
    outbox.push_delivery(feed.insert("a", 1, u, t, s))
    outbox.push_delivery(feed.update("a", 2, t, s, u))
    assert outbox.queued_messages == 1
    assert sent(outbox) == ["p s,t,u a=2"]


def test_subscriptions_whose_nets_differ_get_a_message_each_in_the_order_of_their_last_change() -> None:
    feed = FakeFeed(policy("always"))
    s, t = FakeReader("s"), FakeReader("t")
    outbox = Outbox(1 << 20, 1000)
    outbox.push_delivery(feed.insert("a", 1, s, t))
    outbox.push_delivery(feed.update("a", 2, s))  # t's filter: no change for it
    assert outbox.queued_messages == 2
    assert sent(outbox) == ["p t a=1", "p s a=2"]


def test_two_subscriptions_whose_nets_come_to_the_same_bytes_share_one_message() -> None:
    feed = FakeFeed(policy("always"))
    s, t = FakeReader("s"), FakeReader("t")
    outbox = Outbox(1 << 20, 1000)
    outbox.push_delivery(feed.insert("a", 1, s))
    outbox.push_delivery(feed.insert("a", 1, t))  # another subscription, its own delivery
    outbox.push_delivery(feed.update("a", 2, s))
    outbox.push_delivery(feed.update("a", 2, t))
    assert outbox.queued_messages == 2  # (an estimate: one per distinct newest delivery)
    assert sent(outbox) == ["p s,t a=2"]


def test_a_subscription_dropped_since_is_sent_nothing_more() -> None:
    feed = FakeFeed(policy("always"))
    s, t = FakeReader("s"), FakeReader("t")
    outbox = Outbox(1 << 20, 1000)
    outbox.push_delivery(feed.insert("a", 1, s, t))
    outbox.push_delivery(feed.update("a", 2, s, t))
    s.dropped = True
    assert sent(outbox) == ["p t a=2"]


def test_a_windows_merged_message_carries_the_last_position_and_an_oof_none() -> None:
    feed = FakeFeed(policy("always"))
    window = FakeReader("w", positions=True)
    window.held = {"a": 0, "b": 0}
    outbox = Outbox(1 << 20, 1000)
    outbox.push_delivery(feed.update("a", 1, window, pos=4))
    outbox.push_delivery(feed.update("a", 2, window, pos=7))
    outbox.push_delivery(feed.update("b", 1, window, pos=2))
    outbox.push_delivery(feed.oof("b", 2, window))
    assert sent(outbox) == ["p w a:0>2 @7", "oof w b=2"]


def test_windows_sent_the_same_oof_share_it() -> None:
    feed = FakeFeed(policy("always"))
    v, w = FakeReader("v", positions=True), FakeReader("w", positions=True)
    outbox = Outbox(1 << 20, 1000)
    for window in (w, v):  # each its own messages, in its own order
        outbox.push_delivery(feed.insert("a", 1, window, pos=0))
        outbox.push_delivery(feed.oof("a", 2, window))
    assert sent(outbox) == ["oof v,w a=2"]


def test_without_positions_the_subscriptions_own_head_is_used() -> None:
    feed = FakeFeed(policy("always"))
    plain_sub = FakeReader("s")
    outbox = Outbox(1 << 20, 1000)
    outbox.push_delivery(feed.insert("a", 1, plain_sub, pos=4))  # (a head it was not sent with)
    outbox.push_delivery(feed.update("a", 2, plain_sub, pos=7))
    assert sent(outbox) == ["p s a=2"]


def test_a_keyed_queue_holds_one_entry_per_record() -> None:
    feed, sub = FakeFeed(policy("always")), FakeReader("s", stateful=False)
    outbox = Outbox(1 << 20, 1000)
    for n in range(50):
        outbox.push_delivery(feed.full("ab"[n % 2], n, sub))
    assert outbox.queued_messages == 2
    assert sent(outbox) == ["p s a=48", "p s b=49"]


def test_a_snapshot_queued_before_a_relief_still_ends_the_records_it_sends() -> None:
    feed = FakeFeed(policy("conflate"))
    sub = FakeReader("s")
    sub.held = {"a": 0}
    outbox = Outbox(1 << 20, 1000)
    outbox.push_delivery(feed.update("a", 1, sub))
    outbox.push_stream(iter([plain("sow")]), 1, 10, [("t", "a")])
    outbox.push_delivery(feed.update("a", 2, sub))
    outbox.relieve()
    outbox.push_delivery(feed.update("a", 3, sub))
    assert outbox.queued_messages == 3
    assert sent(outbox) == ["p s a:0>1", "sow", "p s a:1>3"]
