"""Crash and damage, over real server processes: a durable feed is killed (kill -9) at random
points, and random bytes of the log are damaged between runs (the server starts with
``--recover-damaged-log``). After every restart, every record whose persisted ack the feed received
is back unless its log frame was damaged, nothing damaged comes back, and across all runs no
bookmark is ever handed out twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import signal
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
import websockets

from server.core.sow.txlog import HEADER_SIZE, scan_segment

from ..waiting import HANG_S
from .server_process import ServerProcess, sow_records, write_config

RUNS = 7
BATCH = 25


@dataclass
class Ledger:
    """What the test knows: every id sent (id = publisher sequence), the ids acknowledged as
    persisted, the ids whose frames were damaged, and every bookmark seen."""

    next_id: int = 1
    sent: set[int] = field(default_factory=set)
    acked: set[int] = field(default_factory=set)
    damaged: set[int] = field(default_factory=set)
    bookmarks: list[list[int]] = field(default_factory=list)  # per run, in arrival order
    sent_now: set[int] = field(default_factory=set)  # sent to the server running now

    def persisted(self, seq: int) -> None:
        """A persisted ack covers every earlier sequence this server received. (Ids a crash lost
        before they were acked are not re-sent: this feed does not follow the logon ack's ``s``.)"""
        covered = {n for n in self.sent_now if n <= seq}
        self.acked |= covered
        self.sent_now -= covered


def messages(frame: str | bytes) -> list[Any]:
    decoded = orjson.loads(frame)
    return decoded if isinstance(decoded, list) else [decoded]


async def feed(url: str, ledger: Ledger) -> None:
    """Publish batches of new ids with sequences and persisted acks until the server dies."""
    with contextlib.suppress(websockets.ConnectionClosed, OSError):
        async with websockets.connect(url, open_timeout=HANG_S, ping_interval=None) as ws:
            await ws.send(orjson.dumps({"c": "logon", "client_name": "feed", "cid": "l"}).decode())
            ledger.sent_now = set()
            reading = asyncio.create_task(read_acks(ws, ledger))
            try:
                while True:
                    ids = range(ledger.next_id, ledger.next_id + BATCH)
                    batch = [
                        {"c": "publish", "t": "orders", "data": {"id": n}, "s": n, "a": "persisted"}
                        for n in ids
                    ]
                    ledger.sent.update(ids)  # before sending: a write can reach the log unacked
                    ledger.sent_now.update(ids)
                    ledger.next_id += BATCH
                    await ws.send(orjson.dumps(batch).decode())
                    await asyncio.sleep(0.003)
            finally:
                reading.cancel()


async def read_acks(ws: websockets.ClientConnection, ledger: Ledger) -> None:
    async for frame in ws:
        for message in messages(frame):
            if message.get("a") == "persisted":
                assert message["status"] == "success", message
                ledger.persisted(message["s"])


async def watch(url: str, marks: list[int], ready: asyncio.Event) -> None:
    """A ``bm: "now"`` subscriber: collects the bookmark of every message until the server dies."""
    with contextlib.suppress(websockets.ConnectionClosed, OSError):
        async with websockets.connect(url, open_timeout=HANG_S, ping_interval=None) as ws:
            await ws.send(orjson.dumps({"c": "subscribe", "t": "orders", "cid": "w", "bm": "now"}).decode())
            async for frame in ws:
                for message in messages(frame):
                    if message["c"] == "ack":
                        ready.set()
                    elif message["c"] == "p":
                        marks.append(int(message["bm"]))


def damage(data_dir: Path, rng: random.Random) -> set[int]:
    """Flip one byte (header or payload) in a few random intact frames; the ids those frames held."""
    segment = sorted((data_dir / "txlog").glob("*.log"))[-1]
    raw = bytearray(segment.read_bytes())
    frames = scan_segment(bytes(raw)).frames
    hit = rng.sample(frames, min(len(frames), rng.randint(1, 3)))
    for start, end, _ in hit:
        in_header = rng.random() < 0.4  # the length or the CRC: the scanner must not trust them
        offset = rng.randrange(HEADER_SIZE) if in_header else rng.randrange(HEADER_SIZE, end - start)
        raw[start + offset] ^= rng.randrange(1, 256)
    segment.write_bytes(bytes(raw))
    return {entry[4]["id"] for _, _, batch in hit for entry in batch}


def damaged_frames_metric(http: str) -> float:
    with urllib.request.urlopen(f"{http}/metrics", timeout=HANG_S) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("push_log_damaged_frames_total "):
                return float(line.split()[1])
    raise AssertionError("no push_log_damaged_frames_total in /metrics")


async def check_recovered(server: ServerProcess, ledger: Ledger, damaged_now: bool) -> None:
    present = {record["id"] for record in await asyncio.to_thread(sow_records, server.url, "orders")}
    missing = ledger.acked - ledger.damaged - present
    assert not missing, (
        f"acknowledged records lost although their frames were intact: {sorted(missing)[:20]}\n"
        + server.output()
    )
    assert not present & ledger.damaged, "a record of a damaged frame came back"
    assert present <= ledger.sent
    if damaged_now:
        assert "TRANSACTION LOG DAMAGED" in server.output()
        assert await asyncio.to_thread(damaged_frames_metric, server.http) >= 1


def check_bookmarks(runs: list[list[int]]) -> None:
    every = [mark for run in runs for mark in run]
    assert len(every) == len(set(every)), "a bookmark was handed out twice"
    for earlier, later in itertools.pairwise(runs):
        if earlier and later:
            assert min(later) > max(earlier), "a restart handed out bookmarks below earlier ones"


@pytest.mark.slow
async def test_random_kills_and_log_damage_lose_only_damaged_frames_and_never_reuse_a_bookmark(
    tmp_path: Path,
) -> None:
    rng = random.Random()
    config = write_config(tmp_path / "crash.toml", {}, [{"name": "orders", "key": ["/id"], "durable": True}])
    data = tmp_path / "data"
    ledger = Ledger()
    damaged_now = False
    for run in range(RUNS + 1):
        server = ServerProcess(config, data, ["--recover-damaged-log"])
        try:
            await check_recovered(server, ledger, damaged_now)
            if run == RUNS:
                break
            marks: list[int] = []
            ready = asyncio.Event()
            watcher = asyncio.create_task(watch(server.url, marks, ready))
            async with asyncio.timeout(HANG_S):
                await ready.wait()
            feeder = asyncio.create_task(feed(server.url, ledger))
            await asyncio.sleep(rng.uniform(0.2, 1.0))
            server.stop(signal.SIGKILL)
            async with asyncio.timeout(HANG_S):
                await asyncio.gather(feeder, watcher)
        finally:
            server.stop()
        assert marks, "the subscriber saw the stream"
        ledger.bookmarks.append(marks)
        damaged_now = run % 3 != 2  # some restarts are crash-only
        if damaged_now:
            ledger.damaged |= damage(data, rng)
    check_bookmarks(ledger.bookmarks)
    assert ledger.acked and ledger.damaged
