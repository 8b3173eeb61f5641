"""The bounded outbox: limits, frame splitting, lazy streams, runs."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from server.core.queue.frames import array_frame
from server.core.queue.outbox import Outbox
from server.core.queue.snapshots import FRAME_BREAK

from ..harness import Harness


def message(n: int, pad: int = 10) -> bytes:
    return orjson.dumps({"n": n, "pad": "x" * pad})


def drain(outbox: Outbox, max_frame: int) -> list[bytes]:
    frames = []
    while (frame := outbox.take_frame(max_frame)) is not None:
        frames.append(frame)
    return frames


def test_limits_refuse_without_queuing() -> None:
    outbox = Outbox(max_bytes=100, max_messages=3)
    assert outbox.push(b"a" * 40) == 1
    assert outbox.push(b"b" * 40) == 2
    assert outbox.push(b"c" * 40) == 0, "over the byte limit"
    assert outbox.push(b"d") == 3
    assert outbox.push(b"e") == 0, "over the message limit"
    assert outbox.push(b"f", force=True) == 4, "forced messages ignore the bounds"
    assert drain(outbox, 1000) == [b"[" + b"a" * 40 + b"," + b"b" * 40 + b",d,f]"]
    assert outbox.queued_messages == 0 and outbox.queued_bytes == 0


def test_frames_are_split_at_max_frame_bytes_and_keep_order() -> None:
    outbox = Outbox(1 << 20, 1000)
    for n in range(50):
        outbox.push(message(n))
    frames = drain(outbox, 200)
    assert all(len(frame) <= 200 for frame in frames) and len(frames) > 1
    assert [m["n"] for frame in frames for m in orjson.loads(frame)] == list(range(50))
    assert outbox.queued_bytes == 0 and outbox.queued_messages == 0


def test_a_single_message_larger_than_a_frame_goes_alone() -> None:
    outbox = Outbox(1 << 20, 1000)
    outbox.push(message(1))
    outbox.push(message(2, pad=500))
    outbox.push(message(3))
    frames = drain(outbox, 100)
    assert [[m["n"] for m in orjson.loads(frame)] for frame in frames] == [[1], [2], [3]]


def test_runs_and_deliveries_split_across_frames_in_order() -> None:
    hub = Harness()
    publisher, plain, rich = hub.peer(), hub.peer(), hub.peer()
    plain.send({"c": "subscribe", "t": "orders", "sub_id": "fast"})
    rich.send({"c": "subscribe", "t": "orders", "sub_id": "rich", "o": "oof"})
    publisher.send(
        *[{"c": "publish", "t": "orders", "data": {"order": n, "pad": "p" * 30}} for n in range(40)]
    )
    for peer in (plain, rich):
        frames = drain(peer.session.outbox, 300)
        assert len(frames) > 5 and all(len(frame) <= 300 for frame in frames)
        assert [m["data"]["order"] for frame in frames for m in orjson.loads(frame)] == list(range(40))
        assert peer.session.outbox.queued_messages == 0 and peer.session.outbox.queued_bytes == 0


def test_streams_are_lazy_ordered_and_break_frames() -> None:
    outbox = Outbox(max_bytes=50, max_messages=2)
    produced = []

    def snapshot():  # type: ignore[no-untyped-def]
        for n in range(5):
            produced.append(n)
            if n == 3:
                yield FRAME_BREAK
            yield message(n)

    outbox.push(b'{"first":1}')
    outbox.push_stream(snapshot())
    assert produced == [], "nothing is encoded until the writer drains"
    outbox.push(b'{"last":1}')
    frames = drain(outbox, 1 << 20)
    flat = [m for frame in frames for m in orjson.loads(frame)]
    assert flat[0] == {"first": 1} and flat[-1] == {"last": 1}
    assert [m["n"] for m in flat[1:-1]] == [0, 1, 2, 3, 4]
    assert len(frames) == 2


def test_close_drops_everything_and_refuses_more() -> None:
    outbox = Outbox(1000, 10)
    outbox.push(b"{}")
    outbox.close()
    assert outbox.take_frame(1000) is None
    assert outbox.push(b"{}") == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=5_000), min_size=1, max_size=6))
def test_a_frame_is_its_parts_comma_joined_in_brackets_whatever_their_sizes(parts: list[bytes]) -> None:
    assert array_frame(list(parts)) == b"[" + b",".join(parts) + b"]"
