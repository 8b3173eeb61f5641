"""The cluster (docs/protocol.md, Cluster) on this machine: what the Redis hop costs and what more nodes give.

    .venv/bin/python bench/cluster.py [--sockets 200] [--updates 2000] [--rounds 3]
                                      [--samples 1000] [--catchup-records 1000000]

1. Fan-out: one publisher sends ``updates`` keyed updates (frames of 100) to a topic that
   ``sockets`` subscribers on the nodes receive, spread evenly. Setups, in interleaved rounds: a
   single server with no Redis, and clusters of 1, 2 and 4 nodes on one Redis. Deliveries per
   second (min/median/max over the rounds), and the CPU seconds the servers and Redis spent.
2. Latency: one publish every 2 ms on the first node, timed to a subscriber on the last (the same
   node for the single server): p50 and p99 of publish-to-deliver.
3. Catch-up: ``catchup-records`` records published into a one-node cluster, a snapshot written,
   then the time a new node takes from start to ``/healthz`` 200.

Everything, the load client included, shares this machine's cores: the figures say so.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import orjson
import websockets
from figures import Figure, table
from harness import arguments, cpu_seconds, free_port, serve

MARKER = b'"data":'
TOPIC = '[[topic]]\nname = "bench"\nkey = ["/id"]\n'


class Redis:
    def __init__(self, work: Path) -> None:
        self.port = free_port()
        redis = shutil.which("redis-server")
        if redis is None:
            raise SystemExit("bench/cluster.py needs redis-server (apt-get install redis-server)")
        command = [redis, "--port", str(self.port), "--save", "", "--appendonly", "yes"]
        command += ["--appendfsync", "always", "--dir", str(work)]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        wait_http_or_port(self.port)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


def wait_http_or_port(port: int, health: bool = False) -> None:
    deadline = time.time() + 600
    while time.time() < deadline:
        try:
            if health:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                    return
            else:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return
        except (urllib.error.URLError, OSError):
            time.sleep(0.05)
    raise RuntimeError(f"nothing ready on port {port}")


class Setup:
    """A single server (``redis`` None) or ``nodes`` cluster nodes on ``redis``."""

    def __init__(self, work: Path, nodes: int, redis: Redis | None, name: str, extra: str = "") -> None:
        self.name = name
        self.processes: list[subprocess.Popen[bytes]] = []
        self.ports: list[int] = []
        section = ""
        if redis is not None:
            section = f'\n[cluster]\nredis_url = "redis://127.0.0.1:{redis.port}/0"\nname = "{name}"\n{extra}'
        for index in range(nodes):
            port = free_port()
            node_dir = Path(tempfile.mkdtemp(prefix=f"{name}-{index}-", dir=work))
            self.processes.append(serve(TOPIC + section, node_dir, port))
            wait_http_or_port(port, health=True)
            self.ports.append(port)

    def urls(self) -> list[str]:
        return [f"ws://127.0.0.1:{port}/ws" for port in self.ports]

    def cpu(self) -> float:
        return sum(cpu_seconds(p.pid) for p in self.processes)

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait()


def frames(updates: int, start: int) -> list[str]:
    out = []
    for first in range(0, updates, 100):
        batch = [
            {"c": "publish", "t": "bench", "data": {"id": n % 500, "px": 101.25 + n % 7, "qty": n + start}}
            for n in range(first, min(first + 100, updates))
        ]
        out.append(orjson.dumps(batch).decode())
    return out


async def count_until(ws: websockets.ClientConnection, expected: int) -> None:
    seen = 0
    while seen < expected:
        seen += (await ws.recv(decode=False)).count(MARKER)


async def fan_out(
    setup: Setup, sockets: int, updates: int, start: int, redis: Redis | None
) -> tuple[float, float]:
    """Deliveries per wall second, and the CPU seconds the nodes and Redis spent delivering them."""
    urls = setup.urls()
    subscribers = []
    for index in range(sockets):
        ws = await websockets.connect(urls[index % len(urls)], max_size=None, compression=None)
        await ws.send(orjson.dumps({"c": "subscribe", "t": "bench", "sub_id": "s", "cid": 1}).decode())
        await ws.recv()
        subscribers.append(ws)
    publisher = await websockets.connect(urls[0], max_size=None, compression=None)
    counters = [asyncio.create_task(count_until(ws, updates)) for ws in subscribers]
    cpu = setup.cpu() + (cpu_seconds(redis.process.pid) if redis is not None else 0.0)
    began = time.perf_counter()
    for frame in frames(updates, start):
        await publisher.send(frame)
    await asyncio.gather(*counters)
    elapsed = time.perf_counter() - began
    cpu = setup.cpu() + (cpu_seconds(redis.process.pid) if redis is not None else 0.0) - cpu
    for ws in [*subscribers, publisher]:
        await ws.close()
    return sockets * updates / elapsed, cpu


async def latency(setup: Setup, samples: int) -> list[float]:
    urls = setup.urls()
    receiver = await websockets.connect(urls[-1], max_size=None, compression=None)
    await receiver.send(orjson.dumps({"c": "subscribe", "t": "bench", "sub_id": "l", "cid": 1}).decode())
    await receiver.recv()
    sender = await websockets.connect(urls[0], max_size=None, compression=None)
    delays: list[float] = []

    async def receive() -> None:
        while len(delays) < samples:
            for message in orjson.loads(await receiver.recv()):
                if message.get("c") == "p":
                    delays.append(time.perf_counter() - message["data"]["sent"])

    task = asyncio.create_task(receive())
    for n in range(samples):
        data = {"id": n % 50, "sent": time.perf_counter()}
        await sender.send(orjson.dumps({"c": "publish", "t": "bench", "data": data}).decode())
        await asyncio.sleep(0.002)
    async with asyncio.timeout(60):
        await task
    await sender.close()
    await receiver.close()
    return sorted(delays)


def bench_fan_out(work: Path, redis: Redis, sockets: int, updates: int, rounds: int) -> list[Figure]:
    shapes = [("single (no Redis)", 1, None), ("cluster, 1 node", 1, redis)]
    shapes += [("cluster, 2 nodes", 2, redis), ("cluster, 4 nodes", 4, redis)]
    setups = [Setup(work, n, r, f"fan{i}") for i, (_, n, r) in enumerate(shapes)]
    benchmark = f"cluster fan-out: {updates:,} updates to {sockets} sockets spread over the nodes"
    rates = {name: Figure(benchmark, "deliveries per wall second", name, "/s") for name, _, _ in shapes}
    cpu = {
        name: Figure(benchmark, "deliveries per CPU-s of nodes and Redis", name, "/s")
        for name, _, _ in shapes
    }
    try:
        for round_index in range(rounds):
            for (name, _, uses_redis), setup in zip(shapes, setups, strict=True):
                rate, used = asyncio.run(fan_out(setup, sockets, updates, round_index * updates, uses_redis))
                rates[name].values.append(rate)
                cpu[name].values.append(sockets * updates / used)
    finally:
        for setup in setups:
            setup.stop()
    return [figure for name, _, _ in shapes for figure in (rates[name], cpu[name])]


def bench_latency(work: Path, redis: Redis, samples: int) -> list[Figure]:
    benchmark = f"cluster latency: {samples} publishes at 500/s, publish to delivery"
    out = []
    for name, nodes, uses in (("single (no Redis)", 1, None), ("cluster, across nodes", 2, redis)):
        setup = Setup(work, nodes, uses, f"lat{nodes}")
        try:
            delays = asyncio.run(latency(setup, samples))
        finally:
            setup.stop()
        p50, p99 = delays[len(delays) // 2], delays[int(len(delays) * 0.99)]
        out += [
            Figure(benchmark, "p50", name, "ms", [p50 * 1000]),
            Figure(benchmark, "p99", name, "ms", [p99 * 1000]),
        ]
    return out


async def publish_many(url: str, records: int) -> None:
    ws = await websockets.connect(url, max_size=None, compression=None)
    for first in range(0, records, 1000):
        batch = [
            {"c": "publish", "t": "bench", "data": {"id": n, "px": n * 0.5, "sym": f"S{n % 997}"}}
            for n in range(first, min(first + 1000, records))
        ]
        batch[-1]["cid"] = first
        await ws.send(orjson.dumps(batch).decode())
        while True:
            message = orjson.loads(await ws.recv())
            if any(m.get("cid") == first for m in (message if isinstance(message, list) else [message])):
                break
    await ws.close()


def bench_catch_up(work: Path, redis: Redis, records: int) -> list[Figure]:
    extra = 'snapshot_interval = "2s"\n'
    first = Setup(work, 1, redis, "catchup", extra)
    try:
        began = time.perf_counter()
        asyncio.run(publish_many(first.urls()[0], records))
        loaded = time.perf_counter() - began
        time.sleep(6)  # a snapshot covers them (written every 2 s)
        began = time.perf_counter()
        second = Setup(work, 1, redis, "catchup", extra)
        ready = time.perf_counter() - began
        second.stop()
    finally:
        first.stop()
    benchmark = f"cluster catch-up: {records:,} records"
    return [
        Figure(benchmark, "published through the log", "cluster, 1 node", "s", [loaded]),
        Figure(benchmark, "a new node: start to /healthz 200", "cluster, 1 node", "s", [ready]),
    ]


def figures(sockets: int, updates: int, rounds: int, samples: int, catchup_records: int) -> list[Figure]:
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        redis = Redis(work)
        try:
            out = bench_fan_out(work, redis, sockets, updates, rounds)
            out += bench_latency(work, redis, samples)
            if catchup_records:
                out += bench_catch_up(work, redis, catchup_records)
            return out
        finally:
            redis.stop()


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--sockets", type=int, default=200)
    parser.add_argument("--updates", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--catchup-records", type=int, default=1_000_000)
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, shared by the nodes, Redis and this load client")
    print(table(figures(args.sockets, args.updates, args.rounds, args.samples, args.catchup_records)))


if __name__ == "__main__":
    main()
