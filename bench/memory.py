"""Memory and connects: what an idle subscribed socket and a SOW record cost the server, and how
fast sockets connect. Each round starts its server afresh; rounds are interleaved (A, B, C, A, ...).

- Per idle socket (sowpush, relay, node-ws): one warm-up socket opens and closes, the server's RSS
  is read, ``--sockets`` sockets open (sowpush's each ``subscribe``), 200 at a time; after 1 s
  (``--idle-s``; past 20 s, sowpush's idle sockets have let go of their writer tasks) the RSS is
  read again. The same run gives connects per wall second and server CPU-s per 1,000
  connects. With the relay, sowpush's sockets also open without subscribing, as the relay's
  do: connects against the relay's per server CPU-s, the handshake alone and with a subscribe.
  One more run opens ``--max-sockets`` sowpush sockets and projects 100,000.
- Per SOW record: ``--records`` 10-field records, distinct keys, in frames of 500, then a
  ``flush``: the RSS growth per record, and its ratio to the record's JSON size.

    .venv/bin/python bench/memory.py [--peers sowpush,relay,node-ws] [--rounds 3] [--sockets 2000]
                                     [--max-sockets 10000] [--records 100000] [--idle-s 1]

RSS is from /proc/PID/smaps_rollup: the kernel's socket buffers are not in it. The open-files limit
is raised to its hard limit (the servers inherit it); failed connects are shown, not retried.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import resource
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import orjson
import uvloop
from figures import Figure, table
from harness import arguments, cpu_seconds
from load import Client, connect, encode, record, subscribe
from peers import PEERS, Peer
from rounds import CLIENT_BOUND

BATCH = 200  # sockets connecting at once
SETTLE_S = 1.0  # after the last connect or publish, before the RSS is read
FRAME = 500  # publishes per frame when filling the SOW
PROJECTED = 100_000
HANDSHAKE_ONLY = "sowpush, handshake only"
T = TypeVar("T")


def raise_open_files_limit() -> int:
    """The soft open-files limit raised to the hard one (the servers started later inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def rss(pid: int) -> int:
    """Resident bytes of process ``pid``."""
    try:
        lines = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    except FileNotFoundError:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    for line in lines:
        name, _, value = line.partition(":")
        if name in ("Rss", "VmRSS"):
            return int(value.split()[0]) * 1024
    raise RuntimeError(f"no RSS for process {pid}")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@dataclass
class Opened:
    wanted: int
    opened: int
    wall_s: float
    server_cpu_s: float
    client_cpu_s: float
    baseline: int  # RSS after the warm-up socket
    after: int  # RSS with every socket open
    error: str = ""  # the first failure, if any

    @property
    def per_socket(self) -> float:
        return (self.after - self.baseline) / self.opened if self.opened else float("nan")

    def per_1000(self, cpu_s: float) -> float:
        return cpu_s * 1e3 / self.opened if self.opened else float("nan")

    @property
    def note(self) -> str:
        if self.error:
            return f"{self.wanted - self.opened} of {self.wanted} connects failed: {self.error}"
        if self.client_cpu_s / self.wall_s > CLIENT_BOUND:
            return "load client near one core: the wall rate is the client's"
        return ""


async def open_one(url: str, dialect: str, index: int) -> Client:
    async def both() -> Client:
        client = await connect(url, dialect)
        await subscribe(client, dialect, index, "subscribe", None)
        return client

    async with asyncio.timeout(30):
        return await both()


async def open_sockets(
    peer: Peer, url: str, process: subprocess.Popen[bytes], count: int, idle_s: float = SETTLE_S
) -> Opened:
    """Warm up with one socket, read the baseline, open ``count`` sockets ``BATCH`` at a time, leave
    them idle ``idle_s``, read the RSS again, close them. (Past twice the server's WRITER_IDLE_S,
    server/runtime/hub.py, an idle socket has let go of its writer task.)"""
    pid = process.pid
    warm = await open_one(url, peer.dialect, 0)
    warm.transport.disconnect()
    await asyncio.sleep(SETTLE_S)
    baseline = rss(pid)
    clients: list[Client] = []
    errors: list[BaseException] = []
    spare = [os.open(os.devnull, os.O_RDONLY) for _ in range(4)]  # to read /proc if we run out
    cpu, client_cpu, started = cpu_seconds(pid), time.process_time(), time.perf_counter()
    for first in range(0, count, BATCH):
        batch = range(first, min(first + BATCH, count))
        results = await asyncio.gather(
            *(open_one(url, peer.dialect, i) for i in batch), return_exceptions=True
        )
        clients += [result for result in results if not isinstance(result, BaseException)]
        errors += [result for result in results if isinstance(result, BaseException)]
    wall, client_cpu = time.perf_counter() - started, time.process_time() - client_cpu
    for fd in spare:
        os.close(fd)
    cpu = cpu_seconds(pid) - cpu if process.poll() is None else float("nan")
    await asyncio.sleep(idle_s)
    after = rss(pid) if process.poll() is None else 0
    error = f"{type(errors[0]).__name__}: {errors[0]}"[:120] if errors else ""
    if process.poll() is not None:
        error = f"server exited with {process.returncode}; " + error
    for client in clients:
        client.transport.disconnect()
    await asyncio.sleep(0.1)
    return Opened(count, len(clients), wall, cpu, client_cpu, baseline, after, error)


def fresh(peer: Peer, run: Callable[[subprocess.Popen[bytes], str], Awaitable[T]]) -> T:
    """``run(process, url)`` against a server started for it, stopped at the end."""
    with tempfile.TemporaryDirectory() as work:
        process, url = peer.start(Path(work) / peer.name)
        try:
            return uvloop.run(run(process, url))
        finally:
            stop(process)


def socket_round(peer: Peer, count: int, idle_s: float = SETTLE_S) -> Opened:
    return fresh(peer, lambda process, url: open_sockets(peer, url, process, count, idle_s))


async def fill_sow(url: str, pid: int, records: int) -> tuple[int, int]:
    """RSS before and after ``records`` distinct records are published and flushed."""
    publisher = await connect(url, "sowpush")

    async def flush(cid: int) -> None:
        publisher.listener.opened = asyncio.get_running_loop().create_future()
        publisher.send(orjson.dumps({"c": "flush", "cid": cid}))
        async with asyncio.timeout(300):
            ack = await publisher.listener.opened
        publisher.listener.opened = None
        if b'"failure"' in ack or f'"cid":{cid}'.encode() not in ack:
            raise RuntimeError(f"publishing failed: {ack[:300]!r}")

    await flush(0)
    await asyncio.sleep(SETTLE_S)
    baseline = rss(pid)
    for first in range(0, records, FRAME):
        updates = [record(n, records) for n in range(first, min(first + FRAME, records))]
        for message in encode("sowpush", True, updates):
            publisher.send(message)
        await asyncio.sleep(0)  # let picows write as the frames are made
    await flush(1)
    await asyncio.sleep(SETTLE_S)
    after = rss(pid)
    publisher.transport.disconnect()
    await asyncio.sleep(0.1)
    return baseline, after


def record_round(records: int) -> tuple[int, int]:
    return fresh(PEERS["sowpush"], lambda process, url: fill_sow(url, process.pid, records))


def notes(runs: list[Opened], failures_only: bool = False) -> str:
    return "; ".join(dict.fromkeys(run.note for run in runs if run.note and (run.error or not failures_only)))


def connect_figures(benchmark: str, name: str, runs: list[Opened]) -> list[Figure]:
    """Connects per wall second, and the server's and the load client's CPU-s per 1,000 connects."""
    rate = Figure(benchmark, "connects per wall second", name, "/s", [r.opened / r.wall_s for r in runs])
    rate.note = notes(runs)
    server = [r.per_1000(r.server_cpu_s) for r in runs]
    client = [r.per_1000(r.client_cpu_s) for r in runs]
    return [
        rate,
        Figure(benchmark, "server CPU-s per 1,000 connects", name, "CPU-s", server),
        Figure(benchmark, "load client CPU-s per 1,000 connects", name, "CPU-s", client),
    ]


def figures(
    rounds: int,
    sockets: int,
    max_sockets: int,
    records: int,
    peers: str = "sowpush,relay,node-ws",
    idle_s: float = SETTLE_S,
) -> list[Figure]:
    raise_open_files_limit()
    servers = {name: PEERS[name] for name in peers.split(",")}
    if "sowpush" in servers and "relay" in servers:
        # A connect alone, as the relay's are (its sockets send nothing): the handshake.
        servers[HANDSHAKE_ONLY] = dataclasses.replace(PEERS["sowpush"], dialect="relay")
    runs: dict[str, list[Opened]] = {name: [] for name in servers}
    for _ in range(rounds):  # interleaved: A, B, C, A, B, C, ...
        for name, got in runs.items():
            got.append(socket_round(servers[name], sockets, idle_s))
    idle = f"memory per idle subscribed socket, {sockets:,} sockets, idle {idle_s:g} s"
    out = [
        Figure(
            idle,
            "RSS growth per socket",
            name,
            "bytes",
            [r.per_socket for r in got],
            notes(got, failures_only=True),
        )
        for name, got in runs.items()
        if name != HANDSHAKE_ONLY  # (not subscribed)
    ]
    connects = f"connects (sowpush: and subscribes), {sockets:,} sockets, {BATCH} at a time"
    for name, got in runs.items():
        out += connect_figures(connects, name, got)
    if HANDSHAKE_ONLY in runs:  # per server CPU-s, round by round
        for mine, measure in ((HANDSHAKE_ONLY, "connects"), ("sowpush", "connects and subscribes")):
            cost = zip(runs[mine], runs["relay"], strict=True)
            ratio = [r.per_1000(r.server_cpu_s) / s.per_1000(s.server_cpu_s) for s, r in cost]
            out.append(Figure(connects, f"{measure} per server CPU-s, sowpush / relay", "ratio", "x", ratio))
    if max_sockets:
        big = socket_round(PEERS["sowpush"], max_sockets)
        most = f"sowpush with {max_sockets:,} sockets (one run)"
        projected = (big.baseline + PROJECTED * big.per_socket) / 1e6
        out += [Figure(most, "sockets open", "sowpush", "", [big.opened], big.note)]
        out += connect_figures(most, "sowpush", [big])
        out += [
            Figure(most, "RSS growth per socket", "sowpush", "bytes", [big.per_socket]),
            Figure(most, "server RSS, after the warm-up socket", "sowpush", "MB", [big.baseline / 1e6]),
            Figure(most, "server RSS, every socket open", "sowpush", "MB", [big.after / 1e6]),
            Figure(most, f"server RSS at {PROJECTED:,} sockets (projected)", "sowpush", "MB", [projected]),
        ]
    if records:
        json_size = sum(len(orjson.dumps(record(n, records))) for n in range(records)) / records
        grown = [(after - before) / records for before, after in map(record_round, [records] * rounds)]
        sow = f"memory per SOW record, {records:,} records of 10 fields"
        out += [
            Figure(sow, "RSS growth per record", "sowpush", "bytes", grown),
            Figure(sow, "JSON size of a record", "sowpush", "bytes", [json_size]),
            Figure(sow, "RSS growth / JSON size", "sowpush", "x JSON", [g / json_size for g in grown]),
        ]
    return out


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--peers", default="sowpush,relay,node-ws")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sockets", type=int, default=2_000)
    parser.add_argument("--max-sockets", type=int, default=10_000)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--idle-s", type=float, default=SETTLE_S, help="idle time before the RSS is read")
    args = parser.parse_args()
    limit = raise_open_files_limit()
    print(f"{os.cpu_count()} cores, open-files limit {limit:,}, {args.rounds} rounds, a fresh server each")
    print(table(figures(args.rounds, args.sockets, args.max_sockets, args.records, args.peers, args.idle_s)))


if __name__ == "__main__":
    main()
