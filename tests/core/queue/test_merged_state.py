"""What a client holds after a merge (queue/conflation.py's ``Net.sends``): when a topic's
``conflation_merge`` keeps the older record or sends a merged one, the client holds that, not the
newest state the fan-out made, and every later message about the record must start from it,
whatever is queued between. A snapshot or a transaction of the record cuts the queue's index
(``QueuedRecords.passed``), so no later change folds into a message before it; it must not cut
what the later change starts from.

Each test reads the queue as a client would (``client_copies``): a delta that does not start from
the client's copy of the record fails it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from server.core.filters.compiler import compile_filter
from server.core.filters.entitlement import Entitlement
from server.core.filters.functions import EvalContext
from server.core.queue.outbox import Outbox

from .fakes import FakeFeed, FakeReader, client_copies, plain, policy, sent, tx_block
from .merge_functions import by_kind

Between = Callable[[Outbox, FakeFeed, FakeReader], None]


def outbox(max_messages: int = 1000) -> Outbox:
    return Outbox(max_bytes=1 << 20, max_messages=max_messages)


def subscriber(feed: FakeFeed, record: dict[str, Any]) -> tuple[FakeReader, dict[str, dict[str, Any]]]:
    """A delta subscriber that holds ``record`` as ``a`` (its snapshot), and the client's copy."""
    sub = FakeReader("s")
    assert sub.held is not None
    sub.held["a"] = record
    return sub, {"s": {"a": record}}


def a_snapshot(queue: Outbox, feed: FakeFeed, sub: FakeReader) -> None:
    """A query's snapshot on the same socket that sends the record (another query: not ``s``)."""
    queue.push_stream(iter([plain("sow")]), 1, 10, [("t", "a")])


def a_transaction(queue: Outbox, feed: FakeFeed, sub: FakeReader) -> None:
    """A transaction that changes the record (its block is encoded when it is made)."""
    queue.push_tx(tx_block(1, feed.update("a", {"count": 3, "x": 1, "keep": "newer"}, sub)))


def a_snapshot_and_a_transaction(queue: Outbox, feed: FakeFeed, sub: FakeReader) -> None:
    a_snapshot(queue, feed, sub)
    a_transaction(queue, feed, sub)


BETWEEN: dict[str, Between] = {
    "snapshot": a_snapshot,
    "transaction": a_transaction,
    "snapshot-and-transaction": a_snapshot_and_a_transaction,
}


@pytest.mark.parametrize(
    ("keep", "holds"),
    [("older", {"count": 1}), ("merged", {"count": 3, "keep": "merged"}), ("newer", None)],
)
def test_what_a_subscription_holds_is_corrected_when_the_merge_is_decided(keep: str, holds: Any) -> None:
    feed = FakeFeed(policy(merge=by_kind))
    sub, _ = subscriber(feed, {"count": 0})
    queue = outbox()
    queue.push_delivery(feed.update("a", {"count": 1}, sub))
    queue.push_delivery(newest := feed.update("a", {"count": 2, "keep": keep}, sub))
    assert queue.sent == 0, "nothing written yet"
    assert sub.held is not None
    if holds is None:
        assert sub.held["a"] is newest.view, "the newer kept: what the fan-out made"
    else:
        assert sub.held["a"] == holds


@pytest.mark.parametrize("keyed", [False, True], ids=["as-queued", "after-a-relief"])
@pytest.mark.parametrize("between", BETWEEN)
def test_a_later_message_starts_from_the_older_kept_whatever_is_queued_between(
    between: str, keyed: bool
) -> None:
    feed = FakeFeed(policy(merge=by_kind))
    sub, copies = subscriber(feed, {"count": 0, "x": 0})
    queue = outbox()
    if keyed:
        queue.relieve()  # (nothing queued yet) every later transaction joins a merged block
    queue.push_delivery(feed.update("a", {"count": 1, "x": 0}, sub))
    queue.push_delivery(feed.update("a", {"count": 2, "x": 1, "keep": "older"}, sub))
    BETWEEN[between](queue, feed, sub)
    queue.push_delivery(feed.update("a", {"count": 4, "x": 1, "keep": "newer"}, sub))
    assert client_copies(queue, copies) == {"s": {"a": {"count": 4, "x": 1, "keep": "newer"}}}


