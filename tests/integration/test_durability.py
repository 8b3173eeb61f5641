"""Durability over real server processes: kill -9, torn and corrupt logs, bookmarks, expiration."""

from __future__ import annotations

import asyncio
import random
import signal
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from server.client import Publisher

from .client import Client
from .server_process import ServerProcess, write_config

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
    got += await client.until(lambda m: m["c"] == "group_end", 30)
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

    async def stream() -> None:
        for start in range(1, TOTAL + 1, 200):
            await publisher.publish_many("orders", [{"id": n, "v": n} for n in range(start, start + 200)])
            await asyncio.sleep(0.01)

    streaming = asyncio.create_task(stream())
    await asyncio.sleep(random.uniform(0.2, 0.8))
    first.stop(signal.SIGKILL)
    acked = publisher.persisted_seq
    assert 0 < acked < TOTAL, "the kill landed in the middle of the stream"

    second = ServerProcess(config, data, port=port)
    try:
        checker, subscriber = await Client.connect(second.url), await Client.connect(second.url)
        present = await sow_ids(checker)
        assert set(range(1, acked + 1)) <= set(present), "every record covered by a persisted ack survived"
        await subscriber.request({"c": "subscribe", "t": "orders", "cid": "live"})
        await streaming  # the publisher reconnects by itself and re-sends what was not persisted
        await publisher.wait_persisted(timeout=60)
        assert await sow_ids(checker) == list(range(1, TOTAL + 1))
        seen = [m["data"]["id"] for m in await subscriber.silence(1.0) if m["c"] == "p"]
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
    await publisher.wait_persisted(timeout=30)
    await publisher.close()


@pytest.mark.parametrize("damage", ["torn", "corrupt"])
async def test_a_damaged_log_tail_is_detected_and_the_rest_is_kept(
    config: Path, tmp_path: Path, damage: str
) -> None:
    data = tmp_path / "data"
    server = ServerProcess(config, data)
    await publish_and_persist(server.url, range(1, 101))
    await publish_and_persist(server.url, range(101, 111))  # the last group commit, damaged below
    server.stop(signal.SIGKILL)
    segment = sorted((data / "txlog").glob("*.log"))[-1]
    raw = bytearray(segment.read_bytes())
    if damage == "torn":
        raw += b"\x00\x00\x01"  # a frame header cut short by a crash
        expected = list(range(1, 111))
    else:
        raw[-5] ^= 0xFF  # a flipped byte in the last group commit: that commit is lost, not the rest
        expected = list(range(1, 101))
    segment.write_bytes(bytes(raw))
    again = ServerProcess(config, data)
    try:
        assert await sow_ids(await Client.connect(again.url)) == expected
        output = again.output()
        assert ("torn" if damage == "torn" else "checksum mismatch") in output
        assert "the server starts with what they hold" in output
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
        await reader.send({"c": "subscribe", "t": "orders", "sub_id": "b", "bm": "0"})
        await writing
        seen: list[Any] = [m["data"]["v"] for m in await reader.silence(1.5) if m["c"] == "p"]
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
    oof = await client.until(lambda m: m["c"] == "oof", 5)
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
