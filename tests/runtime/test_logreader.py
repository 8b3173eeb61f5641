"""Reading the log back for bookmark replays a chunk at a time (runtime/logreader.py), on a real
disk: across segments, from a bookmark or a time up to where live begins, past damage, and while
retention removes segments under it."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from server.core.engine import Engine
from server.core.log.local import LocalLog
from server.core.settings.config import parse_config
from server.core.sow.txlog import LogEntry, scan_segment
from server.runtime import logreader, logstore
from server.runtime.logreader import Cursor
from server.runtime.logstore import LogStore
from server.runtime.pump import Pump
from tests.core.harness import QUIET

from .test_logstore import DURABLE, crash, flip_in_frames

NOW = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def small(monkeypatch: Any) -> None:
    """Segments of a few frames, chunks of a few hundred bytes or three entries."""
    monkeypatch.setattr(logstore, "SEGMENT_BYTES", 1000)
    monkeypatch.setattr(logreader, "CHUNK_BYTES", 300)
    monkeypatch.setattr(logreader, "CHUNK_ENTRIES", 3)


def store_with(tmp_path: Path, frames: int, pad: int = 40) -> tuple[Engine, LogStore, list[int]]:
    """A log of ``frames`` group commits of one publish each, a second apart; their LSNs."""
    clock = Clock()
    engine = Engine(parse_config(DURABLE), clock, LocalLog)
    store = LogStore(tmp_path, engine.broker, Pump(engine.broker), 1e9, 1 << 40)
    store.recover()
    session = engine.broker.open_session(QUIET)
    lsns = []
    for n in range(frames):
        clock.now = NOW + n
        command = {"c": "publish", "t": "orders", "data": {"id": n, "pad": "x" * pad}}
        engine.receive(session, orjson.dumps(command))
        taken = engine.broker.durability.take()
        assert taken is not None
        store._write(*taken)
        engine.broker.made_durable(taken[1])
        lsns.append(taken[1])
    return engine, store, lsns


def chunks(store: LogStore, cursor: Cursor, limit: int = 10_000) -> list[list[LogEntry]]:
    got = []
    while not cursor.done:
        got.append(store.reader.chunk(cursor))
        assert len(got) < limit, "the cursor moves on"
    return got


def lsns_of(read: list[list[LogEntry]]) -> list[int]:
    return [entry.lsn for chunk in read for entry in chunk]


def segments(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "txlog").glob("*.log"))


def test_a_replay_reads_every_entry_in_order_a_chunk_at_a_time_across_segments(
    tmp_path: Path, small: None
) -> None:
    _, store, lsns = store_with(tmp_path, 60)
    assert len(segments(tmp_path)) > 5
    read = chunks(store, Cursor(0, None, lsns[-1]))
    assert lsns_of(read) == lsns
    assert max(len(chunk) for chunk in read) <= 3, "no chunk holds more than its bound"
    crash(store)


def test_from_a_bookmark_up_to_where_live_begins(tmp_path: Path, small: None) -> None:
    _, store, lsns = store_with(tmp_path, 60)
    assert lsns_of(chunks(store, Cursor(lsns[37], None, lsns[51]))) == lsns[38:52]
    assert lsns_of(chunks(store, Cursor(lsns[-1], None, lsns[-1]))) == []
    assert lsns_of(chunks(store, Cursor(0, None, 0))) == []
    crash(store)


def test_from_a_time(tmp_path: Path, small: None) -> None:
    _, store, lsns = store_with(tmp_path, 60)
    assert lsns_of(chunks(store, Cursor(0, NOW + 20.5, lsns[-1]))) == lsns[21:]
    crash(store)


def test_a_frame_larger_than_a_chunk_is_read_whole(tmp_path: Path, small: None) -> None:
    _, store, lsns = store_with(tmp_path, 5, pad=2000)
    read = chunks(store, Cursor(0, None, lsns[-1]))
    assert lsns_of(read) == lsns
    assert [entry.data["pad"] for chunk in read for entry in chunk] == ["x" * 2000] * 5
    crash(store)


def test_damaged_frames_are_skipped_and_reported_once(
    tmp_path: Path, monkeypatch: Any, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(logreader, "CHUNK_BYTES", 300)
    monkeypatch.setattr(logreader, "RESYNC_WINDOW", 64)  # the next frame is a few windows on
    _, store, lsns = store_with(tmp_path, 40)
    [segment] = segments(tmp_path)
    start = scan_segment(segment.read_bytes()).frames[30][0]
    flip_in_frames(segment, 3, 4, 20)  # 3 and 4: one stretch
    data = bytearray(segment.read_bytes())
    data[start] ^= 0x7F  # a length field no frame here can have
    segment.write_bytes(bytes(data))
    lost = {lsns[3], lsns[4], lsns[20], lsns[30]}
    for _ in range(2):
        assert lsns_of(chunks(store, Cursor(0, None, lsns[-1]))) == [n for n in lsns if n not in lost]
    assert store.damaged_frames == 3, "each stretch counted once, however many replays read it"
    reported = [r for r in caplog.records if "TRANSACTION LOG DAMAGED" in r.getMessage()]
    assert len(reported) == 3 and {r.levelname for r in reported} == {"ERROR"}
    crash(store)


def test_a_segment_removed_under_a_replay_goes_on_from_the_oldest_entry_kept(
    tmp_path: Path, small: None, caplog: pytest.LogCaptureFixture
) -> None:
    _, store, lsns = store_with(tmp_path, 60)
    cursor = Cursor(0, None, lsns[-1])
    first = store.reader.chunk(cursor)
    assert cursor.segment == segments(tmp_path)[0].name
    kept = segments(tmp_path)[3:]
    for removed in segments(tmp_path)[:3]:  # retention: the oldest segments, the replay's among them
        removed.unlink()
    rest = chunks(store, cursor)
    oldest_kept = LogEntry.from_payload(scan_segment(kept[0].read_bytes()).payloads[0][0]).lsn
    assert lsns_of([first, *rest]) == lsns[:3] + lsns[lsns.index(oldest_kept) :]
    assert "slower than log retention" in caplog.text and segments(tmp_path)[0].name in caplog.text
    crash(store)


def test_a_replay_whose_every_segment_is_removed_ends(tmp_path: Path, small: None) -> None:
    _, store, lsns = store_with(tmp_path, 20)
    cursor = Cursor(0, None, lsns[-1])
    store.reader.chunk(cursor)
    for removed in segments(tmp_path):
        removed.unlink()
    assert chunks(store, cursor) == [[]]
    crash(store)


def test_retention_removes_the_oldest_segments_first(tmp_path: Path, small: None) -> None:
    """A segment kept (here: rewritten at a start that repaired damage, so younger than those
    after it) keeps every segment after it: a replay that finds its segment misses nothing."""
    engine, store, _ = store_with(tmp_path, 30)
    store.retention_s = 3600
    before = segments(tmp_path)
    old = time.time() - 7200
    for segment in before[1:]:
        os.utime(segment, (old, old))
    store._apply_retention(engine.broker.durability.last_lsn)
    assert segments(tmp_path) == before
    os.utime(before[0], (old, old))
    store._apply_retention(engine.broker.durability.last_lsn)
    assert segments(tmp_path) == before[-1:]
    crash(store)


async def test_the_store_reads_each_chunk_on_its_io_thread_when_asked(
    tmp_path: Path, small: None, monkeypatch: Any
) -> None:
    _, store, lsns = store_with(tmp_path, 30)
    threads: list[str] = []
    read = store.reader.chunk

    def chunk(cursor: Cursor) -> list[LogEntry]:
        threads.append(threading.current_thread().name)
        return read(cursor)

    monkeypatch.setattr(store.reader, "chunk", chunk)
    replay = store.replay(lsns[4], None, lsns[-1])
    first = await anext(replay)
    assert len(threads) == 1, "one chunk read for one asked for"
    rest = [chunk async for chunk in replay]
    assert lsns_of([first, *rest]) == lsns[5:] and max(len(chunk) for chunk in rest) <= 3
    assert {name.split("_")[0] for name in threads} == {"txlog"}
    crash(store)
