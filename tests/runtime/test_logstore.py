"""The log store on a real disk: a failed write is cut off and the same group commit retried."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from server.core.engine import Engine
from server.core.errors import StartupError
from server.core.handlers import recovery
from server.core.log.local import LocalLog
from server.core.settings.config import parse_config
from server.core.sow.txlog import entries_in, scan, scan_segment
from server.runtime import logstore
from server.runtime.logstore import LogStore
from server.runtime.pump import Pump
from tests.core.harness import QUIET

from ..waiting import eventually_async


async def test_a_failed_sync_is_cut_off_retried_and_acknowledged(tmp_path: Path, monkeypatch: Any) -> None:
    engine = Engine(
        parse_config({"topic": [{"name": "orders", "key": ["/id"], "durable": True}]}), time.time, LocalLog
    )
    pump = Pump(engine.broker)
    store = LogStore(tmp_path, engine.broker, pump, 1e9, 1 << 40)
    store.recover()
    failures: list[int] = []
    real_sync = os.fdatasync

    def failing_once(fd: int) -> None:
        if not failures:
            failures.append(fd)
            raise OSError(28, "No space left on device")
        real_sync(fd)

    monkeypatch.setattr(os, "fdatasync", failing_once)  # the module logstore writes through
    store.start()
    session = engine.broker.open_session(QUIET)
    commands = [
        {"c": "publish", "t": "orders", "data": {"id": n}, "cid": n, "a": "persisted"} for n in range(10)
    ]
    engine.receive(session, orjson.dumps(commands))
    pump()  # as the runtime does after it feeds the engine: the log writer wakes

    async def on_disk() -> bool:
        return engine.broker.durability.durable_lsn >= engine.broker.durability.last_lsn

    await eventually_async(on_disk, "the group commit was retried until it was on disk")
    await store.close()
    assert failures, "the first sync failed"
    acks: list[Any] = []
    while (frame := session.outbox.take_frame(1 << 20)) is not None:
        acks += [m for m in orjson.loads(frame) if m["a"] == "persisted"]
    assert sorted(m["cid"] for m in acks) == list(range(10))
    segment = next((tmp_path / "txlog").glob("*.log"))
    found = scan(segment.read_bytes())
    assert found.problem is None, "no partial frame was left behind"
    assert [entry[4]["id"] for entry in entries_in(found.payloads)] == list(range(10))


@pytest.mark.parametrize("damage", [b"\x00\x00\x00\x10\x00", b""])
def test_recovery_of_an_empty_or_torn_store(tmp_path: Path, damage: bytes) -> None:
    (tmp_path / "txlog").mkdir()
    (tmp_path / "txlog" / f"{1:020d}.log").write_bytes(damage)
    engine = Engine(
        parse_config({"topic": [{"name": "orders", "key": ["/id"], "durable": True}]}), time.time, LocalLog
    )
    restored = LogStore(tmp_path, engine.broker, Pump(engine.broker), 1e9, 1 << 40).recover()
    assert restored.records == 0 and restored.lsn == 0


# -- damage, torn tails and LSN epochs ----------------------------------------------------------

DURABLE = {"topic": [{"name": "orders", "key": ["/id"], "durable": True}]}


def open_store(data_dir: Path, recover_damaged: bool = False) -> tuple[Engine, LogStore]:
    engine = Engine(parse_config(DURABLE), time.time, LocalLog)
    store = LogStore(data_dir, engine.broker, Pump(engine.broker), 1e9, 1 << 40, recover_damaged)
    store.recover()
    return engine, store


def publish_frames(engine: Engine, store: LogStore, ids: range) -> list[int]:
    """Publish ``ids``, one group commit (one frame) each, written as the log writer would; the
    LSNs handed out."""
    session = engine.broker.open_session(QUIET)
    lsns = []
    for n in ids:
        engine.receive(session, orjson.dumps({"c": "publish", "t": "orders", "data": {"id": n}}))
        taken = engine.broker.durability.take()
        assert taken is not None
        store._write(*taken)
        engine.broker.made_durable(taken[1])
        lsns.append(taken[1])
    return lsns


def crash(store: LogStore) -> None:
    """kill -9: the file descriptor goes, nothing else happens (no snapshot)."""
    assert store._fd is not None
    os.close(store._fd)
    store._io.shutdown(wait=True)


def ids_of(engine: Engine) -> list[int]:
    return sorted(version.data["id"] for version in engine.broker.topics["orders"].records.values())


def flip_in_frames(segment: Path, *indexes: int) -> list[tuple[int, int]]:
    """Flip two bytes in the payload of each frame of ``indexes``; where those frames are."""
    data = bytearray(segment.read_bytes())
    frames = scan_segment(bytes(data)).frames
    places = [frames[index][:2] for index in indexes]
    for start, _ in places:
        data[start + 12] ^= 0xFF
        data[start + 13] ^= 0xFF
    segment.write_bytes(bytes(data))
    return places


def test_a_damaged_log_refuses_to_start_naming_the_place_and_changes_nothing(tmp_path: Path) -> None:
    engine, store = open_store(tmp_path)
    publish_frames(engine, store, range(1, 21))
    crash(store)
    segment = next((tmp_path / "txlog").glob("*.log"))
    [(start, end)] = flip_in_frames(segment, 7)
    before = {path.name: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    with pytest.raises(StartupError) as refused:
        open_store(tmp_path)
    message = str(refused.value)
    assert f"{segment} bytes {start}-{end}" in message and "--recover-damaged-log" in message
    assert "\n" not in message
    after = {path.name: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    assert after == before, "nothing on disk changed"


def test_starting_anyway_keeps_every_intact_frame_and_the_damaged_bytes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine, store = open_store(tmp_path)
    publish_frames(engine, store, range(1, 41))
    crash(store)
    segment = next((tmp_path / "txlog").glob("*.log"))
    original = segment.read_bytes()
    damaged = flip_in_frames(segment, 3, 4, 20)
    damaged_bytes = segment.read_bytes()

    engine, store = open_store(tmp_path, recover_damaged=True)
    assert ids_of(engine) == [n for n in range(1, 41) if n not in (4, 5, 21)]
    assert store.damaged_frames == 2  # frames 4 and 5 are one damaged stretch
    assert "TRANSACTION LOG DAMAGED" in caplog.text
    assert {r.levelname for r in caplog.records if "DAMAGED" in r.getMessage()} == {"ERROR"}
    first, second = damaged[0][0], damaged[2][0]
    aside = segment.with_name(f"{segment.name}.damaged-{first}")
    assert aside.read_bytes() == damaged_bytes[first : damaged[1][1]]
    assert segment.with_name(f"{segment.name}.damaged-{second}").exists()
    rewritten = scan_segment(segment.read_bytes())
    assert rewritten.damaged == [] and len(rewritten.frames) == 37
    assert len(segment.read_bytes()) == len(original) - sum(end - start for start, end in damaged)
    publish_frames(engine, store, range(41, 43))
    crash(store)

    engine, store = open_store(tmp_path)  # the damage was dealt with once: a clean start now
    assert ids_of(engine) == [n for n in range(1, 43) if n not in (4, 5, 21)]
    assert store.damaged_frames == 0


def test_a_torn_last_frame_is_cut_off_with_a_warning_and_no_refusal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine, store = open_store(tmp_path)
    publish_frames(engine, store, range(1, 6))
    crash(store)
    segment = next((tmp_path / "txlog").glob("*.log"))
    whole = segment.read_bytes()
    segment.write_bytes(whole[:-7])  # the last group commit, cut short by a crash
    engine, store = open_store(tmp_path)
    assert ids_of(engine) == [1, 2, 3, 4]
    assert store.damaged_frames == 0
    assert "torn last frame" in caplog.text and "DAMAGED" not in caplog.text
    assert scan_segment(segment.read_bytes()).torn_at is None


def test_lsns_never_repeat_after_a_crash_and_lost_ones_are_refused_as_bookmarks(tmp_path: Path) -> None:
    engine, store = open_store(tmp_path)
    durable = publish_frames(engine, store, range(1, 4))
    session = engine.broker.open_session(QUIET)
    engine.receive(
        session, orjson.dumps([{"c": "publish", "t": "orders", "data": {"id": n}} for n in (4, 5)])
    )
    handed_out = engine.broker.lsns.last  # delivered to subscribers, never written: the crash loses them
    crash(store)

    engine, store = open_store(tmp_path)
    assert ids_of(engine) == [1, 2, 3]
    assert engine.broker.lsns.next() > handed_out > durable[-1]
    watcher = engine.broker.open_session(QUIET)

    def subscribe(bm: int) -> dict[str, Any]:
        engine.receive(
            watcher, orjson.dumps({"c": "subscribe", "t": "orders", "cid": str(bm), "bm": str(bm)})
        )
        reply: dict[str, Any] = orjson.loads(watcher.outbox.take_frame(1 << 20) or b"[]")[0]
        engine.receive(watcher, orjson.dumps({"c": "unsubscribe", "sub_id": str(bm)}))
        return reply

    assert subscribe(durable[-1])["status"] == "success"
    refused = subscribe(handed_out)
    assert refused["status"] == "failure" and "is not in the log" in refused["reason"]
    assert orjson.loads((tmp_path / "epochs.json").read_bytes())["epoch"] == 2
    crash(store)
    engine, store = open_store(tmp_path)  # a restart that wrote nothing: still a new epoch
    assert orjson.loads((tmp_path / "epochs.json").read_bytes())["epoch"] == 3
    assert engine.broker.lsns.next() > handed_out


def test_a_damaged_epoch_history_refuses_to_start(tmp_path: Path) -> None:
    engine, store = open_store(tmp_path)
    publish_frames(engine, store, range(1, 3))
    crash(store)
    (tmp_path / "epochs.json").write_bytes(b'{"format": 1, "ep')
    with pytest.raises(StartupError, match=r"epochs\.json is damaged"):
        open_store(tmp_path)
    engine, store = open_store(tmp_path, recover_damaged=True)
    assert orjson.loads((tmp_path / "epochs.json").read_bytes())["epoch"] > 1000


def trimmed_store(tmp_path: Path, recover_damaged: bool = False) -> tuple[Engine, LogStore]:
    """A store whose retention removes every segment a snapshot covers at once."""
    engine = Engine(parse_config(DURABLE), time.time, LocalLog)
    store = LogStore(tmp_path, engine.broker, Pump(engine.broker), 0.0, 0, recover_damaged)
    store.recover()
    return engine, store


def test_a_damaged_newest_snapshot_whose_log_is_gone_refuses_to_start(
    tmp_path: Path, monkeypatch: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A damaged newest snapshot used to fall back to the older one with only a WARNING, even
    when retention had removed the log segments between them: acknowledged changes were lost
    quietly. Now that is refused like a damaged log frame, and starting anyway says so loudly."""
    monkeypatch.setattr(logstore, "SEGMENT_BYTES", 100)  # a segment every frame or two
    engine, store = trimmed_store(tmp_path)
    publish_frames(engine, store, range(1, 11))
    store._write_snapshot(recovery.capture(engine.broker))
    publish_frames(engine, store, range(11, 21))
    store._write_snapshot(recovery.capture(engine.broker))  # retention: the segments before it go
    crash(store)
    _older, newest = sorted((tmp_path / "snapshots").glob("*.snapshot"))
    newest.write_bytes(newest.read_bytes()[:40])  # torn
    with pytest.raises(StartupError) as refused:
        trimmed_store(tmp_path)
    message = str(refused.value)
    assert str(newest) in message and "--recover-damaged-log" in message and "\n" not in message
    engine, store = trimmed_store(tmp_path, recover_damaged=True)
    assert "SNAPSHOT DAMAGED" in caplog.text
    assert store.damaged_frames == 1
    assert not newest.exists() and newest.with_name(newest.name + ".damaged").exists()
    assert 1 <= len(ids_of(engine)) < 20  # the older snapshot and what the log still held
    crash(store)


def test_a_damaged_newest_snapshot_loses_nothing_while_the_log_still_holds_it(tmp_path: Path) -> None:
    engine, store = open_store(tmp_path)  # retention keeps everything
    publish_frames(engine, store, range(1, 11))
    store._write_snapshot(recovery.capture(engine.broker))
    publish_frames(engine, store, range(11, 21))
    store._write_snapshot(recovery.capture(engine.broker))
    crash(store)
    newest = sorted((tmp_path / "snapshots").glob("*.snapshot"))[-1]
    newest.write_bytes(newest.read_bytes()[:40])
    engine, store = open_store(tmp_path)
    assert ids_of(engine) == list(range(1, 21))
    crash(store)
