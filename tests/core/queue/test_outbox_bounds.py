"""The bounded socket queue (queue/outbox.py) with deliveries: its bounds in messages and bytes,
what a push returns, what a relief conflates and in which order it leaves the queue, a snapshot
stream counted against the bounds, runs, and close. (Plain messages alone: test_outbox.py.)"""

from __future__ import annotations

import orjson
import pytest

from server.core.queue.outbox import Outbox

from .fakes import FakeFeed, FakeReader, frames, plain, policy, sent, tx_block


def stream(n: int) -> list[bytes]:
    return [orjson.dumps({"c": "sow", "n": i}) for i in range(n)]


# -- bounds --------------------------------------------------------------------------------------


def test_a_delivery_that_does_not_fit_is_refused_and_nothing_changes() -> None:
    feed, sub = FakeFeed(policy("off")), FakeReader("s", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=2)
    assert outbox.push_delivery(feed.full("a", 1, sub)) == 1
    assert outbox.push_delivery(feed.full("a", 2, sub)) == 2
    assert outbox.push_delivery(feed.full("a", 3, sub)) == 0, "over the message bound"
    assert outbox.push(plain("unsubscribed"), force=True) == 3, "what the server must say goes over"
    assert outbox.queued_messages == 3
    assert sent(outbox) == ["p s a=1", "p s a=2", "unsubscribed"]


def test_the_byte_bound_counts_each_message_with_its_separator() -> None:
    feed, sub = FakeFeed(policy("off")), FakeReader("s", stateful=False)
    first, second = feed.full("a", 1, sub), feed.full("a", 2, sub)
    assert first.size == len(first.head) + len(first.body) + 2
    outbox = Outbox(max_bytes=first.size + second.size - 1, max_messages=10)
    assert outbox.push_delivery(first) == 1
    assert outbox.push_delivery(second) == 0, "one byte short"
    assert outbox.queued_bytes == first.size
    outbox = Outbox(max_bytes=first.size + second.size, max_messages=10)
    assert outbox.push_delivery(first) == 1
    assert outbox.push_delivery(second) == 2
    assert outbox.queued_bytes == first.size + second.size


def test_a_change_that_folds_into_a_queued_message_needs_no_room() -> None:
    feed, sub = FakeFeed(policy("always")), FakeReader("s", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=1)
    assert outbox.push_delivery(feed.full("a", 1, sub)) == 1
    assert outbox.push_delivery(newest := feed.full("a", 22, sub)) == 1, "folded: still one message"
    assert outbox.queued_bytes == newest.size, "a merged entry counts its newest message"
    assert outbox.push_delivery(feed.full("b", 1, sub)) == 0, "another record needs a message more"
    assert sent(outbox) == ["p s a=22"]


def test_a_relief_conflates_a_full_queue_and_keeps_it_keyed_until_it_drains() -> None:
    feed, sub = FakeFeed(policy("conflate")), FakeReader("s", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=3)
    assert [outbox.push_delivery(feed.full(key, n, sub)) for key, n in [("a", 1), ("a", 2), ("b", 1)]] == [
        1,
        2,
        3,
    ]
    assert outbox.push_delivery(feed.full("a", 3, sub)) == 0
    assert not outbox.keyed
    assert outbox.relieve() == []
    assert outbox.keyed and outbox.queued_messages == 2
    assert outbox.push_delivery(feed.full("a", 3, sub)) == 2, "keyed: folds at once"
    assert outbox.push_delivery(feed.full("c", 1, sub)) == 3
    assert sent(outbox) == ["p s a=3", "p s b=1", "p s c=1"]
    assert not outbox.keyed, "drained: queued as they come again"
    outbox.push_delivery(feed.full("a", 4, sub))
    outbox.push_delivery(feed.full("a", 5, sub))
    assert sent(outbox) == ["p s a=4", "p s a=5"]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("replace", ["ack 1", "p s a=2", "p s x=1", "ack 2", "p s b=1", "p s c=2", "ack 3"]),
        ("append", ["ack 1", "p s x=1", "ack 2", "p s a=2", "p s b=1", "p s c=2", "ack 3"]),
    ],
)
def test_a_relief_keeps_the_queues_order(mode: str, expected: list[str]) -> None:
    conflated, off = FakeFeed(policy("conflate", mode)), FakeFeed(policy("off", name="o"))
    sub = FakeReader("s", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=100)
    outbox.push(orjson.dumps({"c": "ack", "n": 1}))
    outbox.push_delivery(conflated.full("a", 1, sub))
    outbox.push_delivery(off.full("x", 1, sub))
    outbox.push(orjson.dumps({"c": "ack", "n": 2}))
    outbox.push_delivery(conflated.full("a", 2, sub))
    outbox.push_delivery(conflated.full("b", 1, sub))
    assert outbox.push_run(conflated.run(sub, ("c", 1), ("c", 2))) == 8
    outbox.push(orjson.dumps({"c": "ack", "n": 3}))
    outbox.relieve()
    assert outbox.queued_messages == 7
    assert sent(outbox) == expected


