"""Durability: publishes/s with persisted acks from one and four publishers, and restart time.

    .venv/bin/python bench/durable.py [--publishes 200000] [--records 1000000] [--rounds 3]

Each publisher logs on with its own client name and sends frames of 500 durable publishes with
sequence numbers, asking for persisted acks; the clock stops when every publisher has its last
sequence acknowledged as persisted (batched acks). Restart: a SOW of ``--records`` records is
built, then the server is stopped cleanly (it writes a snapshot) and killed with SIGKILL (the
log tail is replayed), and the time until it listens again is measured for each.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import orjson
import websockets
from figures import Figure, table
from harness import arguments, free_port
from harness import serve as serve_config

FRAME = 500


def serve(work: Path, port: int) -> subprocess.Popen[bytes]:
    return serve_config('[[topic]]\nname = "orders"\nkey = ["/id"]\ndurable = true\n', work, port)


def frames(publisher: int, count: int, offset: int = 0) -> list[str]:
    out = []
    for first in range(1, count + 1, FRAME):
        out.append(
            orjson.dumps(
                [
                    {
                        "c": "publish",
                        "t": "orders",
                        "s": seq,
                        "a": "persisted",
                        "data": {
                            "id": offset + publisher * count + seq,
                            "sym": "MSFT",
                            "qty": seq % 1000,
                            "px": 101.25,
                            "side": "B",
                            "trader": f"t{seq % 17}",
                            "status": "open",
                        },
                    }
                    for seq in range(first, min(first + FRAME, count + 1))
                ]
            ).decode()
        )
    return out


async def publisher(port: int, name: str, payload: list[str], last: int) -> None:
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None, compression=None) as ws:
        await ws.send(orjson.dumps({"c": "logon", "client_name": name, "cid": "l"}).decode())
        await ws.recv()

        async def send() -> None:
            for frame in payload:
                await ws.send(frame)

        sending = asyncio.create_task(send())
        persisted = 0
        while persisted < last:
            for message in orjson.loads(await ws.recv()):
                if message.get("a") == "persisted":
                    persisted = max(persisted, message.get("s", 0))
                elif message.get("status") == "failure":
                    raise RuntimeError(message)
        await sending


async def throughput(port: int, publishers: int, total: int, offset: int) -> float:
    count = total // publishers
    payloads = [frames(p, count, offset) for p in range(publishers)]
    started = time.perf_counter()
    await asyncio.gather(
        *(publisher(port, f"bench-{offset}-{p}", payloads[p], count) for p in range(publishers))
    )
    return publishers * count / (time.perf_counter() - started)


def restart_seconds(work: Path, port: int) -> float:
    started = time.perf_counter()
    process = serve(work, port)
    elapsed = time.perf_counter() - started
    process.send_signal(signal.SIGKILL)
    process.wait()
    return elapsed


def figures(publishes: int, records: int, rounds: int = 3) -> list[Figure]:
    rates = {
        count: Figure("durable publishes", f"{count} publisher(s), persisted acks", "sowpush", "/s")
        for count in (1, 4)
    }
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        port = free_port()
        process = serve(work, port)
        try:
            for round_index in range(rounds):
                for publishers, figure in rates.items():
                    offset = (round_index * 10 + publishers) * 10_000_000
                    figure.values.append(asyncio.run(throughput(port, publishers, publishes, offset)))
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait()
    out = list(rates.values())
    benchmark = f"restart with a SOW of {records:,} durable records"
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        port = free_port()
        process = serve(work, port)
        started = time.perf_counter()
        asyncio.run(throughput(port, 4, records, offset=0))
        built = time.perf_counter() - started
        out.append(Figure(benchmark, "built with 4 publishers", "sowpush", "s", [built]))
        process.send_signal(signal.SIGKILL)
        process.wait()
        killed = restart_seconds(work, port)
        out.append(Figure(benchmark, "restart after SIGKILL (replays the log)", "sowpush", "s", [killed]))
        process = serve(work, port)
        process.send_signal(signal.SIGTERM)  # a clean stop writes a snapshot
        process.wait()
        clean = restart_seconds(work, port)
        out.append(Figure(benchmark, "restart after a clean stop (snapshot)", "sowpush", "s", [clean]))
        size = sum(f.stat().st_size for f in (work / "data").rglob("*") if f.is_file())
        out.append(Figure(benchmark, "data_dir size", "sowpush", "MB", [size / 1e6]))
    return out


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--publishes", type=int, default=200_000)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(table(figures(args.publishes, args.records, args.rounds)))


if __name__ == "__main__":
    main()
