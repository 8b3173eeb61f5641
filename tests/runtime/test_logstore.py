"""The log store on a real disk: a failed write is cut off and the same group commit retried."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from server.core.config import parse_config
from server.core.engine import Engine
from server.core.txlog import entries_in, scan
from server.runtime import logstore
from server.runtime.logstore import LogStore


async def test_a_failed_sync_is_cut_off_retried_and_acknowledged(tmp_path: Path, monkeypatch: Any) -> None:
    engine = Engine(parse_config({"topic": [{"name": "orders", "key": ["/id"], "durable": True}]}), time.time)
    store = LogStore(tmp_path, engine, 1e9, 1 << 40)
    store.recover()
    failures = []
    real_sync = os.fdatasync

    def failing_once(fd: int) -> None:
        if not failures:
            failures.append(fd)
            raise OSError(28, "No space left on device")
        real_sync(fd)

    monkeypatch.setattr(logstore.os, "fdatasync", failing_once)
    store.start()
    session = engine.open_session(lambda: None)
    commands = [
        {"c": "publish", "t": "orders", "data": {"id": n}, "cid": n, "a": "persisted"} for n in range(10)
    ]
    engine.receive(session, orjson.dumps(commands))
    deadline = time.monotonic() + 10
    while engine.durability.durable_lsn < engine.durability.last_lsn:
        assert time.monotonic() < deadline, "the group commit was retried until it was on disk"
        await asyncio.sleep(0.05)
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
    engine = Engine(parse_config({"topic": [{"name": "orders", "key": ["/id"], "durable": True}]}), time.time)
    restored = LogStore(tmp_path, engine, 1e9, 1 << 40).recover()
    assert restored.records == 0 and restored.lsn == 0
