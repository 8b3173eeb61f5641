"""A reconnect storm: ``--sockets`` dashboards connect at once and each opens a view of the whole
topic (``sow_and_subscribe``, ``--records`` rows of about 200 bytes; with the option ``resume``
as the JavaScript client's views open, so each row carries its ``bm``; ``--options ""`` for a
plain view), as after a restart of the network between a desk and the server. Materialize
published the same shape (2,048 dashboards x 10,000 rows) as their benchmark of it.

Prints, min / median / max over rounds: the server's CPU time for the whole storm, rows per server
CPU-s, and that rate against the rows per second ``orjson.dumps`` encodes one record at a time in
this process (the cost of encoding the rows once, the floor a snapshot is held to); the wall time
until every socket has its ``group_end``, and until every handshake is answered.

    .venv/bin/python bench/storm.py [--sockets 250] [--records 10000] [--rounds 3]
                                    [--peers sowpush,sowpush-pure] [--options resume]

The load client speaks just enough WebSocket to be cheap at this size: a handshake, one masked
command frame, then it counts the bytes it reads until ``group_end`` and hangs up. Before the
rounds, one socket reads its snapshot with a real client and checks every row arrived.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import orjson
import uvloop
import websockets
from figures import Figure, table
from harness import arguments, cpu_seconds, free_port, serve
from memory import raise_open_files_limit, rss, stop
from peers import PEERS, Peer

CONFIG = '[[topic]]\nname = "orders"\nkey = ["/order"]\n'
PAD = "x" * 100  # a row of about 200 bytes, as a blotter's


def view_command(options: str) -> bytes:
    """The command each dashboard sends: the JavaScript client's views add ``resume`` (each row
    then carries its ``bm``; without a bookmark the whole snapshot comes)."""
    command = {"c": "sow_and_subscribe", "t": "orders", "cid": "view"}
    if options:
        command["o"] = options
    return orjson.dumps(command)


END = b'"c":"group_end"'


def row(n: int) -> dict[str, object]:
    side = "buy" if n % 2 else "sell"
    return {
        "order": n,
        "sym": f"S{n % 500}",
        "side": side,
        "qty": n % 1000,
        "px": 100 + n % 97 / 4,
        "note": PAD,
    }


def masked_text_frame(payload: bytes) -> bytes:
    """A client's text frame (RFC 6455: clients mask; a zero mask leaves the payload as it is)."""
    length = len(payload)
    if length < 126:
        header = bytes((0x81, 0x80 | length))
    elif length < 65536:
        header = bytes((0x81, 0x80 | 126)) + length.to_bytes(2, "big")
    else:
        header = bytes((0x81, 0x80 | 127)) + length.to_bytes(8, "big")
    return header + b"\x00\x00\x00\x00" + payload


class Dashboard(asyncio.Protocol):
    """One socket of the storm: handshake, the view's command, bytes counted until group_end."""

    def __init__(
        self, port: int, command: bytes, handshaken: asyncio.Future[float], done: asyncio.Future[int]
    ) -> None:
        self.port = port
        self.command = command
        self.handshaken = handshaken
        self.done = done
        self.buffer = b""
        self.received = 0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  (uvloop's is not asyncio's class)
        key = base64.b64encode(os.urandom(16)).decode()
        transport.write(
            f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        if not self.handshaken.done():
            self.buffer += data
            head, found, rest = self.buffer.partition(b"\r\n\r\n")
            if not found:
                return
            if not head.startswith(b"HTTP/1.1 101"):
                self.done.set_exception(RuntimeError(head.decode(errors="replace")))
                return
            self.handshaken.set_result(time.perf_counter())
            self.transport.write(masked_text_frame(self.command))
            self.buffer, data = b"", rest
        self.received += len(data)
        # The end may be split between two reads: look at the end of the last one too.
        if END in self.buffer[-len(END) :] + data and not self.done.done():
            self.done.set_result(self.received)
            self.transport.abort()
        self.buffer = data[-len(END) :]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_exception(ConnectionError(f"closed before group_end: {exc}"))


@dataclass
class Storm:
    cpu_s: float
    wall_s: float
    handshakes_s: float
    megabytes: float
    failed: int
    peak_rss_mb: float  # the server's RSS at its highest during the storm, over its RSS before


async def peak_rss(pid: int, finished: asyncio.Event) -> int:
    """The server's highest RSS, read every 20 ms until ``finished``."""
    peak = rss(pid)
    while not finished.is_set():
        peak = max(peak, rss(pid))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.02):
                await finished.wait()
    return peak


