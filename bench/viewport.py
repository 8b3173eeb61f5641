"""A viewport onto a big topic (docs/protocol.md, Viewports), over real sockets.

A topic of 1,000,000 records of about 200 bytes. A client opens a window of 60 rows ordered by
``/order`` with ``count`` (what the dashboard does for a link), then moves it as a desk does:
a scroll to the middle, a scroll by 10 rows (the 50 rows kept are sent as keys), a sort by
another column (``/qty DESC``), a change of filter on a field no order keeps (``/desk``) and one
on the field a kept order sorts by first (``/order``), and back to the first order. Each round
measures, per step: the time until the answer's ``group_end`` reached the client, the bytes of
the answer, and the server's CPU time. Rounds interleave the steps, so a slow moment of the
machine falls on all of them; min / median / max over the rounds.

Then the first 10 s of a viewport while a feed changes 5,000 random records/s: the bytes the
viewport receives (the whole view would receive every change), and 1,000 users scrolling one
blotter: each has its own socket and window over the one shared order, and moves it by a page
at random; the server's CPU time per move.

    .venv/bin/python bench/viewport.py [--records 1000000] [--rounds 5] [--users 1000]

The moves run against two servers, round by round: one whose topic keeps no order, so a sort or
filter no window has asked for yet builds an order over the whole topic (sort keys of every
matching record: a pass and a sort, not a logarithmic move), and one configured as a desk would
configure its blotter, ``orders = ["/order", "/qty DESC"]`` (docs/protocol.md, Kept orders): its
first screen and its sort are moves over kept orders, its filter on ``/desk`` is a pass of the
filter and a walk of the kept order, and its filter on ``/order`` reads only that range of the
kept ``/order`` (found by bisection) and sorts what passes.

What limits the figures: the load client shares the two cores with the server; publishing the
topic takes a minute or two per server and is not measured.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import websockets
from figures import spread
from harness import arguments, cpu_seconds, serving

PAD = "x" * 100  # a record of about 200 bytes, as a blotter row
DESKS = ("rates", "credit", "fx", "equities", "commodities")
ROWS = 60  # one screen and a margin
OPTIONS = "oof,positions,count"
Connection = Any  # websockets' client connection


def record(n: int, rng: random.Random) -> dict[str, object]:
    return {
        "order": n,
        "desk": DESKS[n % len(DESKS)],
        "sym": f"S{n % 500:03d}",
        "qty": rng.randrange(1, 100_000),
        "px": round(rng.uniform(10, 500), 2),
        "trader": f"t{n % 37}",
        "note": PAD,
    }


async def publish(url: str, records: int) -> None:
    rng = random.Random(0)
    async with websockets.connect(url, max_size=None) as ws:
        for start in range(0, records, 2000):
            batch = [
                {"c": "publish", "t": "orders", "data": record(n, rng)}
                for n in range(start, min(start + 2000, records))
            ]
            await ws.send(orjson.dumps(batch).decode())
        await ws.send(orjson.dumps({"c": "flush", "cid": "done"}).decode())
        while b'"cid":"done"' not in (await ws.recv(decode=False)):
            pass


def window(first: int, orderby: str, filter_: str | None, replace: bool) -> dict[str, object]:
    command: dict[str, object] = {
        "c": "sow_and_subscribe",
        "t": "orders",
        "sub_id": "vp",
        "cid": "vp",
        "top_n": ROWS,
        "skip_n": first,
        "orderby": orderby,
        "o": OPTIONS + (",replace" if replace else ""),
    }
    if filter_ is not None:
        command["filter"] = filter_
    return command


async def answer(ws: Connection, command: dict[str, object]) -> tuple[float, int, int]:
    """Send ``command`` and read until its ``group_end``: seconds, bytes, and the view's size."""
    started = time.perf_counter()
    await ws.send(orjson.dumps(command).decode())
    received = 0
    while True:
        frame = await ws.recv(decode=False)
        received += len(frame)
        if b'"status":"failure"' in frame:
            raise RuntimeError(f"refused: {frame.decode()[:300]}")
        if b'"group_end"' in frame:
            end = next(m for m in orjson.loads(frame) if m["c"] == "group_end")
            return time.perf_counter() - started, received, int(end.get("matches", -1))


