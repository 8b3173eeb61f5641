"""Socket-queue conflation (docs/protocol.md, Conflation) with a topic's merger and matcher, and background
conflation of crowded queues."""

from __future__ import annotations

from typing import Any

import jsonpatch
import pytest

from ..harness import Harness
from .conflation_hub import TOPICS, deliveries, hub, publish, topic

# -- what a merger and a matcher may decide (Diffusion's conflation, completely) ----------------

OUTCOMES = [
    topic("m", "always", conflation_merge="tests.core.queue.merge_functions:by_kind"),
    topic("k", "always", conflation_match="tests.core.queue.merge_functions:same_kind"),
    topic("kd", "always", conflation_match="tests.core.queue.merge_functions:same_kind"),
    topic("bad", "always", conflation_match="tests.core.queue.merge_functions:bad_matcher"),
]


def outcomes_hub() -> Harness:
    return Harness(topics=OUTCOMES, server={"queue_max_messages": 1000})


@pytest.mark.parametrize(
    ("keep", "expected"),
    [
        ("merged", [("p", {"id": 1, "count": 3, "keep": "merged"})]),
        ("older", [("p", {"id": 1, "count": 1})]),
        ("newer", [("p", {"id": 1, "count": 2, "keep": "newer"})]),
        ("both", [("p", {"id": 1, "count": 1}), ("p", {"id": 1, "count": 2, "keep": "both"})]),
    ],
)
def test_a_merger_decides_merge_older_newer_or_both(keep: str, expected: list[Any]) -> None:
    h = outcomes_hub()
    publisher, peer = h.peer(), h.peer()
    peer.send({"c": "subscribe", "t": "m", "sub_id": "s", "o": "no_sowkey"})
    publisher.send(publish("m", 1, count=1), publish("m", 1, count=2, keep=keep))
    assert [(m["c"], m["data"]) for m in peer.take()] == expected


def test_keep_both_for_a_delta_subscriber_sends_both_changes() -> None:
    h = outcomes_hub()
    publisher, peer = h.peer(), h.peer()
    publisher.send(publish("m", 1, count=0, x=0))
    peer.send({"c": "sow_and_delta_subscribe", "t": "m", "sub_id": "s"})
    publisher.send(publish("m", 1, count=0, x=1), publish("m", 1, count=0, x=2, keep="both"))
    patches = [m["patch"] for m in peer.take() if m["c"] == "p"]
    assert patches == [
        [{"op": "replace", "path": "/x", "value": 1}],
        [{"op": "replace", "path": "/x", "value": 2}, {"op": "add", "path": "/keep", "value": "both"}],
    ]


def test_a_matcher_keeps_one_message_per_kind() -> None:
    h = outcomes_hub()
    publisher, peer = h.peer(), h.peer()
    peer.send({"c": "subscribe", "t": "k", "sub_id": "s"})
    publisher.send(
        publish("k", 1, kind="trade", n=1),
        publish("k", 1, kind="quote", n=2),
        publish("k", 1, kind="trade", n=3),
        publish("k", 1, kind="quote", n=4),
    )
    # The trade conflated with the newer trade: taken out, and the conflation goes after the
    # quote, so the record never goes back in time and the last message is the newest state.
    assert [(m["data"]["kind"], m["data"]["n"]) for m in deliveries(peer)] == [("trade", 3), ("quote", 4)]


def test_a_matcher_with_deltas_rebases_the_message_after_the_one_it_took_out() -> None:
    h = outcomes_hub()
    publisher, peer = h.peer(), h.peer()
    publisher.send(publish("kd", 1, kind="trade", n=0))
    peer.send({"c": "sow_and_delta_subscribe", "t": "kd", "sub_id": "s"})
    held: dict[str, Any] = {}
    for m in peer.take():
        if m["c"] == "sow":
            held = m["data"]
    publisher.send(
        publish("kd", 1, kind="quote", n=1),
        publish("kd", 1, kind="trade", n=2),
        publish("kd", 1, kind="quote", n=3),
        publish("kd", 1, kind="trade", n=4),
    )
    for m in deliveries(peer):
        held = jsonpatch.apply_patch(held, m["patch"]) if "patch" in m else m["data"]
    assert held == {"id": 1, "kind": "trade", "n": 4}


def test_a_matcher_that_answers_nonsense_conflates_with_the_newest_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = outcomes_hub()
    publisher, peer = h.peer(), h.peer()
    peer.send({"c": "subscribe", "t": "bad", "sub_id": "s"})
    publisher.send(publish("bad", 1, n=1), publish("bad", 1, n=2))
    assert [m["data"]["n"] for m in deliveries(peer)] == [2]
    assert "conflation_match of topic bad returned 99" in caplog.text


