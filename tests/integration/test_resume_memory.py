"""What a resumed view (docs/protocol.md, Resuming a view) holds while a socket does not read it,
against the real server: no more than a plain snapshot of the same view. A resume from an early
bookmark used to encode every message up front: 10 sockets that never read, resuming a 50,000 x 1 KB
view, held 624 MB, where the same plain snapshots held 38 MB."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ..waiting import HANG_S
from .client import Client
from .conftest import StartServer
from .server_process import ServerProcess

SOCKETS = 5
RECORDS = 20_000
PAD = "x" * 1000  # a record of about 1 KB
PER_FRAME = 500  # publishes per frame: inside the 1 MB frame limit


def rss_mb(server: ServerProcess) -> float:
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def view(cid: str, bm: str | None = None) -> dict[str, Any]:
    command = {"c": "sow_and_subscribe", "t": "orders", "cid": cid, "o": "resume"}
    return command if bm is None else {**command, "bm": bm}


async def stall(server: ServerProcess, commands: list[dict[str, Any]]) -> tuple[list[Client], float]:
    """One socket per command that reads nothing after its ack: the server's RSS growth, in MB,
    once every one of them is subscribed (and the sockets, to keep them open)."""
    before = rss_mb(server)
    clients = [await Client.connect(server.url, max_queue=1, max_size=None) for _ in commands]
    for client, command in zip(clients, commands, strict=True):
        await client.send(command)
    for client, command in zip(clients, commands, strict=True):
        await client.ack(command["cid"], timeout=HANG_S)  # processed: its snapshot is queued
    await asyncio.sleep(0.5)  # the writers fill what the transports take
    return clients, rss_mb(server) - before


@pytest.mark.slow
async def test_a_resume_a_socket_never_reads_holds_no_more_than_a_plain_snapshot(
    start_server: StartServer,
) -> None:
    server = start_server()
    feed = await Client.connect(server.url)
    first = await Client.connect(server.url)
    await first.send(view("early"))
    early = (await first.until(lambda m: m["c"] == "group_end"))[-1]["bm"]  # the topic is empty
    await first.close()
    for start in range(0, RECORDS, PER_FRAME):
        frame = [
            {"c": "publish", "t": "orders", "data": {"order": n, "pad": PAD}}
            for n in range(start, start + PER_FRAME)
        ]
        await feed.send(*frame)
    await feed.request({"c": "flush", "cid": "loaded"})
    plain, plain_mb = await stall(server, [view(f"plain-{n}") for n in range(SOCKETS)])
    resumed, resumed_mb = await stall(server, [view(f"resume-{n}", early) for n in range(SOCKETS)])
    print(
        f"{SOCKETS} never-read views of {RECORDS} x 1 KB: plain +{plain_mb:.0f} MB, "
        f"resumed +{resumed_mb:.0f} MB"
    )
    # Every record changed since the bookmark: a resume sends as many records as a snapshot.
    assert resumed_mb < 2 * plain_mb + 15, f"resumed +{resumed_mb:.0f} MB, plain +{plain_mb:.0f} MB"
    for client in (*plain, *resumed):
        client.ws.transport.abort()  # gone without a close: no handshake behind 20 MB unread
    reader = await Client.connect(server.url, max_size=None)
    await reader.send(view("check", early))
    end = (await reader.until(lambda m: m["c"] == "group_end", HANG_S))[-1]
    assert end["resumed"] is True and end["records"] == RECORDS, "what was measured was a resume"
    for client in (feed, reader):
        await client.close()
