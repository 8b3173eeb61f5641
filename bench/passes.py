"""What a pass over a big topic costs every other socket (docs/protocol.md, Passes read in slices):
a victim publishes to a small topic every 10 ms and a second socket of its own times each publish's
arrival, while one attacker's command reads a topic of 200,000 records: a sorted snapshot, a
viewport with an order of its own, a snapshot through a costly filter, an aggregation's first
pass into a few groups and into a group a record, and a viewport over a group a record. Each
round runs every case once, in turn, idle first (the victim alone): the cases are interleaved, so
a slower moment of the machine falls on all of them alike.

    .venv/bin/python bench/passes.py [--rows 200000] [--rounds 3]

Prints, per case, the victim's worst and median arrival (min / median / max over the rounds), the
command's own time to its ack and the server's CPU time during it. The target (issue 43): the
victim's worst within 100 ms of its idle worst. The victim and the attacker run in this process on
the same two cores as the server: their answers are kept small (a few rows), and the figures are
the server's pauses plus this process's own scheduling, so the idle worst is the floor.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

import orjson
import websockets
from figures import print_round, print_rounds
from harness import arguments, cpu_seconds, serving

CONFIG = """
[[topic]]
name = "big"
key = ["/id"]

[[topic]]
name = "probe"
key = ["/id"]
"""

Command = Callable[[int], dict[str, Any]]
CASES: dict[str, Command | None] = {
    "idle": None,
    "sorted snapshot": lambda n: {"c": "sow", "t": "big", "orderby": f"/px DESC, /x{n}", "top_n": 5},
    "viewport, an order of its own": lambda n: {
        "c": "sow_and_subscribe",
        "t": "big",
        "orderby": f"/px DESC, /y{n}",
        "top_n": 40,
    },
    "snapshot through a costly filter": lambda n: {
        "c": "sow",
        "t": "big",
        "filter": f"/desk = 'd3' AND /qty BETWEEN 5 AND 9 AND /note LIKE 'n{n}.*'",
    },
    "aggregation, 7 groups": lambda n: {
        "c": "sow_and_subscribe",
        "t": "big",
        "grouping": ["/desk"],
        "projection": ["/desk", f"SUM(/qty) AS /q{n}", "MIN(/px) AS /low", "MAX(/px) AS /high"],
    },
    "viewport of a group a record": lambda n: {
        "c": "sow_and_subscribe",
        "t": "big",
        "grouping": ["/id"],
        "projection": ["/id", "/px", f"MAX(/qty) AS /q{n}"],
        "orderby": f"/px DESC, /q{n}",
        "top_n": 10,
    },
    "aggregation, a group a record": lambda n: {
        "c": "sow",
        "t": "big",
        "filter": "/qty < 100",
        "grouping": ["/id"],
        "projection": ["/id", f"MAX(/px) AS /p{n}"],
        "orderby": f"/p{n} DESC",
        "top_n": 5,
    },
}


async def seed(url: str, rows: int) -> None:
    async with websockets.connect(url, max_size=None) as ws:
        batch = []
        for n in range(rows):
            data = {"id": n, "desk": f"d{n % 7}", "qty": n % 997, "px": (n * 7919) % 10007 * 0.5, "note": "x"}
            batch.append({"c": "publish", "t": "big", "data": data})
            if len(batch) == 2000:
                await ws.send(orjson.dumps(batch).decode())
                batch = []
        batch.append({"c": "flush", "cid": "seeded"})
        await ws.send(orjson.dumps(batch).decode())
        while b'"seeded"' not in await ws.recv(decode=False):
            pass


class Victim:
    """Publishes to ``probe`` every 10 ms and times each publish's arrival at its subscriber."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self._sent: dict[int, float] = {}

    async def run(self, url: str, stop: asyncio.Event) -> None:
        async with websockets.connect(url) as sub, websockets.connect(url) as pub:
            await sub.send(
                orjson.dumps({"c": "subscribe", "t": "probe", "cid": "s", "a": "processed"}).decode()
            )
            await sub.recv()
            reader = asyncio.create_task(self._read(sub))
            n = 0
            while not stop.is_set():
                self._sent[n] = time.perf_counter()
                await pub.send(
                    orjson.dumps({"c": "publish", "t": "probe", "data": {"id": n % 50, "n": n}}).decode()
                )
                n += 1
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)
            reader.cancel()

    async def _read(self, ws: Any) -> None:
        while True:
            frame = orjson.loads(await ws.recv(decode=False))
            for message in frame if isinstance(frame, list) else [frame]:
                data = message.get("data")
                if isinstance(data, dict) and "n" in data:
                    self.arrivals.append(time.perf_counter() - self._sent.pop(data["n"]))


async def attack(url: str, command: dict[str, Any]) -> None:
    async with websockets.connect(url, max_size=None) as ws:
        await ws.send(orjson.dumps({**command, "cid": "a", "a": "processed"}).decode())
        while True:
            frame = await ws.recv(decode=False)
            if b'"cid":"a"' in frame and b'"processed"' in frame:
                assert b'"failure"' not in frame, frame[:300]
                return


async def one_case(url: str, pid: int, command: dict[str, Any] | None) -> dict[str, float]:
    victim, stop = Victim(), asyncio.Event()
    running = asyncio.create_task(victim.run(url, stop))
    await asyncio.sleep(0.5)
    cpu, wall = cpu_seconds(pid), time.perf_counter()
    if command is None:
        await asyncio.sleep(1.0)
    else:
        await attack(url, command)
        await asyncio.sleep(0.3)  # what it queued goes out
    took, server_cpu = time.perf_counter() - wall, cpu_seconds(pid) - cpu
    stop.set()
    await running
    arrivals = victim.arrivals or [float("nan")]
    return {
        "victim worst ms": max(arrivals) * 1000,
        "victim median ms": statistics.median(arrivals) * 1000,
        "command s": took,
        "server CPU s": server_cpu,
    }


async def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {name: [] for name in CASES}
    with serving(CONFIG) as (url, _, server):
        await seed(url, options.rows)
        for round_number in range(options.rounds):
            for name, make in CASES.items():
                measured = await one_case(url, server.pid, make(round_number) if make else None)
                print_round(round_number, name, measured)
                results[name].append(measured)
    print_rounds(
        f"passes over {options.rows} records, min / median / max of {options.rounds} rounds", results
    )


if __name__ == "__main__":
    asyncio.run(main())
