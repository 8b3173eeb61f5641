"""Fan-out throughput: 20 subscribers, one publisher sending 20,000 keyed updates of a 10-field
record in frames of 200. Prints deliveries per second for this server and for a ten-line
Starlette broadcast of the same frames (same uvicorn stack, same load client), and their ratio.

    .venv/bin/python bench/fanout.py [--subscribers 20] [--updates 20000] [--frame 200] [--runs 3]

Each server runs in its own process; the load client runs in this one and counts messages
without parsing them (bytes.count), so that it stays cheap next to the servers.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import websockets
from harness import arguments, free_port, serve, start

MARKER = b'"data":'


def start_push_server(work: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    return serve('[[topic]]\nname = "bench"\nkey = ["/id"]\n', work, port), port


def start_baseline() -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "bench.broadcast_baseline:app",
        "--port",
        str(port),
        "--ws",
        "websockets-sansio",
        "--loop",
        "uvloop",
        "--http",
        "httptools",
        "--log-level",
        "warning",
        "--no-access-log",
        "--ws-per-message-deflate",
        "false",
    ]
    return start(command, port), port


def frames(updates: int, frame_size: int, records: int = 200) -> list[bytes]:
    out = []
    for first in range(0, updates, frame_size):
        batch = [
            {
                "c": "publish",
                "t": "bench",
                "data": {
                    "id": n % records,
                    "sym": "MSFT",
                    "px": 101.25 + n % 7,
                    "qty": n,
                    "side": "B",
                    "trader": "t" + str(n % 13),
                    "venue": "XNAS",
                    "ts": 1_800_000_000 + n,
                    "status": "open",
                    "note": "fan-out benchmark",
                },
            }
            for n in range(first, min(first + frame_size, updates))
        ]
        out.append(orjson.dumps(batch))
    return out


async def count_until(ws: websockets.ClientConnection, expected: int) -> None:
    seen = 0
    while seen < expected:
        frame = await ws.recv(decode=False)
        seen += frame.count(MARKER)


async def run_once(
    port: int, subscribe: bool, subscribers: int, payload: list[bytes], expected: int
) -> float:
    url = f"ws://127.0.0.1:{port}/ws"
    subs = [await websockets.connect(url, max_size=None, compression=None) for _ in range(subscribers)]
    publisher = await websockets.connect(url, max_size=None, compression=None)
    if subscribe:
        for index, ws in enumerate(subs):
            await ws.send(
                orjson.dumps({"c": "subscribe", "t": "bench", "sub_id": index, "cid": index}).decode()
            )
            await ws.recv()
    counters = [asyncio.create_task(count_until(ws, expected)) for ws in subs]
    started = time.perf_counter()
    for frame in payload:
        await publisher.send(frame.decode())
    await asyncio.gather(*counters)
    elapsed = time.perf_counter() - started
    for ws in [*subs, publisher]:
        await ws.close()
    return subscribers * expected / elapsed


def measure(name: str, process: subprocess.Popen[bytes], port: int, runs: int, **kwargs: object) -> float:
    try:
        rates = [asyncio.run(run_once(port, **kwargs)) for _ in range(runs)]  # type: ignore[arg-type]
    finally:
        process.terminate()
        process.wait()
    best = max(rates)
    print(f"{name:<28} {best:>12,.0f} deliveries/s   (runs: {', '.join(f'{r:,.0f}' for r in rates)})")
    return best


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--subscribers", type=int, default=20)
    parser.add_argument("--updates", type=int, default=20_000)
    parser.add_argument("--frame", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    payload = frames(args.updates, args.frame)
    common = {"subscribers": args.subscribers, "payload": payload, "expected": args.updates}
    print(
        f"{args.subscribers} subscribers, {args.updates:,} updates of a 10-field record in frames of "
        f"{args.frame}, best of {args.runs}; {os.cpu_count()} cores shared by server and load client"
    )
    with tempfile.TemporaryDirectory() as work:
        process, port = start_push_server(Path(work))
        ours = measure("sowpush (SOW + fan-out)", process, port, args.runs, subscribe=True, **common)
    process, port = start_baseline()
    baseline = measure("Starlette broadcast", process, port, args.runs, subscribe=False, **common)
    print(f"{'ratio':<28} {ours / baseline:>12.2f}")


if __name__ == "__main__":
    main()
