"""Slow consumers: 50 sockets, one of them stalled, 200 records updated 300 times each.

    .venv/bin/python bench/slow_consumer.py [--records 200] [--updates 300] [--sockets 50]

Prints the fast sockets' deliveries/s with the stalled socket and in the same run without it
(target: at least 0.9), how many messages the stalled socket gets once it reads again (after
conflation), and the server's peak RSS (target: bounded by the queue limits, not the traffic;
the stalled run is repeated with twice the traffic to show it).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

import orjson
import websockets
from harness import arguments, free_port, serve

MARKER = b'"data":'


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def count(ws: websockets.ClientConnection, expected: int) -> None:
    seen = 0
    while seen < expected:
        seen += (await ws.recv(decode=False)).count(MARKER)


async def drain_stalled(ws: websockets.ClientConnection) -> int:
    seen = 0
    try:
        while True:
            async with asyncio.timeout(2.0):
                seen += (await ws.recv(decode=False)).count(MARKER)
    except TimeoutError:
        return seen


async def scenario(
    port: int, sockets: int, stalled: bool, records: int, updates: int
) -> tuple[float, int | None]:
    url = f"ws://127.0.0.1:{port}/ws"
    fast = [await websockets.connect(url, max_size=None, compression=None) for _ in range(sockets - 1)]
    slow = await websockets.connect(url, max_size=None, compression=None, max_queue=1) if stalled else None
    publisher = await websockets.connect(url, max_size=None, compression=None)
    for index, ws in enumerate([*fast, *([slow] if slow else [])]):
        await ws.send(orjson.dumps({"c": "subscribe", "t": "bench", "sub_id": index, "cid": index}).decode())
        await ws.recv()
    frames = [
        orjson.dumps(
            [
                {
                    "c": "publish",
                    "t": "bench",
                    "data": {
                        "id": n,
                        "sym": "MSFT",
                        "px": 100 + update / 100,
                        "qty": update,
                        "side": "B",
                        "trader": f"t{n % 9}",
                        "venue": "XNAS",
                        "status": "open",
                        "seq": update,
                        "note": "slow consumer benchmark",
                    },
                }
                for n in range(records)
            ]
        ).decode()
        for update in range(updates)
    ]
    counters = [asyncio.create_task(count(ws, records * updates)) for ws in fast]
    started = time.perf_counter()
    for frame in frames:
        await publisher.send(frame)
    await asyncio.gather(*counters)
    rate = (sockets - 1) * records * updates / (time.perf_counter() - started)
    received = await drain_stalled(slow) if slow else None
    for ws in [*fast, publisher, *([slow] if slow else [])]:
        await ws.close()
    return rate, received


def run(sockets: int, stalled: bool, records: int, updates: int) -> tuple[float, int | None, float]:
    port = free_port()
    with tempfile.TemporaryDirectory() as work:
        config = '[[topic]]\nname = "bench"\nkey = ["/id"]\nconflation = "conflate"\n'
        process = serve(config, Path(work), port)
        try:
            rate, received = asyncio.run(scenario(port, sockets, stalled, records, updates))
            return rate, received, peak_rss_mb(process.pid)
        finally:
            process.terminate()
            process.wait()


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--records", type=int, default=200)
    parser.add_argument("--updates", type=int, default=300)
    parser.add_argument("--sockets", type=int, default=50)
    args = parser.parse_args()
    published = args.records * args.updates
    print(
        f"{args.sockets} sockets, {args.records} records x {args.updates} updates = {published:,} messages "
        "each; queue limits 4 MiB / 50,000 messages (the defaults)"
    )
    calm_rate, _, calm_rss = run(args.sockets, False, args.records, args.updates)
    print(
        f"no stalled socket:    {calm_rate:>12,.0f} deliveries/s to {args.sockets - 1} fast sockets, "
        f"peak RSS {calm_rss:.0f} MB"
    )
    rate, received, rss = run(args.sockets, True, args.records, args.updates)
    print(
        f"one stalled socket:   {rate:>12,.0f} deliveries/s to {args.sockets - 1} fast sockets, "
        f"peak RSS {rss:.0f} MB"
    )
    print(f"ratio (target >= 0.9): {rate / calm_rate:.2f}")
    print(
        f"stalled socket, once it reads again: {received:,} messages of {published:,} published "
        "(what the kernel buffers held, then one conflated update per record)"
    )
    _, received_2x, rss_2x = run(args.sockets, True, args.records, args.updates * 2)
    print(
        f"twice the traffic, stalled: peak RSS {rss_2x:.0f} MB, stalled socket got {received_2x:,} "
        f"of {published * 2:,}"
    )


if __name__ == "__main__":
    main()
