"""Background conflation: slow consumers of a flapping view, with it and without it.

    .venv/bin/python bench/background_conflation.py [--rounds 3] [--records 5000] [--frames 1000]

A real server (queue limits 20,000 messages / 4 MiB). A publisher flips ``in`` between 0 and 1
on ``--records`` records, frames of 100 publishes, as fast as the server takes them. 10 slow
sockets hold ``sow_and_subscribe`` with ``/in = 1`` and ``oof`` and read one frame every 20 ms;
5 fast sockets hold the same view and read everything. With ``background_conflation`` on and
off, in interleaved rounds: the slow sockets' 4001 closes, the peak of ``push_queued_bytes``
(sampled every 10 ms from /metrics), the server's peak RSS, the fast sockets' deliveries per
second and the server's CPU time for the same traffic.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

import orjson
import websockets
from harness import arguments, cpu_seconds, free_port, serve

SLOW, FAST = 10, 5
MARKER = b'"c":"'


def proc_status(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return float("nan")


def queued_bytes(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("push_queued_bytes "):
                return float(line.split()[1])
    return 0.0


async def subscribe(url: str) -> websockets.ClientConnection:
    ws = await websockets.connect(url, max_size=None)
    command = {
        "c": "sow_and_subscribe",
        "t": "flap",
        "sub_id": "v",
        "filter": "/in = 1",
        "o": "oof",
        "cid": 1,
    }
    await ws.send(orjson.dumps(command).decode())
    return ws


async def slow_reader(ws: websockets.ClientConnection, closes: list[int]) -> None:
    try:
        while True:
            await ws.recv(decode=False)
            await asyncio.sleep(0.02)
    except websockets.ConnectionClosed as closed:
        if closed.rcvd is not None and closed.rcvd.code == 4001:
            closes.append(4001)


async def fast_reader(ws: websockets.ClientConnection, done: asyncio.Event, seen: list[int]) -> None:
    with contextlib.suppress(websockets.ConnectionClosed):
        while True:
            frame = await ws.recv(decode=False)
            seen[0] += frame.count(MARKER)
            if b'"id":-1' in frame:
                done.set()


async def sample(port: int, stop: asyncio.Event, peak: list[float]) -> None:
    while not stop.is_set():
        value = await asyncio.to_thread(queued_bytes, port)
        peak[0] = max(peak[0], value)
        await asyncio.sleep(0.01)


async def scenario(port: int, pid: int, records: int, frames: int) -> dict[str, float]:
    url = f"ws://127.0.0.1:{port}/ws"
    publisher = await websockets.connect(url, max_size=None)
    slow = [await subscribe(url) for _ in range(SLOW)]
    fast = [await subscribe(url) for _ in range(FAST)]
    closes: list[int] = []
    done = [asyncio.Event() for _ in fast]
    seen = [[0] for _ in fast]
    tasks = [asyncio.create_task(slow_reader(ws, closes)) for ws in slow]
    tasks += [asyncio.create_task(fast_reader(ws, d, s)) for ws, d, s in zip(fast, done, seen, strict=True)]
    stop, peak = asyncio.Event(), [0.0]
    sampler = asyncio.create_task(sample(port, stop, peak))
    cpu_before, started = cpu_seconds(pid), time.perf_counter()
    for n in range(frames):
        # Each visit to a record flips it into or out of the view.
        batch = [
            {"c": "publish", "t": "flap", "data": {"id": m % records, "in": m // records % 2, "n": m}}
            for m in range(n * 100, n * 100 + 100)
        ]
        await publisher.send(orjson.dumps(batch).decode())
    # The marker goes out after everything: each fast socket stops when it has it.
    await publisher.send(orjson.dumps({"c": "publish", "t": "flap", "data": {"id": -1, "in": 1}}).decode())
    async with asyncio.timeout(120):
        await asyncio.gather(*(d.wait() for d in done))
    elapsed = time.perf_counter() - started
    cpu = cpu_seconds(pid) - cpu_before
    await asyncio.sleep(0.5)
    stop.set()
    await sampler
    for task in tasks:
        task.cancel()
    for ws in [publisher, *slow, *fast]:
        await ws.close()
    return {
        "closes": len(closes),
        "peak_queued_mb": peak[0] / 2**20,
        "peak_rss_mb": proc_status(pid, "VmHWM:"),
        "fast_per_s": sum(s[0] for s in seen) / elapsed,
        "cpu_s": cpu,
    }


def run(background: bool, records: int, frames: int) -> dict[str, float]:
    port = free_port()
    config = (
        "[server]\nqueue_max_messages = 20000\n"
        f"background_conflation = {'true' if background else 'false'}\n"
        '[[topic]]\nname = "flap"\nkey = ["/id"]\nconflation = "conflate"\n'
    )
    with tempfile.TemporaryDirectory() as work:
        process = serve(config, Path(work), port)
        try:
            return asyncio.run(scenario(port, process.pid, records, frames))
        finally:
            process.terminate()
            process.wait()


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--frames", type=int, default=1000)
    args = parser.parse_args()
    results: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    for _ in range(args.rounds):
        for background in (False, True):  # interleaved
            results[background].append(run(background, args.records, args.frames))
    print(
        f"{SLOW} slow + {FAST} fast sockets, {args.records} flapping records, "
        f"{args.frames} frames of 100 publishes, {args.rounds} rounds (min / median / max)"
    )
    for label in ("closes", "peak_queued_mb", "peak_rss_mb", "fast_per_s", "cpu_s"):
        for background in (False, True):
            values = [r[label] for r in results[background]]
            name = f"{label} ({'background' if background else 'at overflow only'})"
            low, middle, high = min(values), statistics.median(values), max(values)
            print(f"  {name:<44} {low:>12,.1f} {middle:>12,.1f} {high:>12,.1f}")


if __name__ == "__main__":
    main()
