"""Stored records are kept as their encoding alone (records/version.py): what that must not change, and
what it must save."""

from __future__ import annotations

import tracemalloc
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.core.handlers import recovery
from server.core.protocol.wire import record_body
from server.core.records.version import RecordVersion
from server.core.sow import history

from ..harness import Harness, entries_of, publish

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)


@given(
    key=st.none() | st.text(max_size=6),
    data=JSON_VALUES,
    reason=st.none() | st.sampled_from(["match", "deleted"]),
    ts=st.none() | st.just("2026-11-23T10:00:00.000Z"),
    bm=st.none() | st.text("0123456789", min_size=1, max_size=5),
)
def test_a_spliced_encoding_is_the_body_orjson_writes(
    key: str | None, data: Any, reason: str | None, ts: str | None, bm: str | None
) -> None:
    whole = record_body(key, data, reason, ts, bm)
    assert record_body(key, None, reason, ts, bm, encoded=orjson.dumps(data)) == whole
    assert orjson.loads(b"{" + whole)["data"] == data


def stored(h: Harness, order: int) -> RecordVersion:
    return next(v for v in h.broker.topics["orders"].records.values() if v.data["order"] == order)


def test_a_stored_record_is_compact_once_its_fan_out_is_done_and_reads_back_the_same() -> None:
    h = Harness()
    feed, reader = h.peer(), h.peer()
    reader.send({"c": "subscribe", "t": "orders", "sub_id": 1})
    feed.send(publish(1, px=101.25, qty=3, tags=["a", "b"]))
    assert [m["data"] for m in reader.take() if m["c"] == "p"] == [
        {"order": 1, "px": 101.25, "qty": 3, "tags": ["a", "b"]}
    ]
    version = stored(h, 1)
    assert version.is_compact
    assert version.data == {"order": 1, "px": 101.25, "qty": 3, "tags": ["a", "b"]}
    assert version.is_compact, "reading it leaves it compact"


def test_snapshots_and_filtered_queries_leave_records_compact() -> None:
    h = Harness()
    feed, reader = h.peer(), h.peer()
    feed.send(*[publish(n, qty=n) for n in range(5)])
    whole = reader.send({"c": "sow", "t": "orders", "cid": 1})
    filtered = reader.send({"c": "sow", "t": "orders", "cid": 2, "filter": "/qty > 2"})
    assert sorted(m["data"]["order"] for m in whole if m["c"] == "sow") == [0, 1, 2, 3, 4]
    assert sorted(m["data"]["order"] for m in filtered if m["c"] == "sow") == [3, 4]
    assert all(stored(h, n).is_compact for n in range(5))


def test_a_stored_record_costs_a_few_times_its_json() -> None:
    """Found by bench/memory.py: orjson's result keeps a 4 KB buffer, so a record stored as it
    came out of the encoder cost 32 times its JSON; stored decoded, 9 times. Measured with
    tracemalloc over everything the engine keeps, the history of changes (one entry per change,
    up to its bound) and the SowKey cache included: about 4.2 times for these 138 bytes; then 3.5
    since a new record is its own history entry (sow/history.py), the SowKey cache keeps only hot
    keys (records/keys.py) and a frame's changes share one timestamp (Engine.now); then 3.4 since a
    version has six slots, not seven (records/version.py)."""
    h = Harness()
    feed = h.peer()
    records = [
        {
            "order": n,
            "sym": "MSFT",
            "px": 101.25 + n,
            "qty": n,
            "side": "B",
            "trader": f"t{n % 13}",
            "venue": "XNAS",
            "status": "open",
            "note": "a record of ten fields",
        }
        for n in range(2_000)
    ]
    json_bytes = sum(len(orjson.dumps(r)) for r in records)
    frames = [
        orjson.dumps([{"c": "publish", "t": "orders", "data": r} for r in records[i : i + 200]])
        for i in range(0, len(records), 200)
    ]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for frame in frames:
            h.engine.receive(feed.session, frame)
        del frame
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert used <= 3.5 * json_bytes, (
        f"{used / len(records):.0f} bytes per record of {json_bytes / len(records):.0f}"
    )


def test_readers_that_only_look_leave_stored_and_past_versions_compact() -> None:
    """Found by tests/integration/test_hostile_filters.py: an interval subscription diffed each
    replaced version by decoding it for good, so the history (which holds the replaced versions
    for resuming) held every record twice, decoded and encoded. Whatever only reads a record on
    its way (intervals, windows, filtered and ordered queries, a replace, a resume, a filtered
    delete, an expiry's OOF) leaves it compact; only what keeps it (a view held for deltas) may
    decode it for good."""
    h = Harness()
    feed, reader = h.peer(), h.peer()
    feed.send(*[publish(n, qty=n) for n in range(8)])
    reader.send({"c": "subscribe", "t": "orders", "sub_id": "i", "o": "conflation=1s"})
    reader.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "w", "top_n": 3, "orderby": "/qty DESC"})
    reader.send({"c": "sow", "t": "orders", "cid": "q", "filter": "/qty > 2", "orderby": "/qty"})
    reader.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "r", "filter": "/qty > 1"})
    reader.send(
        {"c": "sow_and_subscribe", "t": "orders", "sub_id": "r", "filter": "/qty > 3", "o": "replace"}
    )
    feed.send(*[publish(n, qty=n + 10) for n in range(8)])
    reader.send({"c": "sow_and_subscribe", "t": "orders", "sub_id": "z", "o": "resume", "bm": "0"})
    feed.send({"c": "sow_delete", "t": "orders", "filter": "/qty > 16"})
    reader.take()
    sow = h.broker.topics["orders"].sow
    assert all(version.is_compact for version in sow.records.values())
    assert sow.history is not None
    past = [change.old for change in map(history.past, sow.history.held()) if change.old is not None]
    assert past and all(version.is_compact for version in past)


