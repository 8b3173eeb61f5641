"""A topic's ``conflation_merge`` and ``conflation_match`` in the socket queue (queue/conflation.py,
``QueuePolicy.merge`` and ``.match``): what each outcome comes to for a stateless subscriber and
for a delta subscriber, and what a failing one falls back to. The functions are the suite's own
(tests/core/queue/merge_functions.py), called as the engine would load them."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from server.core.filters.compiler import compile_filter
from server.core.filters.entitlement import Entitlement
from server.core.filters.functions import EvalContext
from server.core.queue.outbox import Outbox

from .fakes import FakeFeed, FakeReader, plain, policy, sent, tx_block
from .merge_functions import bad_matcher, broken, by_kind, reassign, same_kind, sum_count


def keyed_outbox() -> Outbox:
    return Outbox(max_bytes=1 << 20, max_messages=1000)


# -- conflation_merge: the merge, the older, the newer, or both ---------------------------------


@pytest.mark.parametrize(
    ("keep", "queued", "expected"),
    [
        ("merged", 1, ["p s a={count:3,keep:merged}"]),
        ("older", 1, ["p s a={count:1}"]),
        ("newer", 1, ["p s a={count:2,keep:newer}"]),
        ("both", 2, ["p s a={count:1}", "p s a={count:2,keep:both}"]),
    ],
)
def test_a_merger_decides_for_a_stateless_subscriber(keep: str, queued: int, expected: list[str]) -> None:
    feed, sub, outbox = FakeFeed(policy(merge=by_kind)), FakeReader("s", stateful=False), keyed_outbox()
    outbox.push_delivery(feed.full("a", {"count": 1}, sub))
    outbox.push_delivery(feed.full("a", {"count": 2, "keep": keep}, sub))
    assert outbox.queued_messages == queued
    assert sent(outbox) == expected
    assert feed.policy.counters["conflated"] == (0 if keep == "both" else 1)


@pytest.mark.parametrize(
    ("keep", "expected", "after"),
    [
        ("merged", ["p s a:{count:0}>{count:3,keep:merged}"], {"count": 3, "keep": "merged"}),
        ("older", ["p s a:{count:0}>{count:1}"], {"count": 1}),
        ("newer", ["p s a:{count:0}>{count:2,keep:newer}"], {"count": 2, "keep": "newer"}),
        (
            "both",
            ["p s a:{count:0}>{count:1}", "p s a:{count:1}>{count:2,keep:both}"],
            {"count": 2, "keep": "both"},
        ),
    ],
)
def test_a_merger_decides_for_a_delta_subscriber(keep: str, expected: list[str], after: Any) -> None:
    feed, sub, outbox = FakeFeed(policy(merge=by_kind)), FakeReader("s"), keyed_outbox()
    assert sub.held is not None
    sub.held["a"] = {"count": 0}
    outbox.push_delivery(feed.update("a", {"count": 1}, sub))
    outbox.push_delivery(feed.update("a", {"count": 2, "keep": keep}, sub))
    assert sent(outbox) == expected
    # The next delta is taken from what it is sent (the merge, or the older state kept).
    assert sub.held["a"] == after


def test_a_message_kept_apart_after_a_merged_one_starts_from_the_merge() -> None:
    feed, sub, outbox = FakeFeed(policy(merge=by_kind)), FakeReader("s"), keyed_outbox()
    assert sub.held is not None
    sub.held["a"] = {"count": 0}
    outbox.push_delivery(feed.update("a", {"count": 1}, sub))
    outbox.push_delivery(feed.update("a", {"count": 2, "keep": "merged"}, sub))
    # The client will hold the merge, not {count:2} (the state the fan-out made): what the
    # subscription holds is corrected when the merge is decided, so the fan-out takes the next
    # delta from the merge.
    assert sub.held["a"] == {"count": 3, "keep": "merged"}
    outbox.push_delivery(last := feed.update("a", {"count": 4, "keep": "both"}, sub))
    assert last.base == {"count": 3, "keep": "merged"}
    assert sent(outbox) == [
        "p s a:{count:0}>{count:3,keep:merged}",
        "p s a:{count:3,keep:merged}>{count:4,keep:both}",
    ]


@pytest.mark.parametrize("between", ["snapshot", "transaction"])
def test_a_later_message_starts_from_the_merge_even_past_a_snapshot_of_the_record(between: str) -> None:
    feed, sub, outbox = FakeFeed(policy(merge=by_kind)), FakeReader("s"), keyed_outbox()
    assert sub.held is not None
    sub.held["a"] = {"count": 0}
    outbox.push_delivery(feed.update("a", {"count": 1}, sub))
    outbox.push_delivery(feed.update("a", {"count": 2, "x": 1, "keep": "older"}, sub))
    if between == "snapshot":
        outbox.push_stream(iter([plain("sow")]), 1, 10, [("t", "a")])
        outbox.push_delivery(feed.update("a", {"count": 4, "x": 1}, sub))
    else:
        outbox.push_tx(tx_block(1, feed.update("a", {"count": 4, "x": 1}, sub)))
    # The client holds {count:1} (the older, kept): a delta from {count:2,x:1} would leave it
    # without x.
    assert [line for line in sent(outbox) if line.startswith("p")] == [
        "p s a:{count:0}>{count:1}",
        "p s a:{count:1}>{count:4,x:1}",
    ]


def test_a_merged_insert_is_sent_in_full() -> None:
    feed, sub, outbox = FakeFeed(policy(merge=sum_count)), FakeReader("s"), keyed_outbox()
    outbox.push_delivery(feed.insert("a", {"count": 1}, sub))
    outbox.push_delivery(feed.update("a", {"count": 2}, sub))
    assert sent(outbox) == ["p s a={count:3}"]


def test_an_oof_is_never_merged() -> None:
    calls: list[tuple[Any, Any]] = []

    def recording(older: Any, newer: Any) -> Any:
        calls.append((older, newer))
        return sum_count(older, newer)

    feed, sub, outbox = FakeFeed(policy(merge=recording)), FakeReader("s"), keyed_outbox()
    assert sub.held is not None
    sub.held["a"] = {"count": 0}
    outbox.push_delivery(feed.update("a", {"count": 1}, sub))
    outbox.push_delivery(feed.oof("a", {"count": 2}, sub))
    outbox.push_delivery(feed.insert("a", {"count": 4}, sub))
    assert calls == []
    assert sent(outbox) == ["p s a={count:4}"]


def test_merges_chain_over_every_message_queued() -> None:
    feed, sub, outbox = FakeFeed(policy(merge=sum_count)), FakeReader("s", stateful=False), keyed_outbox()
    for count in (1, 2, 3, 4):
        outbox.push_delivery(feed.full("a", {"count": count}, sub))
    assert sent(outbox) == ["p s a={count:10}"]


def test_a_failing_merger_keeps_the_newer_record(caplog: pytest.LogCaptureFixture) -> None:
    feed, sub, outbox = FakeFeed(policy(merge=broken)), FakeReader("s", stateful=False), keyed_outbox()
    outbox.push_delivery(feed.full("a", {"count": 1}, sub))
    with caplog.at_level(logging.ERROR, "server.conflation"):
        outbox.push_delivery(feed.full("a", {"count": 2}, sub))
    assert sent(outbox) == ["p s a={count:2}"]
    assert [r.getMessage() for r in caplog.records] == [
        "conflation_merge of topic record a failed; keeping the newer record"
    ]


def test_a_merged_record_a_reader_may_not_see_is_never_sent() -> None:
    acme = Entitlement("t", compile_filter("/customer = 'Acme'"), EvalContext(user="acme"))
    feed, outbox = FakeFeed(policy(merge=reassign)), keyed_outbox()
    everyone, restricted = FakeReader("s", stateful=False), FakeReader("r", stateful=False, entitlement=acme)
    outbox.push_delivery(feed.full("a", {"customer": "Acme", "qty": 1}, everyone, restricted))
    outbox.push_delivery(feed.full("a", {"customer": "Acme", "qty": 2}, everyone, restricted))
    assert sent(outbox) == ["p s a={customer:Nobody,qty:3}", "p r a={customer:Acme,qty:2}"]


def test_a_merger_that_keeps_the_older_leaves_it_in_its_place() -> None:
    feed, sub, outbox = (
        FakeFeed(policy(mode="append", merge=by_kind)),
        FakeReader("s", stateful=False),
        keyed_outbox(),
    )
    outbox.push_delivery(feed.full("a", {"count": 1}, sub))
    outbox.push_delivery(feed.full("b", {"count": 1}, sub))
    outbox.push_delivery(feed.full("a", {"count": 2, "keep": "older"}, sub))
    assert outbox.queued_messages == 2
    assert sent(outbox) == ["p s a={count:1}", "p s b={count:1}"]


def test_a_merged_record_moves_to_the_end_in_mode_append() -> None:
    feed, sub, outbox = (
        FakeFeed(policy(mode="append", merge=by_kind)),
        FakeReader("s", stateful=False),
        keyed_outbox(),
    )
    outbox.push_delivery(feed.full("a", {"count": 1}, sub))
    outbox.push_delivery(feed.full("b", {"count": 1}, sub))
    outbox.push_delivery(feed.full("a", {"count": 2, "keep": "older"}, sub))
    outbox.push_delivery(feed.full("a", {"count": 4}, sub))
    assert sent(outbox) == ["p s b={count:1}", "p s a={count:5}"]


# -- conflation_match: which queued message the new one conflates with ----------------------------


def trade(kind: str, n: int) -> dict[str, Any]:
    return {"kind": kind, "n": n}


def test_a_matcher_keeps_one_message_per_kind_and_never_goes_back_in_time() -> None:
    feed, sub, outbox = FakeFeed(policy(match=same_kind)), FakeReader("s", stateful=False), keyed_outbox()
    for n, kind in enumerate(["trade", "quote", "trade", "quote"], 1):
        outbox.push_delivery(feed.full("a", trade(kind, n), sub))
    assert outbox.queued_messages == 2
    # Each conflation goes after the other message: the last message is the newest state.
    assert sent(outbox) == ["p s a={kind:trade,n:3}", "p s a={kind:quote,n:4}"]


def test_a_matcher_with_deltas_rebases_the_message_after_the_one_it_took_out() -> None:
    feed, sub, outbox = FakeFeed(policy(match=same_kind)), FakeReader("s"), keyed_outbox()
    assert sub.held is not None
    sub.held["a"] = trade("trade", 0)
    for n, kind in enumerate(["trade", "quote", "trade"], 1):
        outbox.push_delivery(feed.update("a", trade(kind, n), sub))
    assert sent(outbox) == [
        "p s a:{kind:trade,n:0}>{kind:quote,n:2}",  # took over the first trade's base
        "p s a:{kind:quote,n:2}>{kind:trade,n:3}",
    ]


def test_a_matcher_is_asked_with_the_queued_records_oldest_first() -> None:
    calls: list[tuple[list[Any], Any]] = []

    def recording(queued: list[Any], new: Any) -> int | None:
        calls.append((list(queued), new))
        return None  # keep every message

    feed, sub, outbox = FakeFeed(policy(match=recording)), FakeReader("s", stateful=False), keyed_outbox()
    for n in (1, 2, 3):
        outbox.push_delivery(feed.full("a", n, sub))
    assert calls == [([1], 2), ([1, 2], 3)]
    assert sent(outbox) == ["p s a=1", "p s a=2", "p s a=3"]


def test_a_matcher_may_pick_by_negative_index_and_the_merger_then_decides() -> None:
    feed = FakeFeed(policy(match=lambda queued, new: -2 if len(queued) > 1 else None, merge=sum_count))
    sub, outbox = FakeReader("s", stateful=False), keyed_outbox()
    for count in (1, 2, 4):
        outbox.push_delivery(feed.full("a", {"count": count}, sub))
    # The third merged with the first (count 5), which went after the second.
    assert sent(outbox) == ["p s a={count:2}", "p s a={count:5}"]


def raising(queued: list[Any], new: Any) -> int | None:
    raise ValueError("this matcher always fails")


def returns_true(queued: list[Any], new: Any) -> Any:
    return True


@pytest.mark.parametrize(
    ("matcher", "logged"),
    [
        (bad_matcher, "returned 99, not an index of the queued messages or None; conflating with the newest"),
        (
            returns_true,
            "returned True, not an index of the queued messages or None; conflating with the newest",
        ),
        (raising, "failed; conflating with the newest"),
    ],
)
def test_a_failing_matcher_conflates_with_the_newest(
    matcher: Any, logged: str, caplog: pytest.LogCaptureFixture
) -> None:
    feed, sub, outbox = FakeFeed(policy(match=matcher)), FakeReader("s", stateful=False), keyed_outbox()
    outbox.push_delivery(feed.full("a", 1, sub))
    with caplog.at_level(logging.ERROR, "server.conflation"):
        outbox.push_delivery(feed.full("a", 2, sub))
    assert sent(outbox) == ["p s a=2"]
    assert [r.getMessage() for r in caplog.records] == [f"conflation_match of topic t {logged}"]


def test_keeping_both_identical_messages_for_one_subscription_sends_both() -> None:
    feed = FakeFeed(policy(merge=lambda older, newer: None))
    sub, outbox = FakeReader("s", stateful=False), keyed_outbox()
    outbox.push_delivery(feed.full("a", 1, sub))
    outbox.push_delivery(feed.full("a", 1, sub))  # the same bytes, kept apart
    assert sent(outbox) == ["p s a=1", "p s a=1"]