STEPS: list[tuple[str, Callable[[int], tuple[int, str, str | None]]]] = [
    ("first screen", lambda n: (0, "/order", None)),
    ("scroll to the middle", lambda n: (n // 2, "/order", None)),
    ("scroll by 10 rows", lambda n: (n // 2 + 10, "/order", None)),
    ("sort by /qty DESC", lambda n: (0, "/qty DESC", None)),
    ("filter /desk = 'fx'", lambda n: (0, "/qty DESC", "/desk = 'fx'")),
    ("filter /order >= n - 1000", lambda n: (0, "/qty DESC", f"/order >= {n - 1000}")),
    ("back to /order", lambda n: (0, "/order", None)),
]


async def moves(servers: dict[str, tuple[str, int]], records: int, rounds: int) -> None:
    Figures = dict[str, list[float]]
    figures: dict[tuple[str, str], Figures] = {
        (label, name): {"ms": [], "kB": [], "cpu": []} for label in servers for name, _ in STEPS
    }
    sizes: dict[str, int] = {}
    for _ in range(rounds):
        for label, (url, pid) in servers.items():
            async with websockets.connect(url, max_size=None) as ws:
                for index, (name, step) in enumerate(STEPS):
                    first, orderby, filter_ = step(records)
                    before = cpu_seconds(pid)
                    elapsed, size, matches = await answer(ws, window(first, orderby, filter_, index > 0))
                    figure = figures[label, name]
                    figure["ms"].append(elapsed * 1000)
                    figure["kB"].append(size / 1000)
                    figure["cpu"].append((cpu_seconds(pid) - before) * 1000)
                    sizes[name] = matches
    print(f"a viewport of {ROWS} rows over {records:,} records; {rounds} rounds, min / median / max")
    for (label, name), values in figures.items():
        print(
            f"  {label:<16} {name:<22} {spread(values['ms'])} ms   {spread(values['kB'])} kB   "
            f"server CPU {spread(values['cpu'])} ms   (view of {sizes[name]:,})"
        )


async def feed(url: str, records: int, rate: int, stop: asyncio.Event) -> None:
    rng = random.Random(5)
    async with websockets.connect(url, max_size=None) as ws:
        while not stop.is_set():
            batch = [
                {"c": "publish", "t": "orders", "data": record(rng.randrange(records), rng)}
                for _ in range(rate // 10)
            ]
            await ws.send(orjson.dumps(batch).decode())
            await asyncio.sleep(0.1)


async def first_seconds(url: str, records: int, rate: int, seconds: float) -> None:
    stop = asyncio.Event()
    feeding = asyncio.create_task(feed(url, records, rate, stop))
    await asyncio.sleep(1)
    async with websockets.connect(url, max_size=None) as ws:
        started = time.perf_counter()
        _, received, _ = await answer(ws, window(0, "/qty DESC", None, False))
        frames = 0
        try:
            async with asyncio.timeout(seconds - (time.perf_counter() - started)):
                while True:
                    received += len(await ws.recv(decode=False))
                    frames += 1
        except TimeoutError:
            pass  # the first ``seconds`` are over
    stop.set()
    await feeding
    print(
        f"  the first {seconds:.0f} s of a viewport sorted by /qty DESC under {rate:,} changes/s: "
        f"{received / 1000:,.0f} kB in {frames} frames after the first screen"
    )


async def blotter(url: str, pid: int, records: int, users: int, moves_each: int) -> None:
    sockets = [await websockets.connect(url, max_size=None) for _ in range(users)]
    rng = random.Random(9)
    try:
        await asyncio.gather(
            *(answer(ws, window(rng.randrange(records - ROWS), "/order", None, False)) for ws in sockets)
        )
        per_move: list[float] = []
        for _ in range(moves_each):
            before, started = cpu_seconds(pid), time.perf_counter()
            steps: list[Awaitable[tuple[float, int, int]]] = [
                answer(ws, window(rng.randrange(records - ROWS), "/order", None, True)) for ws in sockets
            ]
            await asyncio.gather(*steps)
            per_move.append((cpu_seconds(pid) - before) / users * 1e6)
            wall = time.perf_counter() - started
        print(
            f"  {users:,} users scrolling one blotter: server CPU {spread(per_move)} us per move "
            f"(the last round of {users:,} moves took {wall:.2f} s of wall time)"
        )
    finally:
        for ws in sockets:
            await ws.close()


KEY = '[[topic]]\nname = "orders"\nkey = ["/order"]\n'
KEPT = KEY + 'orders = ["/order", "/qty DESC"]\n'


async def run(servers: dict[str, tuple[str, int]], args: Any) -> None:
    for url, _ in servers.values():
        started = time.perf_counter()
        await publish(url, args.records)
        print(f"published {args.records:,} records in {time.perf_counter() - started:.0f} s (not measured)")
    await moves(servers, args.records, args.rounds)
    url, pid = servers["no kept order"]
    await first_seconds(url, args.records, args.rate, 10.0)
    await blotter(url, pid, args.records, args.users, args.moves)


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rate", type=int, default=5_000)
    parser.add_argument("--users", type=int, default=1_000)
    parser.add_argument("--moves", type=int, default=5)
    args = parser.parse_args()
    with serving(KEY) as (plain, _, first), serving(KEPT) as (kept, _, second):
        servers = {"no kept order": (plain, first.pid), "kept orders": (kept, second.pid)}
        asyncio.run(run(servers, args))


if __name__ == "__main__":
    main()