def test_off_topics_plain_topics_and_a_session_without_conflation_are_never_merged() -> None:
    sub = FakeReader("s", stateful=False)
    off, always = FakeFeed(policy("off")), FakeFeed(policy("always", name="k"))
    outbox = Outbox(max_bytes=1 << 20, max_messages=100)
    outbox.push_delivery(off.full("a", 1, sub))
    outbox.push_delivery(off.full("a", 2, sub))
    keyless = always.full("a", 1, sub)
    keyless.record = None  # a topic without keys: nothing to merge by
    outbox.push_delivery(keyless)
    outbox.push_delivery(keyless)
    outbox.relieve()
    assert sent(outbox) == ["p s a=1", "p s a=2", "p s a=1", "p s a=1"]
    outbox.conflation = False  # the session turned it off
    outbox.push_delivery(always.full("a", 1, sub))
    outbox.push_delivery(always.full("a", 2, sub))
    outbox.relieve()
    assert sent(outbox) == ["p s a=1", "p s a=2"]


def test_a_queue_past_a_quarter_of_a_bound_is_crowded_until_conflated() -> None:
    feed, sub = FakeFeed(policy("conflate")), FakeReader("s", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=8)
    outbox.push_delivery(feed.full("a", 1, sub))
    outbox.push_delivery(feed.full("a", 2, sub))
    assert not outbox.crowded
    outbox.push_delivery(feed.full("a", 3, sub))
    assert outbox.crowded
    outbox.relieve(drop=False)
    assert not outbox.crowded and outbox.queued_messages == 1


# -- runs ----------------------------------------------------------------------------------------


def test_a_run_is_queued_whole_and_split_across_frames() -> None:
    feed, sub = FakeFeed(policy("conflate")), FakeReader("s", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=100)
    run = feed.run(sub, *[(key, 1) for key in "abcde"])
    assert outbox.push_run(run) == 5
    one = len(run.head) + len(run.bodies[0]) + 2
    assert frames(outbox, max_frame_bytes=1 + 2 * one) == [
        ["p s a=1", "p s b=1"],
        ["p s c=1", "p s d=1"],
        ["p s e=1"],
    ]
    assert outbox.queued_messages == 0 and outbox.queued_bytes == 0


def test_a_run_goes_one_message_at_a_time_when_it_would_be_merged_or_does_not_fit() -> None:
    sub = FakeReader("s", stateful=False)
    always, conflated = FakeFeed(policy("always")), FakeFeed(policy("conflate", name="c"))
    outbox = Outbox(max_bytes=1 << 20, max_messages=3)
    assert outbox.push_run(always.run(sub, ("a", 1))) == 0, "an always topic merges as it comes"
    assert outbox.push_run(conflated.run(sub, ("a", 1), ("b", 1), ("c", 1), ("d", 1))) == 0, "too big"
    assert outbox.push_run(conflated.run(sub, ("a", 1), ("b", 1))) == 2
    outbox.relieve()
    assert outbox.push_run(conflated.run(sub, ("a", 2))) == 0, "keyed: merged as it comes"
    assert sent(outbox) == ["p s a=1", "p s b=1"]


# -- snapshots -----------------------------------------------------------------------------------


def test_a_snapshot_counts_at_most_half_of_each_bound_until_its_records_are_written() -> None:
    outbox = Outbox(max_bytes=1000, max_messages=10)
    # 7 records of about 30 bytes each; counted as 5 of 100 bytes (half of each bound).
    assert outbox.push_stream(iter(stream(7)), count=7, size=3000) == 5
    assert (outbox.queued_messages, outbox.queued_bytes) == (5, 500)
    assert [outbox.push(plain(str(n))) for n in range(6)] == [6, 7, 8, 9, 10, 0]
    one = len(stream(1)[0]) + 1
    assert frames_taken(outbox, 1 + 2 * one) == ['{"c":"sow","n":0}', '{"c":"sow","n":1}']
    assert (outbox.queued_messages, outbox.queued_bytes) == (8, 300 + 5 * (len(plain("0")) + 1))
    assert frames_taken(outbox, 1 + 5 * one) == [f'{{"c":"sow","n":{n}}}' for n in range(2, 7)]
    assert outbox.queued_messages == 5, "the records past the counted ones counted nothing"
    assert sent(outbox) == ["0", "1", "2", "3", "4"]
    assert (outbox.queued_messages, outbox.queued_bytes) == (0, 0)