async def storm(url: str, pid: int, sockets: int, command: bytes) -> Storm:
    loop = asyncio.get_running_loop()
    port = urlsplit(url).port
    assert port is not None
    handshakes = [loop.create_future() for _ in range(sockets)]
    ends = [loop.create_future() for _ in range(sockets)]
    rss_before, finished = rss(pid), asyncio.Event()
    sampler = asyncio.create_task(peak_rss(pid, finished))
    cpu_before = cpu_seconds(pid)
    started = time.perf_counter()
    connects = [
        loop.create_connection(lambda h=h, e=e: Dashboard(port, command, h, e), "127.0.0.1", port)  # type: ignore[misc]
        for h, e in zip(handshakes, ends, strict=True)
    ]
    opened = await asyncio.gather(*connects, return_exceptions=True)
    for result, end in zip(opened, ends, strict=True):
        if isinstance(result, BaseException) and not end.done():
            end.set_exception(result)
    received = await asyncio.gather(*ends, return_exceptions=True)
    wall = time.perf_counter() - started
    cpu = cpu_seconds(pid) - cpu_before
    finished.set()
    peak = await sampler
    answered = [h.result() for h in handshakes if h.done() and not h.cancelled() and h.exception() is None]
    for h in handshakes:
        if not h.done():
            h.cancel()
    total = sum(r for r in received if isinstance(r, int))
    failed = sum(1 for r in received if not isinstance(r, int))
    last_handshake = max(answered, default=started) - started
    return Storm(cpu, wall, last_handshake, total / 1e6, failed, (peak - rss_before) / 1e6)


async def fill(url: str, records: int) -> None:
    async with websockets.connect(url, max_size=None) as ws:
        for start in range(0, records, 1000):
            rows = range(start, min(start + 1000, records))
            batch = [{"c": "publish", "t": "orders", "data": row(n)} for n in rows]
            await ws.send(orjson.dumps(batch).decode())
        await ws.send(orjson.dumps({"c": "flush", "cid": "filled"}).decode())
        while b'"cid":"filled"' not in await ws.recv(decode=False):
            pass


async def check_one(url: str, records: int, command: bytes) -> None:
    """One socket reads its whole snapshot with a real client: every row, once."""
    async with websockets.connect(url, max_size=None) as ws:
        await ws.send(command.decode())
        keys: set[str] = set()
        while True:
            messages = orjson.loads(await ws.recv(decode=False))
            for message in messages if isinstance(messages, list) else [messages]:
                if message["c"] == "sow":
                    keys.add(message["k"])
                elif message["c"] == "group_end":
                    if len(keys) != records or message["records"] != records:
                        raise RuntimeError(f"{len(keys)} rows of {records} arrived")
                    return


def encode_rate(records: int) -> float:
    """Rows per second ``orjson.dumps`` encodes, one record at a time (best of five passes)."""
    rows = [row(n) for n in range(records)]
    best = float("inf")
    for _ in range(20):
        started = time.perf_counter()
        for one in rows:
            orjson.dumps(one)
        best = min(best, time.perf_counter() - started)
    return records / best


def figures(
    peers: list[Peer], rounds: int, sockets: int, records: int, options: str = "resume"
) -> list[Figure]:
    raise_open_files_limit()
    command = view_command(options)
    shown = f", o={options}" if options else ""
    benchmark = f"reconnect storm, {sockets:,} sockets x {records:,} rows{shown}"
    results: dict[str, list[Storm]] = {peer.name: [] for peer in peers}
    encoded: list[float] = []
    with tempfile.TemporaryDirectory() as work:
        started = []
        for peer in peers:
            if peer.launcher != "sowpush":
                raise SystemExit(f"{peer.name}: only this server's peers serve snapshots")
            port = free_port()
            (Path(work) / peer.name).mkdir()
            process = serve(CONFIG, Path(work) / peer.name, port, peer.root, peer.pure)
            started.append((peer, process, f"ws://127.0.0.1:{port}/ws"))
        try:
            for _, _, url in started:
                asyncio.run(fill(url, records))
                asyncio.run(check_one(url, records, command))
            for _ in range(rounds):
                encoded.append(encode_rate(records))
                for peer, process, url in started:
                    results[peer.name].append(uvloop.run(storm(url, process.pid, sockets, command)))
        finally:
            for _, process, _ in started:
                stop(process)
    rows = sockets * records
    out: list[Figure] = []
    for name, storms in results.items():
        failed = sum(s.failed for s in storms)
        note = f"{failed} sockets failed" if failed else ""
        out += [
            Figure(benchmark, "server CPU for the storm", name, "s", [s.cpu_s for s in storms], note),
            Figure(benchmark, "rows per server CPU-s", name, "/s", [rows / s.cpu_s for s in storms]),
            Figure(
                benchmark,
                "rows per server CPU-s / rows orjson encodes per s",
                name,
                "ratio",
                [rows / s.cpu_s / e for s, e in zip(storms, encoded, strict=True)],
            ),
            Figure(
                benchmark,
                "wall time to the last group_end",
                name,
                "s",
                [s.wall_s for s in storms],
                "the load client reads every byte on the same 2 cores",
            ),
            Figure(benchmark, "wall time to the last handshake", name, "s", [s.handshakes_s for s in storms]),
            Figure(benchmark, "received", name, "MB", [s.megabytes for s in storms]),
            Figure(benchmark, "server RSS growth at its peak", name, "MB", [s.peak_rss_mb for s in storms]),
        ]
    out.append(Figure(benchmark, "rows orjson encodes per s, one at a time", "orjson", "/s", encoded))
    return out


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--sockets", type=int, default=250)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peers", default="sowpush")
    parser.add_argument("--options", default="resume", help="the view's options (o)")
    args = parser.parse_args()
    peers = [PEERS[name] for name in args.peers.split(",")]
    print(table(figures(peers, args.rounds, args.sockets, args.records, args.options)))


if __name__ == "__main__":
    main()
