"""Durability over real server processes: kill -9, torn and corrupt logs, bookmarks, expiration."""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from server.client import Publisher
from server.core.sow.txlog import scan_segment

from ..waiting import HANG_S
from .client import Client
from .server_process import ROOT, ServerProcess, write_config

TOPICS = [
    {"name": "orders", "key": ["/id"], "durable": True},
    {"name": "quotes", "key": ["/id"], "durable": True, "expiration": "1s"},
]
TOTAL = 20_000


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path / "durable.toml", {}, TOPICS)


async def sow_ids(client: Client, topic: str = "orders") -> list[int]:
    got = await client.request({"c": "sow", "t": topic, "cid": f"q{time.monotonic()}"})
    got += await client.until(lambda m: m["c"] == "group_end", HANG_S)
    return sorted(m["data"]["id"] for m in got if m["c"] == "sow")


@pytest.mark.slow
async def test_kill_9_mid_stream_loses_nothing_acked_and_repeats_nothing(
    config: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    first = ServerProcess(config, data)
    port = first.port
    publisher = Publisher(first.url, "feed")
    await publisher.connect()

    killed = asyncio.Event()

    async def stream() -> None:
        for start in range(1, TOTAL + 1, 200):
            if start > TOTAL // 2:
                await killed.wait()  # the second half after the kill, however slow the machine
            await publisher.publish_many("orders", [{"id": n, "v": n} for n in range(start, start + 200)])
            await asyncio.sleep(0.01)

    streaming = asyncio.create_task(stream())
    # Killed once some of it is on disk (a loaded machine may take a while to get there), at a
    # random point of the rest of the first half.
    while publisher.persisted_seq == 0:
        await asyncio.sleep(0.01)
    await asyncio.sleep(random.uniform(0.0, 0.3))
    first.stop(signal.SIGKILL)
    acked = publisher.persisted_seq
    killed.set()
    assert 0 < acked < TOTAL, "the kill landed in the middle of the stream"

    second = ServerProcess(config, data, port=port)
    try:
        checker, subscriber = await Client.connect(second.url), await Client.connect(second.url)
        # The snapshot and the live stream are one atomic read: the publisher may already be
        # re-sending what was not persisted (a separate sow then subscribe would miss what
        # landed between them).
        await subscriber.send({"c": "sow_and_subscribe", "t": "orders", "cid": "live"})
        snapshot = await subscriber.until(lambda m: m["c"] == "group_end")
        present = sorted(m["data"]["id"] for m in snapshot if m["c"] == "sow")
        assert set(range(1, acked + 1)) <= set(present), "every record covered by a persisted ack survived"
        await streaming  # the publisher reconnects by itself and re-sends what was not persisted
        await publisher.wait_persisted(timeout=HANG_S)
        assert await sow_ids(checker) == list(range(1, TOTAL + 1))
        # A marker published after everything was persisted: the socket delivers in order, so
        # any record the subscriber were to see twice arrives before it.
        await publisher.publish_many("orders", [{"id": TOTAL + 1, "v": 0}])
        marker = TOTAL + 1
        live = await subscriber.until(lambda m: m["c"] == "p" and m["data"]["id"] == marker)
        seen = [m["data"]["id"] for m in live if m["c"] == "p" and m["data"]["id"] != marker]
        assert len(seen) == len(set(seen)), "no subscriber sees any record twice"
        assert set(seen) == set(range(1, TOTAL + 1)) - set(present)
        logon = await checker.request({"c": "logon", "cid": "who", "client_name": "feed-check"})
        assert logon[-1]["status"] == "success"
    finally:
        await publisher.close()
        second.stop()
    assert "recovered" in second.output()


async def publish_and_persist(url: str, ids: range) -> None:
    publisher = Publisher(url, "writer")
    await publisher.connect()
    await publisher.publish_many("orders", [{"id": n} for n in ids])
    await publisher.wait_persisted(timeout=HANG_S)
    await publisher.close()


async def test_a_torn_last_frame_is_cut_off_and_the_server_starts(config: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = ServerProcess(config, data)
    await publish_and_persist(server.url, range(1, 101))
    server.stop(signal.SIGKILL)
    segment = sorted((data / "txlog").glob("*.log"))[-1]
    segment.write_bytes(segment.read_bytes() + b"\x00\x00\x01\x00\xab\xcd\x12\x34[[1")  # a write cut short
    again = ServerProcess(config, data)
    try:
        assert await sow_ids(await Client.connect(again.url)) == list(range(1, 101))
        assert "torn last frame" in again.output() and "DAMAGED" not in again.output()
    finally:
        again.stop()


async def test_a_damaged_frame_stops_the_start_until_told_then_only_its_records_are_lost(
    config: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    server = ServerProcess(config, data)
    await publish_and_persist(server.url, range(1, 101))
    await publish_and_persist(server.url, range(101, 111))  # its first group commit is damaged below
    await publish_and_persist(server.url, range(111, 201))
    server.stop(signal.SIGKILL)
    segment = sorted((data / "txlog").glob("*.log"))[-1]
    frames = scan_segment(segment.read_bytes()).frames
    # The log writer groups what arrived together; how many of the ten one commit holds depends
    # on the machine, so the records lost are read from the damaged frame itself.
    start, end, damaged = next((s, e, batch) for s, e, batch in frames if batch[0][4]["id"] == 101)
    lost = {entry[4]["id"] for entry in damaged}
    raw = bytearray(segment.read_bytes())
    raw[start + 40] ^= 0xFF
    raw[start + 41] ^= 0xFF
    segment.write_bytes(bytes(raw))

    refused = run_to_exit(config, data)
    assert refused.returncode == 3
    reason = refused.stderr.strip().splitlines()[-1]
    assert reason.startswith("error: transaction log damaged: ")
    assert f"{segment} bytes {start}-{end}" in reason and "--recover-damaged-log" in reason
    assert "TRANSACTION LOG DAMAGED" in refused.stderr
    assert segment.read_bytes() == bytes(raw), "a refused start changes nothing on disk"

    again = ServerProcess(config, data, ["--recover-damaged-log"])
    try:
        expected = [n for n in range(1, 201) if n not in lost]
        assert await sow_ids(await Client.connect(again.url)) == expected
        assert "TRANSACTION LOG DAMAGED" in again.output()
        assert (segment.parent / f"{segment.name}.damaged-{start}").read_bytes() == bytes(raw[start:end])
        metrics = await asyncio.to_thread(read_metrics, again.http)
        assert "push_log_damaged_frames_total 1.0" in metrics
    finally:
        again.stop()
    third = ServerProcess(config, data)  # the damage was dealt with: no option needed any more
    third.stop()


def run_to_exit(config: Path, data: Path) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "server",
        "--port",
        "0",
        "--config",
        str(config),
        "--data-dir",
        str(data),
    ]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=HANG_S, check=False)


def read_metrics(http: str) -> str:
    with urllib.request.urlopen(f"{http}/metrics", timeout=HANG_S) as response:
        text: str = response.read().decode()
        return text


async def test_bookmarks_handed_out_before_a_crash_are_never_reused(config: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = ServerProcess(config, data)
    writer, watcher = await Client.connect(server.url), await Client.connect(server.url)
    await watcher.request({"c": "subscribe", "t": "orders", "cid": "w", "bm": "now"})
    await writer.request(
        {"c": "publish", "t": "orders", "data": {"id": 1}, "cid": "p1", "a": "persisted"}, "persisted"
    )
    await writer.send(*[{"c": "publish", "t": "orders", "data": {"id": n}} for n in range(2, 200)])
    marks = [int(m["bm"]) for m in await watcher.until(lambda m: m.get("data", {}).get("id") == 199)]
    durable, last = marks[0], marks[-1]
    server.stop(signal.SIGKILL)  # whatever of 2-199 was not yet on disk is gone, their bookmarks too

    again = ServerProcess(config, data)
    try:
        writer, watcher = await Client.connect(again.url), await Client.connect(again.url)
        await watcher.request({"c": "subscribe", "t": "orders", "cid": "w", "bm": "now"})
        resumed = await Client.connect(again.url)
        answer = await resumed.request({"c": "subscribe", "t": "orders", "cid": "r", "bm": str(last)})
        await writer.send(*[{"c": "publish", "t": "orders", "data": {"id": n}} for n in range(1000, 1030)])
        after = await watcher.until(lambda m: m.get("data", {}).get("id") == 1029)
        assert min(int(m["bm"]) for m in after) > last, "every new bookmark is above every old one"
        if answer[-1]["status"] == "failure":  # the last bookmark was lost with the crash: said so
            assert answer[-1]["reason"].startswith(f"bad message: bookmark {last} is not in the log")
        else:  # it reached the disk: resuming from it delivers everything after it
            got = await resumed.until(lambda m: m.get("data", {}).get("id") == 1029)
            assert [m["data"]["id"] for m in got if m["c"] == "p"] == list(range(1000, 1030))
        first = await resumed.request({"c": "subscribe", "t": "orders", "cid": "d", "bm": str(durable)})
        assert first[-1]["status"] == "success"
        future = await resumed.request({"c": "subscribe", "t": "orders", "cid": "f", "bm": str(1 << 62)})
        assert future[-1]["reason"].startswith(f"bad message: bookmark {1 << 62} is not in the log")
    finally:
        again.stop()


async def test_bookmark_replays_every_kind_then_live(config: Path, tmp_path: Path) -> None:
    server = ServerProcess(config, tmp_path / "data")
    try:
        client = await Client.connect(server.url)
        await client.send(*[{"c": "publish", "t": "orders", "data": {"id": n}} for n in range(1, 6)])
        replay = await client.request(
            {"c": "subscribe", "t": "orders", "cid": "all", "bm": "0", "a": "completed"}, "completed"
        )
        replayed = [m for m in replay if m["c"] == "p"]
        assert [m["data"]["id"] for m in replayed] == [1, 2, 3, 4, 5]
        marks = [m["bm"] for m in replayed]
        assert replay[-1]["bm"] == marks[-1]
        await client.request({"c": "unsubscribe", "sub_id": "all", "cid": "u"})

        after_two = await client.request(
            {"c": "subscribe", "t": "orders", "cid": "mid", "bm": marks[1], "a": "completed"}, "completed"
        )
        assert [m["data"]["id"] for m in after_two if m["c"] == "p"] == [3, 4, 5]
        await client.request({"c": "unsubscribe", "sub_id": "mid", "cid": "u2"})

        cut = datetime.now(UTC)
        await asyncio.sleep(0.05)
        await client.request({"c": "publish", "t": "orders", "data": {"id": 6}, "cid": "p6"})
        since = await client.request(
            {
                "c": "subscribe",
                "t": "orders",
                "cid": "time",
                "bm": cut.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "a": "completed",
            },
            "completed",
        )
        assert [m["data"]["id"] for m in since if m["c"] == "p"] == [6]
        await client.send({"c": "publish", "t": "orders", "data": {"id": 7}})
        live = await client.recv()
        assert (live["c"], live["data"]["id"], live["sids"]) == ("p", 7, ["time"]) and "bm" in live
        await client.request({"c": "unsubscribe", "sub_id": "time", "cid": "u3"})

        now = await client.request(
            {"c": "subscribe", "t": "orders", "cid": "now", "bm": "now", "a": "completed"}, "completed"
        )
        assert [m["c"] for m in now] == ["ack", "ack"]
    finally:
        server.stop()


async def test_replay_and_live_meet_without_gap_or_duplicate(config: Path, tmp_path: Path) -> None:
    server = ServerProcess(config, tmp_path / "data")
    try:
        writer, reader = await Client.connect(server.url), await Client.connect(server.url)
        await writer.send(
            *[{"c": "publish", "t": "orders", "data": {"id": n % 50, "v": n}} for n in range(3000)]
        )

        async def keep_writing() -> None:
            for n in range(3000, 6000, 100):
                await writer.send(
                    *[
                        {"c": "publish", "t": "orders", "data": {"id": i % 50, "v": i}}
                        for i in range(n, n + 100)
                    ]
                )
                await asyncio.sleep(0.002)

        writing = asyncio.create_task(keep_writing())
        replaying = {"c": "subscribe", "t": "orders", "sub_id": "b", "bm": "0", "cid": "b", "a": "completed"}
        await reader.send(replaying)
        await writing
        await writer.request({"c": "flush", "cid": "written"})
        # A replay is not over when a flush of its socket is answered: read to its end
        # (``completed``), then to a flush, for the live changes written after it caught up.
        replayed = await reader.ack("b", "completed")
        seen: list[Any] = [m["data"]["v"] for m in replayed + await reader.settled() if m["c"] == "p"]
        assert seen == list(range(6000)), "the whole history, once, in order"
    finally:
        server.stop()


async def test_expiration_before_and_across_a_restart(config: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = ServerProcess(config, data)
    client = await Client.connect(server.url)
    await client.request({"c": "subscribe", "t": "quotes", "cid": "w", "o": "oof"})
    await client.send(
        {"c": "publish", "t": "quotes", "data": {"id": 1}},
        {"c": "publish", "t": "quotes", "data": {"id": 2}, "e": 0},
        {"c": "publish", "t": "quotes", "data": {"id": 3}, "e": 60},
    )
    oof = await client.until(lambda m: m["c"] == "oof", HANG_S)
    assert (oof[-1]["reason"], oof[-1]["data"]) == ("expired", {"id": 1})
    await client.request(
        {"c": "publish", "t": "quotes", "data": {"id": 4}, "e": 1.5, "cid": "p4", "a": "persisted"},
        "persisted",
    )
    server.stop()
    await asyncio.sleep(1.6)
    again = ServerProcess(config, data)
    try:
        assert await sow_ids(await Client.connect(again.url), "quotes") == [2, 3]
    finally:
        again.stop()
