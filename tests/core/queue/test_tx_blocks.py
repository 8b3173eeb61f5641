"""Transactions in the socket queue (docs/protocol.md, Transactions): a ``TxBlock`` is queued and
written whole; ``without`` leaves out dropped subscriptions; a relief merges consecutive blocks, and
what is queued between and after them, into one ``TxMerge`` (queue/tx_merge.py's table)."""

from __future__ import annotations

from server.core.queue.delivery import Delivery, RunBatch
from server.core.queue.outbox import Outbox
from server.core.queue.tx_merge import TxMerge

from .fakes import FakeFeed, FakeReader, frames, plain, policy, said, sent, tx_block

# -- a block, whole --------------------------------------------------------------------------------


def test_a_block_holds_its_messages_between_its_marks() -> None:
    feed, sub = FakeFeed(policy("conflate")), FakeReader("s", stateful=False)
    block = tx_block(7, feed.full("a", 1, sub), feed.run(sub, ("b", 1), ("c", 1)), feed.full("a", 2, sub))
    assert said(block.render()) == ["tx_begin 7", "p s a=1", "p s b=1", "p s c=1", "p s a=2", "tx_end 7"]
    assert block.records == [("t", "a"), ("t", "b"), ("t", "c"), ("t", "a")]
    assert block.count == 6, "its messages and its two marks"
    assert block.size == sum(len(part) + 1 for part in block.render())
    assert (block.counted, block.counted_size) == (block.count, block.size)


def test_a_block_counts_at_most_half_of_each_bound_and_is_refused_when_that_does_not_fit() -> None:
    feed, sub = FakeFeed(policy("off")), FakeReader("s", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=4)
    big = tx_block(1, *(feed.full(key, 1, sub) for key in "abcdef"))
    assert outbox.push_tx(big) == 2, "bigger than the whole queue, still possible"
    assert (big.counted, big.counted_size) == (2, big.size)
    outbox.push(plain("ack"))
    assert outbox.push_tx(tx_block(2, feed.full("g", 1, sub))) == 0, "3 counted, 3 queued: no room"
    assert outbox.queued_messages == 3
    small = Outbox(max_bytes=big.size, max_messages=100)
    small.push_tx(big)
    assert big.counted_size == big.size // 2


def test_a_block_is_one_frame_of_its_own_whatever_the_frame_size() -> None:
    feed, sub = FakeFeed(policy("off")), FakeReader("s", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=100)
    outbox.push(plain("ack"))
    outbox.push_tx(tx_block(1, *(feed.full(key, 1, sub) for key in "abc")))
    outbox.push(plain("after"))
    assert frames(outbox, max_frame_bytes=50) == [
        ["ack"],
        ["tx_begin 1", "p s a=1", "p s b=1", "p s c=1", "tx_end 1"],
        ["after"],
    ]
    assert (outbox.queued_messages, outbox.queued_bytes) == (0, 0)


# -- without: a block less the messages of dropped subscriptions ---------------------------------------


def test_without_keeps_a_block_whole_when_nobody_went() -> None:
    feed, s, t = FakeFeed(policy("off")), FakeReader("s", stateful=False), FakeReader("t", stateful=False)
    held: list[Delivery | RunBatch] = [feed.full("a", 1, s, t), feed.run(t, ("b", 1))]
    block = tx_block(1, *held)
    kept = block.without()
    assert kept is not None and kept.held == held
    assert kept.render() == block.render()


def test_without_leaves_out_gone_and_dropped_subscriptions() -> None:
    feed = FakeFeed(policy("off"))
    s, t, u = (FakeReader(name, stateful=False) for name in "stu")
    block = tx_block(
        1, feed.full("a", 1, s, t, u), feed.run(t, ("b", 1)), feed.full("c", 1, u), feed.full("d", 1, t)
    )
    u.dropped = True  # dropped since the block was made
    kept = block.without(gone=[t])  # being dropped
    assert kept is not None
    assert said(kept.render()) == ["tx_begin 1", "p s a=1", "tx_end 1"]
    assert kept.records == [("t", "a")] and kept.count == 3
    [only] = kept.held
    assert isinstance(only, Delivery) and only.subs == (s,)
    assert said(block.render())[1] == "p s,t,u a=1", "the block itself is not changed"


def test_without_everyone_nothing_is_left() -> None:
    feed, s = FakeFeed(policy("off")), FakeReader("s", stateful=False)
    assert tx_block(1, feed.full("a", 1, s), feed.run(s, ("b", 1))).without(gone=[s]) is None


# -- merged blocks ---------------------------------------------------------------------------------


def test_a_relief_merges_consecutive_blocks_and_what_is_queued_between_them() -> None:
    feed, sub = FakeFeed(policy("conflate")), FakeReader("s", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=100)
    outbox.push_tx(tx_block(1, feed.full("a", 1, sub), feed.full("b", 1, sub)))
    outbox.push_delivery(feed.full("a", 2, sub))
    outbox.push_tx(tx_block(2, feed.full("b", 2, sub), feed.full("c", 1, sub)))
    outbox.push_delivery(feed.full("c", 2, sub))
    assert outbox.queued_messages == 10
    outbox.relieve()
    assert outbox.queued_messages == 3, "its messages about records; the marks are framing"
    assert frames(outbox) == [["tx_begin 2", "p s a=2", "p s b=2", "p s c=2", "tx_end 2"]]