def frames_taken(outbox: Outbox, max_frame_bytes: int) -> list[str]:
    frame = outbox.take_frame(max_frame_bytes)
    assert frame is not None
    return [orjson.dumps(m).decode() for m in orjson.loads(frame)]


def test_a_snapshot_with_fewer_records_than_counted_lets_the_rest_go_when_it_ends() -> None:
    outbox = Outbox(max_bytes=1000, max_messages=10)
    outbox.push_stream(iter(stream(1)), count=4, size=400)
    assert (outbox.queued_messages, outbox.queued_bytes) == (4, 400)
    assert frames(outbox) == [["sow 0"]]
    assert (outbox.queued_messages, outbox.queued_bytes) == (0, 0) and not outbox


def test_a_snapshot_that_does_not_fit_is_refused_and_an_empty_one_is_queued() -> None:
    outbox = Outbox(max_bytes=1000, max_messages=10)
    for n in range(6):
        outbox.push(plain(str(n)))
    assert outbox.push_stream(iter(stream(5)), count=5, size=50) == 0
    assert outbox.queued_messages == 6
    assert outbox.push_stream(iter(stream(4)), count=4, size=40) == 10
    assert outbox.push_stream(iter([]), count=0, size=0) == 10, "an empty snapshot counts nothing"
    empty = Outbox(max_bytes=1000, max_messages=10)
    assert empty.push_stream(iter([])) == 1, "but the writer must wake for it"
    assert empty and frames(empty) == [] and not empty


# -- close ---------------------------------------------------------------------------------------


def test_close_drops_everything_and_refuses_every_later_push() -> None:
    feed, sub = FakeFeed(policy("always")), FakeReader("s", stateful=False)
    conflated = FakeFeed(policy("conflate", name="c"))
    outbox = Outbox(max_bytes=1 << 20, max_messages=100)
    outbox.push_delivery(feed.full("a", 1, sub))
    outbox.push_delivery(conflated.full("a", 1, sub))
    outbox.relieve()
    outbox.close()
    assert (outbox.queued_messages, outbox.queued_bytes, bool(outbox)) == (0, 0, False)
    assert outbox.push(plain("ack")) == 0
    assert outbox.push_delivery(feed.full("a", 2, sub)) == 0
    assert outbox.push_delivery(conflated.full("a", 2, sub)) == 0
    assert outbox.push_run(conflated.run(sub, ("b", 1))) == 0
    assert outbox.push_stream(iter(stream(1)), count=1, size=10) == 0
    assert outbox.push_stream(iter([])) == 0
    assert outbox.push_tx(tx_block(1, conflated.full("a", 3, sub))) == 0
    assert outbox.push_tx(tx_block(2, conflated.full("a", 3, sub)), squeeze=True) == 0
    assert outbox.take_frame(1 << 20) is None


# -- what the metrics read -----------------------------------------------------------------------


def test_depth_by_topic_counts_messages_about_changes_only() -> None:
    sub = FakeReader("s", stateful=False)
    always, off = FakeFeed(policy("always", name="k")), FakeFeed(policy("off", name="o"))
    outbox = Outbox(max_bytes=1 << 20, max_messages=100)
    outbox.push(plain("ack"))
    outbox.push_stream(iter(stream(3)), count=3, size=30)
    outbox.push_delivery(always.full("a", 1, sub))
    outbox.push_delivery(always.full("a", 2, sub))
    outbox.push_delivery(always.full("b", 1, sub))
    outbox.push_run(off.run(sub, ("a", 1), ("b", 1), ("c", 1)))
    outbox.push_tx(tx_block(1, off.full("d", 1, sub), always.full("c", 1, sub)))
    assert outbox.depth_by_topic() == {"k": 3, "o": 4}


def test_each_message_about_a_change_is_timed_once_when_written() -> None:
    feed, sub = FakeFeed(policy("always")), FakeReader("s", stateful=False)
    outbox = Outbox(max_bytes=1 << 20, max_messages=100)
    for n in range(3):
        outbox.push_delivery(feed.full("a", n, sub))  # versions stamped 1.0, 2.0, 3.0
    replayed = FakeFeed(policy("off", name="o"))
    old = replayed.full("b", 1, sub)
    old.timed = False  # a replay from the log: an old change, sent now
    outbox.push_delivery(old)
    assert outbox.take_frame(1 << 20, now=10.0) is not None
    written = feed.policy.latency.written
    assert (written.count, written.sum) == (1, 7.0), "from the newest change merged"
    assert replayed.policy.latency.written.count == 0
