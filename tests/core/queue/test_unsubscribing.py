"""The ``unsubscribe`` policy at a full queue's relief (queue/unsubscribing.py, docs/protocol.md, Conflation):
which subscriptions go, what is counted as dropped, and what is left of the transactions queued."""

from __future__ import annotations

from server.core.queue.outbox import Outbox
from server.core.queue.tx_merge import TxMerge
from server.core.queue.unsubscribing import dropped_by_relief

from .fakes import FakeFeed, FakeReader, frames, plain, policy, sent, tx_block


def test_every_subscription_with_a_message_of_an_unsubscribe_topic_goes_in_the_order_found() -> None:
    unsub, kept = FakeFeed(policy("unsubscribe", name="u")), FakeFeed(policy("conflate", name="c"))
    s, t, u, v, w, x, y = (FakeReader(name, stateful=False) for name in "stuvwxy")
    merged = TxMerge()
    merged.take(tx_block(3, unsub.full("a", 1, y)))
    entries: list[object] = [
        plain("ack"),
        unsub.full("a", 1, t, s),
        kept.full("a", 1, u),
        unsub.run(v, ("a", 1), ("b", 1)),
        tx_block(1, unsub.full("a", 1, w), kept.full("a", 1, x)),
        unsub.full("b", 1, s),
        merged,
    ]
    assert list(dropped_by_relief(entries)) == [t, s, v, w, y]
    # Those inside transactions are counted here; the others as the relief drops them.
    assert unsub.policy.counters["dropped"] == 2
    assert kept.policy.counters["dropped"] == 0


def test_a_relief_drops_their_messages_and_counts_each() -> None:
    unsub, kept = FakeFeed(policy("unsubscribe", name="u")), FakeFeed(policy("conflate", name="c"))
    s, t = FakeReader("s", stateful=False), FakeReader("t", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=100)
    outbox.push_delivery(unsub.full("a", 1, s))
    outbox.push(plain("ack"))
    outbox.push_run(unsub.run(s, ("b", 1), ("c", 1)))
    outbox.push_delivery(kept.full("a", 1, t))
    outbox.push_delivery(unsub.full("a", 2, s))
    assert outbox.relieve() == [s]
    assert unsub.policy.counters["dropped"] == 4
    assert outbox.queued_messages == 2
    assert sent(outbox) == ["ack", "p t a=1"]


def test_a_transaction_keeps_none_of_a_dropped_subscriptions_messages() -> None:
    unsub, kept = FakeFeed(policy("unsubscribe", name="u")), FakeFeed(policy("conflate", name="c"))
    s, t = FakeReader("s"), FakeReader("t", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=100)
    outbox.push_delivery(unsub.insert("a", 1, s))
    outbox.push_tx(tx_block(1, unsub.update("a", 2, s), kept.full("a", 1, t)))
    outbox.push_tx(tx_block(2, unsub.update("a", 3, s)))  # nothing left of it
    assert outbox.relieve() == [s]
    # The delta of the block would follow a dropped insert: it goes with it.
    assert frames(outbox) == [["tx_begin 1", "p t a=1", "tx_end 1"]]
    assert unsub.policy.counters["dropped"] == 3


def test_a_relief_that_only_conflates_drops_nobody() -> None:
    unsub = FakeFeed(policy("unsubscribe", name="u"))
    s = FakeReader("s", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=100)
    outbox.push_delivery(unsub.full("a", 1, s))
    outbox.push_delivery(unsub.full("a", 2, s))
    outbox.push_tx(tx_block(1, unsub.full("a", 3, s)))
    assert outbox.relieve(drop=False) == []
    assert unsub.policy.counters["dropped"] == 0
    # An unsubscribe topic is not merged either: each message as it came, the block whole.
    assert sent(outbox) == ["p s a=1", "p s a=2", "tx_begin 1", "p s a=3", "tx_end 1"]


def test_a_subscription_dropped_with_a_message_for_several_leaves_the_others_theirs() -> None:
    unsub = FakeFeed(policy("unsubscribe", name="u"))
    s, t = FakeReader("s", stateful=False), FakeReader("t", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=100)
    outbox.push_tx(tx_block(1, unsub.full("a", 1, s, t)))
    t.dropped = True  # dropped since, by another topic's relief
    outbox.relieve(drop=False)
    assert sent(outbox) == ["tx_begin 1", "p s a=1", "tx_end 1"]