def test_a_held_record_stays_decoded_and_leaves_the_history_like_any_other() -> None:
    """A held version is marked ``held``: compacting it keeps its dict, and the history,
    which holds a new record as its version, measures and drops it as a new record."""
    h = Harness(server={"resume_history_changes": 2})
    feed, reader = h.peer(), h.peer()
    reader.send({"c": "subscribe", "t": "orders", "sub_id": "a", "o": "oof"})
    feed.send(*[publish(n, qty=n) for n in range(5)])  # five new records: three leave the history
    assert [m["data"]["qty"] for m in reader.take()] == [0, 1, 2, 3, 4]
    sow = h.broker.topics["orders"].sow
    held = list(sow.records.values())
    assert held and all(v.held and not v.is_compact for v in held)
    assert sow.history is not None and len(sow.history) == 2
    assert sow.history.bytes == 2 * history.ENTRY_BYTES
    feed.send(publish(4, qty=40))
    assert [(m["c"], m["data"]["qty"]) for m in reader.take()] == [("p", 40)]


@pytest.mark.parametrize("command", ["subscribe", "delta_subscribe"])
def test_subscriptions_that_hold_a_record_share_one_message_after_it_was_stored(command: str) -> None:
    """Found in review: one holder took the record while it was fresh, the other (a later
    snapshot) decoded the stored version again, and the two held equal but different objects:
    one message each instead of one naming both (docs/protocol.md, Messages from the server)."""
    h = Harness()
    feed, reader = h.peer(), h.peer()
    options = {"o": "oof"} if command == "subscribe" else {}
    reader.send({"c": command, "t": "orders", "sub_id": "a", **options})
    feed.send(publish(1, qty=1))
    reader.take()
    reader.send({"c": f"sow_and_{command}", "t": "orders", "sub_id": "b", **options})
    reader.take()
    feed.send(publish(1, qty=2))
    assert [(m["c"], sorted(m["sids"])) for m in reader.take()] == [("p", ["a", "b"])]


def test_what_waits_in_a_queue_is_trimmed_to_its_size() -> None:
    """Found in review: a plain topic's publishes (never stored, so never compacted) and acks
    waited in a stalled socket's queue in orjson's 4 KB buffers: 4,543 bytes each."""
    h = Harness(topics=[{"name": "orders", "key": ["/order"]}])
    feed, stalled = h.peer(), h.peer()
    stalled.send({"c": "subscribe", "t": "ticks", "sub_id": 1})
    frames = [
        orjson.dumps([{"c": "publish", "t": "ticks", "cid": n, "data": {"n": n, "px": 1.5}}])
        for n in range(500)
    ]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for frame in frames:
            h.engine.receive(feed.session, frame)
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert stalled.session.outbox.queued_messages >= 500
    assert used / 1_000 < 1_000, f"{used / 1_000:.0f} bytes per queued message and ack"


def test_records_restored_from_the_log_tail_are_compact() -> None:
    """Found in review: recovery applies the log's tail without a fan-out, so nothing compacted
    those records, and the first snapshot cached orjson's 4 KB buffer on each."""
    source = Harness(topics=[{"name": "orders", "key": ["/order"], "durable": True}])
    source.peer().send(*[publish(n, qty=n) for n in range(3)])
    tail = [orjson.loads(entry.encode()) for entry in entries_of(source)]
    restored = Harness(topics=[{"name": "orders", "key": ["/order"], "durable": True}])
    recovery.restore(restored.broker, None, tail)
    versions = list(restored.broker.topics["orders"].records.values())
    assert len(versions) == 3 and all(version.is_compact for version in versions)


def test_the_changes_of_one_frame_share_one_timestamp_and_the_next_frame_reads_the_clock() -> None:
    h = Harness()
    feed = h.peer()
    ticks = iter(range(100, 1000))
    h.broker.clock = lambda: float(next(ticks))  # a clock that moves at every reading
    feed.send(publish(1), publish(2), publish(3))
    versions = list(h.broker.topics["orders"].records.values())
    assert len({id(version.timestamp) for version in versions}) == 1
    feed.send(publish(4))
    assert h.broker.topics["orders"].records[versions[0].key].timestamp < max(
        version.timestamp for version in h.broker.topics["orders"].records.values()
    )
