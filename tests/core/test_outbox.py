"""The bounded outbox: limits, frame splitting, pairs, lazy streams."""

from __future__ import annotations

import orjson

from server.core.outbox import FRAME_BREAK, Outbox
from server.core.wire import head, join


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
    assert drain(outbox, 1000) == [b"[" + b"a" * 40 + b"," + b"b" * 40 + b",d]"]
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


def test_pairs_join_into_messages_even_when_split() -> None:
    outbox = Outbox(1 << 20, 1000)
    topic = orjson.dumps("t")
    for n in range(20):
        outbox.push_pair(head(b"p", topic, [n]), orjson.dumps({"k": str(n), "data": {"n": n}})[1:])
        outbox.push(message(n))
    expected = []
    for n in range(20):
        expected += [
            {"c": "p", "t": "t", "sids": [n], "k": str(n), "data": {"n": n}},
            {"n": n, "pad": "x" * 10},
        ]
    for max_frame in (1 << 20, 150):
        copy = Outbox(1 << 20, 1000)
        for n in range(20):
            copy.push_pair(head(b"p", topic, [n]), orjson.dumps({"k": str(n), "data": {"n": n}})[1:])
            copy.push(message(n))
        assert [m for frame in drain(copy, max_frame) for m in orjson.loads(frame)] == expected
    assert join(b'{"a":1', b'"b":2}') == b'{"a":1,"b":2}'


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