@pytest.mark.parametrize("between", BETWEEN)
def test_a_relief_that_merges_queued_messages_rebases_the_one_after_a_snapshot_or_transaction(
    between: str,
) -> None:
    """A ``conflate`` topic's messages are queued as they come until a relief, which decides the
    merges then: the messages after them were computed from the states the merge replaced."""
    feed = FakeFeed(policy("conflate", merge=by_kind))
    sub, copies = subscriber(feed, {"count": 0, "x": 0})
    queue = outbox()
    queue.push_delivery(feed.update("a", {"count": 1, "x": 0}, sub))
    queue.push_delivery(feed.update("a", {"count": 2, "x": 1, "keep": "older"}, sub))
    BETWEEN[between](queue, feed, sub)
    queue.push_delivery(feed.update("a", {"count": 4, "x": 1, "keep": "newer"}, sub))
    assert sub.held is not None
    made = sub.held["a"]
    assert queue.relieve() == []
    assert queue.conflated
    assert sub.held["a"] is made, "the fan-out's newest state is still what the client will hold"
    assert client_copies(queue, copies) == {"s": {"a": {"count": 4, "x": 1, "keep": "newer"}}}


def test_a_relief_that_merges_queued_messages_rebases_one_kept_beside_them() -> None:
    feed = FakeFeed(policy("conflate", merge=by_kind))
    sub, copies = subscriber(feed, {"count": 0, "x": 0})
    queue = outbox()
    queue.push_delivery(feed.update("a", {"count": 1, "x": 0}, sub))
    queue.push_delivery(feed.update("a", {"count": 2, "x": 1, "keep": "merged"}, sub))
    queue.push_delivery(feed.update("a", {"count": 4, "x": 2, "keep": "both"}, sub))
    queue.relieve()
    assert client_copies(queue, copies) == {"s": {"a": {"count": 4, "x": 2, "keep": "both"}}}


@pytest.mark.parametrize("between", ["snapshot", "transaction"])
def test_a_message_that_did_not_fit_starts_from_what_the_relief_merged(between: str) -> None:
    """The message that did not fit was made before the relief decided the merge; it is pushed
    again after it, past the snapshot or transaction that cut the queue's index."""
    feed = FakeFeed(policy("conflate", merge=by_kind))
    sub, copies = subscriber(feed, {"count": 0, "x": 0})
    queue = outbox(max_messages=4)
    queue.push_delivery(feed.update("a", {"count": 1, "x": 0}, sub))
    queue.push_delivery(feed.update("a", {"count": 2, "x": 1, "keep": "older"}, sub))
    BETWEEN[between](queue, feed, sub)
    queue.push(plain("ack"))
    assert queue.queued_messages == 4, "full"
    late = feed.update("a", {"count": 4, "x": 1, "keep": "newer"}, sub)
    assert queue.push_delivery(late) == 0
    queue.relieve()
    assert queue.push_delivery(late)
    assert client_copies(queue, copies) == {"s": {"a": {"count": 4, "x": 1, "keep": "newer"}}}


def test_a_queued_message_that_joins_merged_transactions_starts_from_what_they_send() -> None:
    """A relief merges a transaction's block, whose messages the older kept merges in it, with
    the record's message queued after it: that message moves into the merged block, kept apart
    (keep both), and starts from what the block sends."""
    feed = FakeFeed(policy(merge=by_kind))
    sub, copies = subscriber(feed, {"count": 0, "x": 0})
    queue = outbox()
    queue.push_tx(
        tx_block(
            1,
            feed.update("a", {"count": 1, "x": 0}, sub),
            feed.update("a", {"count": 2, "x": 1, "keep": "older"}, sub),
        )
    )
    queue.push_delivery(feed.update("a", {"count": 4, "x": 1, "keep": "both"}, sub))
    queue.relieve()
    assert client_copies(queue, copies) == {"s": {"a": {"count": 4, "x": 1, "keep": "both"}}}