# -- background conflation --------------------------------------------------------------------


def test_background_conflation_conflates_a_crowded_queue_early_and_drops_nothing() -> None:
    h = hub(max_messages=100)
    publisher, stalled, fast = h.peer(), h.peer(), h.peer()
    stalled.send({"c": "subscribe", "t": "c", "sub_id": "c"}, {"c": "subscribe", "t": "u", "sub_id": "u"})
    fast.send({"c": "subscribe", "t": "c", "sub_id": "c"})
    publisher.send(*[publish("c", n % 3, u=n) for n in range(20)], publish("u", 1, u=0))
    assert not h.broker.crowded  # a fifth of the queue: nothing to do
    fast.take()
    publisher.send(*[publish("c", n % 3, u=n) for n in range(20, 30)])
    fast.take()
    assert list(h.broker.crowded) == [stalled.session]  # past a quarter; the fast one is not
    assert h.broker.conflate_crowded(lambda: False) is False
    assert stalled.session.outbox.queued_messages == 4  # three records and the unsubscribe topic's
    assert h.broker.background_conflations == 1
    publisher.send(*[publish("c", n % 3, u=n) for n in range(30, 300)])
    got = stalled.take()
    assert {m["data"]["id"]: m["data"]["u"] for m in got if m["t"] == "c"} == {0: 297, 1: 298, 2: 299}
    assert [m["sids"] for m in got if m["t"] == "u"] == [["u"]]  # not dropped: the queue never filled


def test_background_conflation_can_be_turned_off_and_skips_sessions_without_conflation() -> None:
    off = Harness(topics=TOPICS, server={"queue_max_messages": 100, "background_conflation": False})
    publisher, stalled = off.peer(), off.peer()
    stalled.send({"c": "subscribe", "t": "c", "sub_id": "c"})
    publisher.send(*[publish("c", n % 3, u=n) for n in range(50)])
    assert not off.broker.crowded
    h = hub(max_messages=100)
    publisher, stalled = h.peer(), h.peer()
    stalled.send({"c": "logon", "o": "conflation=off"}, {"c": "subscribe", "t": "c", "sub_id": "c"})
    publisher.send(*[publish("c", n % 3, u=n) for n in range(50)])
    assert not h.broker.crowded


@pytest.mark.parametrize("first", ["older", "merged"])
def test_a_message_kept_beside_a_merged_or_older_one_is_relative_to_what_that_one_sends(first: str) -> None:
    """A delta subscriber's second queued message (keep both) is computed by the fan-out against
    the newest state it delivered; when the first queued message was turned into the older state
    or a merge, the second must start from what the first sends, or the client's view ends wrong."""
    h = outcomes_hub()
    publisher, peer = h.peer(), h.peer()
    publisher.send(publish("m", 1, count=0, x=0))
    held: dict[str, Any] = {}
    for m in peer.send({"c": "sow_and_delta_subscribe", "t": "m", "sub_id": "s"}):
        if m["c"] == "sow":
            held = m["data"]
    publisher.send(
        publish("m", 1, count=1, x=1),
        publish("m", 1, count=2, x=2, **({"keep": "older"} if first == "older" else {})),
        publish("m", 1, count=3, x=3, keep="both"),
    )
    for m in deliveries(peer):
        held = jsonpatch.apply_patch(held, m["patch"]) if "patch" in m else m["data"]
    assert held == {"id": 1, "count": 3, "x": 3, "keep": "both"}


def test_keep_older_never_sends_an_older_state_after_a_newer_one() -> None:
    """Found in review: a message kept at its older state moved into the record's newest entry,
    behind the newer state queued there for another subscription of the same socket."""
    h = outcomes_hub()
    publisher, peer = h.peer(), h.peer()
    peer.send({"c": "subscribe", "t": "m", "sub_id": "t", "filter": "/n >= 2"})
    peer.send({"c": "subscribe", "t": "m", "sub_id": "s", "o": "oof"})
    publisher.send(publish("m", 1, n=1, count=0))
    publisher.send(publish("m", 2, n=0))  # record 1's entry is no longer the last one
    publisher.send(publish("m", 1, n=2, count=0, keep="older"))
    states = [m["data"]["n"] for m in peer.take() if m["c"] == "p" and m["data"]["id"] == 1]
    assert states == sorted(states) == [1, 2]