def test_an_ack_between_blocks_ends_the_merged_block() -> None:
    feed, sub = FakeFeed(policy("conflate")), FakeReader("s", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=100)
    outbox.push_tx(tx_block(1, feed.full("a", 1, sub)))
    outbox.push(plain("ack"))
    outbox.push_tx(tx_block(2, feed.full("a", 2, sub)))
    outbox.relieve()
    assert frames(outbox) == [
        ["tx_begin 1", "p s a=1", "tx_end 1", "ack", "tx_begin 2", "p s a=2", "tx_end 2"]
    ]


def test_in_a_merged_block_an_off_topics_messages_stay_as_they_came_after_it() -> None:
    conflated, off = FakeFeed(policy("conflate")), FakeFeed(policy("off", name="o"))
    sub = FakeReader("s", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=100)
    outbox.push_tx(tx_block(1, conflated.full("a", 1, sub), off.full("x", 1, sub)))
    outbox.push_tx(tx_block(2, off.full("x", 2, sub), conflated.full("a", 2, sub)))
    outbox.relieve()
    assert sent(outbox) == ["tx_begin 2", "p s a=2", "p s x=1", "p s x=2", "tx_end 2"]


def test_a_keyed_queue_folds_later_changes_and_blocks_into_the_open_merged_block() -> None:
    feed, sub = FakeFeed(policy("conflate")), FakeReader("s", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=100)
    outbox.push_tx(tx_block(1, feed.full("a", 1, sub)))
    outbox.relieve()
    assert outbox.push_delivery(feed.full("a", 2, sub)) == 1
    assert outbox.push_tx(tx_block(2, feed.full("b", 1, sub))) == 2
    assert outbox.push_delivery(feed.full("b", 2, sub)) == 2
    outbox.push(plain("ack"))  # ends it
    outbox.push_delivery(feed.full("a", 3, sub))
    assert frames(outbox) == [["tx_begin 2", "p s a=2", "p s b=2", "tx_end 2", "ack", "p s a=3"]]


def test_without_conflation_a_relief_leaves_blocks_apart() -> None:
    feed, sub = FakeFeed(policy("conflate")), FakeReader("s", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=100)
    outbox.conflation = False
    outbox.push_tx(tx_block(1, feed.full("a", 1, sub)))
    outbox.push_tx(tx_block(2, feed.full("a", 2, sub)))
    outbox.relieve()
    assert sent(outbox) == ["tx_begin 1", "p s a=1", "tx_end 1", "tx_begin 2", "p s a=2", "tx_end 2"]


def test_a_squeezed_block_merges_when_each_message_that_needs_room_finds_it() -> None:
    feed, sub = FakeFeed(policy("conflate")), FakeReader("s", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=6)
    outbox.push_tx(tx_block(1, feed.full("a", 1, sub), feed.full("b", 1, sub)))
    outbox.relieve()
    outbox.push_delivery(feed.full("c", 1, sub))
    assert outbox.push_delivery(feed.full("d", 1, sub)) == 4
    block = tx_block(
        2, feed.full("a", 2, sub), feed.full("b", 2, sub), feed.full("c", 2, sub), feed.full("e", 1, sub)
    )
    assert outbox.push_tx(block) == 0, "4 + 3 > 6"
    assert block.counted == 3, "half the bound"
    assert outbox.push_tx(block, squeeze=True) == 5, "a, b, c fold in; e needs one message more"
    refused = tx_block(3, feed.full("f", 1, sub), feed.full("g", 1, sub))
    assert outbox.push_tx(refused, squeeze=True) == 0, "f finds the last room, g none"


def test_a_merged_block_counts_no_more_than_its_parts_did() -> None:
    feed, s, t = (
        FakeFeed(policy("conflate")),
        FakeReader("s", stateful=False),
        FakeReader("t", stateful=False),
    )
    merge = TxMerge()
    assert merge.take(tx_block(1, feed.full("a", 1, s))) == 0
    assert (merge.count, merge.counted) == (1, 1)
    assert merge.take(feed.full("a", 2, s)) == 1, "one message conflated"
    assert merge.take(feed.full("a", 2, t)) == 0
    assert (merge.count, merge.counted, merge.allowance) == (2, 2, 5)
    assert said(merge.render()) == ["tx_begin 1", "p s,t a=2", "tx_end 1"]


def test_a_merged_block_without_dropped_subscriptions() -> None:
    conflated, off = FakeFeed(policy("conflate")), FakeFeed(policy("off", name="o"))
    s, t = FakeReader("s", stateful=False), FakeReader("t", stateful=False)
    merge = TxMerge()
    merge.take(tx_block(1, off.full("x", 1, s, t), off.full("y", 1, t), conflated.full("a", 1, s)))
    kept = merge.without(gone=[t])
    assert kept is merge and merge.count == 2
    assert said(merge.render()) == ["tx_begin 1", "p s x=1", "p s a=1", "tx_end 1"]
    s.dropped = True
    assert merge.render() == [], "nothing left for anyone"
    only_off = TxMerge()
    only_off.take(tx_block(2, off.full("x", 2, t)))
    assert only_off.without(gone=[t]) is None