def test_a_later_message_of_the_same_transaction_starts_from_what_the_merge_sends() -> None:
    """A transaction's messages fold into the merged block one by one: the fan-out made the
    second before the merge of the first was decided."""
    feed = FakeFeed(policy(merge=by_kind))
    sub, copies = subscriber(feed, {"count": 0, "x": 0})
    queue = outbox()
    queue.relieve()  # keyed: transactions merge
    queue.push_tx(tx_block(1, feed.update("a", {"count": 1, "x": 0}, sub)))
    older = feed.update("a", {"count": 2, "x": 1, "keep": "older"}, sub)
    both = feed.update("a", {"count": 4, "x": 1, "keep": "both"}, sub)
    queue.push_tx(tx_block(2, older, both))
    assert client_copies(queue, copies) == {"s": {"a": {"count": 4, "x": 1, "keep": "both"}}}


@pytest.mark.parametrize("then", ["queued", "after"])
def test_a_relief_that_merges_a_replaced_subscriptions_messages_corrects_what_its_successor_holds(
    then: str,
) -> None:
    """``replace`` hands the new subscription a copy of what the old one holds (its ``sub_id``
    too); a relief then merges the old one's queued messages: the client holds what they send."""
    feed = FakeFeed(policy("conflate", merge=by_kind))
    old, copies = subscriber(feed, {"count": 0, "x": 0})
    queue = outbox()
    queue.push_delivery(feed.update("a", {"count": 1, "x": 0}, old))
    queue.push_delivery(feed.update("a", {"count": 2, "x": 1, "keep": "older"}, old))
    new = old.replaced_by()
    if then == "queued":
        queue.push_delivery(feed.update("a", {"count": 4, "x": 1, "keep": "newer"}, new))
    queue.relieve()
    if then == "after":
        assert new.held is not None and new.held["a"] == {"count": 1, "x": 0}
        queue.push_delivery(feed.update("a", {"count": 4, "x": 1, "keep": "newer"}, new))
    assert client_copies(queue, copies) == {"s": {"a": {"count": 4, "x": 1, "keep": "newer"}}}


def test_each_subscription_holds_what_it_is_sent() -> None:
    """Two subscriptions of one socket, one message for both, and a merged record one of them
    may not see (it is sent the newer instead): each holds its own outcome, and the fan-out
    then makes each its own delta."""
    no_three = Entitlement("t", compile_filter("/count <> 3"), EvalContext(user="u"))
    feed = FakeFeed(policy(merge=by_kind))
    s, t = FakeReader("s"), FakeReader("t", entitlement=no_three)
    start = {"count": 0, "x": 0}
    for sub in (s, t):
        assert sub.held is not None
        sub.held["a"] = start
    queue = outbox()
    queue.push_delivery(feed.update("a", {"count": 1, "x": 0}, s, t))
    queue.push_delivery(feed.update("a", {"count": 2, "x": 1, "keep": "merged"}, s, t))
    a_snapshot(queue, feed, s)
    assert s.held is not None and t.held is not None
    assert s.held["a"] == {"count": 3, "x": 1, "keep": "merged"}, "the merge"
    assert t.held["a"] == {"count": 2, "x": 1, "keep": "merged"}, "the newer: it may not see the merge"
    queue.push_delivery(feed.update("a", {"count": 5, "x": 2, "keep": "newer"}, s))
    queue.push_delivery(feed.update("a", {"count": 5, "x": 2, "keep": "newer"}, t))
    final = {"a": {"count": 5, "x": 2, "keep": "newer"}}
    assert client_copies(queue, {"s": {"a": start}, "t": {"a": start}}) == {"s": final, "t": final}


def test_a_replaced_subscription_and_its_successor_are_never_named_twice_in_one_message() -> None:
    """Found by the engine model: the old subscription's queued message and its successor's, with
    the same body, were rendered as one message naming ``s`` twice. They are one sid: two
    messages, each naming it once."""
    feed = FakeFeed(policy("always"))
    old = FakeReader("s", stateful=False)
    queue = outbox()
    queue.push_delivery(feed.full("a", 1, old))
    new = old.replaced_by()
    queue.push_delivery(feed.full("a", 1, new))
    queue.relieve()
    assert sent(queue) == ["p s a=1", "p s a=1"]
