"""Snapshot rows joined from stored encodings (queue/snapshots.py, ``JoinedRows``) are the very
bytes the one-message-at-a-time path writes, cut into pieces that respect the frame's room and
the query's batch size."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from server.core.handlers.snapshotting import _encode_snapshot
from server.core.protocol import wire
from server.core.queue.outbox import Outbox
from server.core.queue.snapshots import FRAME_BREAK, JoinedRows, SnapshotRecords
from server.core.records.version import RecordVersion, check_encodable, format_timestamp

HEAD = wire.snapshot_head(b'"orders"', b'"q1"')

keys = st.one_of(
    st.text(alphabet="0123456789abcdef", min_size=20, max_size=20),  # SowKeys
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),  # a publisher's (no surrogates)
)
values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


def stored(key: str, data: object, seq: int) -> RecordVersion:
    version = RecordVersion(key, data, seq, 1_795_000_000 + seq * 0.0137, encoded=check_encodable(data))
    version.compact()
    return version


def one_at_a_time(
    versions: list[RecordVersion], show_key: bool, timestamps: bool = False, bookmarks: bool = False
) -> list[bytes]:
    """What the general path writes for each record (record_message over record_body)."""
    return [
        wire.join(
            HEAD,
            wire.record_body(
                version.key if show_key else None,
                None,
                None,
                format_timestamp(version.timestamp) if timestamps else None,
                str(version.seq) if bookmarks else None,
                version.encoded,
            ),
        )
        for version in versions
    ]


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.tuples(keys, values), max_size=30),
    st.booleans(),
    st.integers(0, 2_000),
    st.none() | st.integers(1, 7),
    st.booleans(),
    st.booleans(),
)
def test_the_pieces_join_to_the_messages_one_at_a_time(
    rows: list[tuple[str, object]],
    show_key: bool,
    room: int,
    batch: int | None,
    timestamps: bool,
    bookmarks: bool,
) -> None:
    versions = [stored(key, data, seq) for seq, (key, data) in enumerate(rows)]
    expected = one_at_a_time(versions, show_key, timestamps, bookmarks)
    joined = JoinedRows(HEAD, versions, show_key, batch, timestamps, bookmarks)
    written: list[bytes] = []
    taken = 0
    while (piece := joined.take(room)) is not None:
        if piece == FRAME_BREAK:
            assert batch is not None and taken % batch == 0 and 0 < taken < len(versions)
            assert joined.taken == 0
            continue
        count = joined.taken
        assert count >= 1
        # A piece fills the room but never overfills it, unless it is a single message.
        assert len(piece) <= room or count == 1
        if batch is not None:
            assert taken // batch == (taken + count - 1) // batch  # never across a batch's end
        assert piece == b",".join(expected[taken : taken + count])
        written.append(piece)
        taken += count
    assert taken == len(versions)
    assert orjson.loads(b"[" + b",".join(written) + b"]") == [orjson.loads(m) for m in expected]


def test_a_key_that_needs_escaping_is_escaped() -> None:
    versions = [stored('a"b\\c\n', {"x": 1}, 1), stored("é", {"x": 2}, 2)]
    piece = JoinedRows(HEAD, versions, True, None).take(10_000)
    assert piece is not None
    assert [m["k"] for m in orjson.loads(b"[" + piece + b"]")] == ['a"b\\c\n', "é"]


def test_an_outbox_frames_a_joined_snapshot_within_its_bound() -> None:
    """The writer's frames hold the whole snapshot, in order, each within the frame bound, and
    the queue counts every message written."""
    versions = [stored(f"{n:020x}", {"n": n, "pad": "x" * (n % 50)}, n) for n in range(500)]
    outbox = Outbox(max_bytes=10_000_000, max_messages=100_000)
    outbox.push(b'{"c":"group_begin"}')
    outbox.push_stream(JoinedRows(HEAD, versions, True, None), len(versions), 60_000)
    outbox.push(b'{"c":"group_end"}')
    messages: list[dict[str, object]] = []
    while (frame := outbox.take_frame(4_096)) is not None:
        assert len(frame) <= 4_096
        messages += orjson.loads(frame)
    assert [m["c"] for m in messages] == ["group_begin"] + ["sow"] * 500 + ["group_end"]
    assert [m["data"] for m in messages[1:-1]] == [v.data for v in versions]
    assert outbox.sent == 502
    assert outbox.queued_messages == 0 and outbox.queued_bytes == 0


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(keys, values), max_size=25),
    st.integers(60, 2_000),
    st.none() | st.integers(1, 6),
    st.integers(2, 200),
    st.booleans(),
    st.booleans(),
)
def test_an_outbox_writes_the_same_frames_and_counts_as_one_message_at_a_time(
    rows: list[tuple[str, object]],
    max_frame: int,
    batch: int | None,
    max_messages: int,
    timestamps: bool,
    bookmarks: bool,
) -> None:
    """Through two outboxes, with a plain message queued behind: the same frames, and after
    every frame the same bytes and messages counted against the bounds and the same ``sent``
    (a queued snapshot counts at most half of each bound)."""
    versions = [stored(key, data, seq) for seq, (key, data) in enumerate(rows)]
    expected = one_at_a_time(versions, True, timestamps, bookmarks)
    one_by_one = _encode_snapshot(len(versions), expected.__getitem__, batch)
    outboxes = [Outbox(max_bytes=1_000_000, max_messages=max_messages) for _ in range(2)]
    streams = [JoinedRows(HEAD, versions, True, batch, timestamps, bookmarks), one_by_one]
    for outbox, stream in zip(outboxes, streams, strict=True):
        outbox.push_stream(stream, len(versions), 50 * len(versions), SnapshotRecords("t", versions))
        outbox.push(b'{"c":"group_end"}')
    while True:
        frames = [outbox.take_frame(max_frame) for outbox in outboxes]
        assert frames[0] == frames[1]
        joined, general = [(o.queued_messages, o.queued_bytes, o.sent) for o in outboxes]
        assert joined == general
        if frames[0] is None:
            break
