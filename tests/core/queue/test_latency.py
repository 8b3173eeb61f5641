"""Latency histograms and queue figures (issue: latency you can see): what is observed, once."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from server.core.queue.latency import BUCKETS, Histogram

from ..harness import Harness, entries_of, publish, replay_all


def take_all(h: Harness, peer: Any, now: float) -> list[bytes]:
    frames = []
    while (frame := peer.session.outbox.take_frame(1 << 20, now)) is not None:
        frames.append(frame)
    return frames


def receive(h: Harness, peer: Any, command: dict[str, Any]) -> None:
    """``command`` from ``peer``, its messages left queued (``Peer.send`` would take them)."""
    h.engine.receive(peer.session, orjson.dumps(command))


def written(h: Harness, topic: str = "orders") -> Histogram:
    return h.broker.topics[topic].latency.written


def test_quantiles_interpolate_within_a_bucket() -> None:
    histogram = Histogram()
    assert histogram.quantile(0.5) is None
    histogram.observe(0.003, 50)  # bucket (0.0025, 0.005]
    histogram.observe(0.2, 50)  # bucket (0.1, 0.25]
    assert histogram.count == 100
    assert 0.0025 < histogram.quantile(0.5) <= 0.005  # type: ignore[operator]
    assert 0.1 < histogram.quantile(0.99) <= 0.25  # type: ignore[operator]
    assert histogram.sum == pytest.approx(0.003 * 50 + 0.2 * 50)


def test_a_bound_is_inclusive_and_negative_time_counts_as_zero() -> None:
    histogram = Histogram()
    histogram.observe(0.001)  # exactly a bound: le="0.001"
    histogram.observe(-5.0)  # another node's clock ahead of this one
    cumulative = dict(histogram.cumulative())
    assert cumulative[0.0005] == 1 and cumulative[0.001] == 2
    assert cumulative[float("inf")] == 2
    histogram.observe(1e6)
    assert histogram.counts[-1] == 1 and histogram.quantile(1.0) == BUCKETS[-1]


def test_since_counts_only_later_observations() -> None:
    histogram = Histogram()
    histogram.observe(0.5, 10)
    earlier = list(histogram.counts)
    histogram.observe(0.002, 3)
    recent = histogram.since(earlier)
    assert recent.count == 3 and recent.quantile(0.99) <= 0.0025  # type: ignore[operator]


def test_each_message_about_a_change_is_timed_once_from_its_ts() -> None:
    h = Harness()
    publisher, reader = h.peer(), h.peer()
    reader.send({"c": "sow_and_subscribe", "t": "orders", "cid": "s"})
    reader.take()  # the snapshot and acks: not changes
    applied_at = h.clock.now
    publisher.send(publish(1, qty=1), publish(2, qty=2))
    take_all(h, reader, applied_at + 0.02)
    histogram = written(h)
    assert histogram.count == 2
    assert histogram.sum == pytest.approx(0.04, abs=1e-5)
    assert take_all(h, reader, applied_at + 1.0) == []
    assert histogram.count == 2  # nothing is observed twice


def test_a_run_split_across_frames_is_timed_once_per_message() -> None:
    h = Harness()
    publisher, reader = h.peer(), h.peer()
    reader.send({"c": "subscribe", "t": "orders", "cid": "s"})  # stateless: the fast lane, runs
    reader.take()
    publisher.send(*[publish(n, pad="x" * 200) for n in range(50)])
    frames = []
    while (frame := reader.session.outbox.take_frame(2000, h.clock.now + 0.001)) is not None:
        frames.append(frame)
    assert len(frames) > 3
    assert written(h).count == 50


def test_a_conflated_record_is_timed_from_its_newest_change() -> None:
    h = Harness([{"name": "orders", "key": ["/order"], "conflation": "always"}])
    publisher, reader = h.peer(), h.peer()
    reader.send({"c": "sow_and_subscribe", "t": "orders", "cid": "s"})
    reader.take()
    start = h.clock.now
    publisher.send(publish(1, qty=1))
    h.clock.now = start + 5.0
    publisher.send(publish(1, qty=2))
    take_all(h, reader, start + 5.5)
    histogram = written(h)
    assert histogram.count == 1  # one message went out
    assert histogram.sum == pytest.approx(0.5, abs=1e-5)
    assert h.broker.topics["orders"].counters["conflated"] == 1
    assert reader.session.outbox.conflated == 1


def test_a_transaction_times_each_of_its_messages() -> None:
    h = Harness()
    publisher, reader = h.peer(), h.peer()
    reader.send({"c": "sow_and_subscribe", "t": "orders", "cid": "s"})
    reader.take()
    publisher.send({"c": "tx", "cid": "t", "cmds": [publish(1), publish(2), publish(3)]})
    take_all(h, reader, h.clock.now + 0.01)
    assert written(h).count == 3


def test_queue_depth_by_topic_counts_messages_about_changes() -> None:
    h = Harness()
    publisher, reader = h.peer(), h.peer()
    reader.send(
        {"c": "sow_and_subscribe", "t": "orders", "cid": "s"}, {"c": "subscribe", "t": "news", "cid": "n"}
    )
    publisher.send(publish(1), publish(2), {"c": "publish", "t": "news", "data": {"x": 1}})
    assert reader.session.outbox.depth_by_topic() == {"orders": 2, "news": 1}
    take_all(h, reader, h.clock.now)
    assert reader.session.outbox.depth_by_topic() == {}


def test_persisted_latency_is_observed_when_the_log_is_synced() -> None:
    h = Harness([{"name": "orders", "key": ["/order"], "durable": True}])
    publisher = h.peer()
    start = h.clock.now
    publisher.send(publish(1), publish(2))
    persisted = h.broker.topics["orders"].latency.persisted
    assert persisted.count == 0  # not on disk yet
    entries = entries_of(h)
    h.clock.now = start + 0.004
    h.broker.made_durable(entries[-1].lsn)
    assert persisted.count == 2
    assert persisted.sum == pytest.approx(0.008, abs=1e-5)


def test_a_bookmark_replay_and_a_replaced_filter_are_not_latency() -> None:
    h = Harness([{"name": "orders", "key": ["/order"], "durable": True}])
    publisher, reader = h.peer(), h.peer()
    publisher.send(publish(1, qty=1), publish(2, qty=50))
    log = entries_of(h)
    h.clock.now += 3600.0  # an hour later: old changes, sent now
    receive(h, reader, {"c": "subscribe", "t": "orders", "cid": "s", "bm": "0"})
    replay_all(h, log)
    receive(
        h, reader, {"c": "subscribe", "t": "orders", "cid": "s", "filter": "/qty > 10", "o": "oof,replace"}
    )
    sent = b"".join(take_all(h, reader, h.clock.now))
    assert sent.count(b'"c":"p"') >= 2, "the replay, then what the new filter changes"
    assert written(h).count == 0
    publisher.send(publish(3, qty=60))
    take_all(h, reader, h.clock.now + 0.002)
    assert written(h).count == 1 and written(h).sum == pytest.approx(0.002, abs=1e-5)
