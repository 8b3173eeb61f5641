"""Aggregated views (docs/protocol.md, Aggregated views): what they cost a publish.

One topic of 1,000,000 records; a feed changes the quantity and price of random records, in
frames of 100 publishes (a small feed) and of 2,000 (about 150 KB: the Spark sink sends a batch in
frames of up to 512 KiB, spark_feeds/sink.py). A group changed by several publishes of one frame
is written once, at the frame's end, so the frame's size decides how many group records a publish
costs: with 100 groups, a frame of 100 rewrites about 63 of them per view, one of 2,000 all 100.

Measured in the engine itself, on one core, with the subscribers' queues drained as a socket
writer would: publishes/s with no subscribers; with 10 aggregated subscriptions of 100 groups
each with distinct projections (no two share a state; they group the same records by the same
field, so they share one group table: ten users of one desk, each with their own columns); the
same 10 each with a filter of its own as well (``/qty != -n``, true of every record: no two share
a table either, the worst case); and the same 10 sharing one state (ten users of one desk view).
Every aggregated subscription keeps SUM, AVG, MIN, MAX and COUNT per group. Interleaved rounds
(each scenario and frame size once per round; each scenario has its own engine, loaded and
subscribed once), min / median / max; the time opening the views took is printed too.

    .venv/bin/python bench/aggregate.py [--records 1000000] [--rounds 3] [--frames 100,2000]

The target: 10 distinct aggregated subscriptions make publishing at most 2 times slower.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Callable

import orjson
from harness import QUIET, arguments

from server.core.engine import Engine
from server.core.log.local import LocalLog
from server.core.session.session import Session
from server.core.settings.config import parse_config

PUBLISHES = 20_000
GROUPS = 100


def row(n: int, rng: random.Random) -> dict[str, object]:
    return {
        "id": n,
        "sym": f"S{n % GROUPS:03d}",
        "qty": rng.randrange(1, 10_000),
        "px": round(rng.uniform(1, 1000), 2),
    }


def build(records: int) -> tuple[Engine, Session]:
    engine = Engine(parse_config({"topic": [{"name": "t", "key": ["/id"]}]}), time.time, LocalLog)
    feed = engine.broker.open_session(QUIET)
    rng = random.Random(1)
    for start in range(0, records, 2000):
        batch = [
            {"c": "publish", "t": "t", "data": row(n, rng)} for n in range(start, min(start + 2000, records))
        ]
        engine.receive(feed, orjson.dumps(batch))
    return engine, feed


def aggregated(weight: int, own_filter: bool = False) -> dict[str, object]:
    """An aggregated subscription by symbol; ``weight`` makes its projection (and so its state) its
    own, and ``own_filter`` its input records' gate (and so its group table) too."""
    return {
        "c": "sow_and_subscribe",
        **({"filter": f"/qty != -{weight}"} if own_filter else {}),
        "grouping": ["/sym"],
        "projection": [
            "/sym",
            f"SUM(/qty * {weight}) AS /qty",
            "AVG(/px) AS /avg_px",
            "MIN(/px) AS /low",
            "MAX(/px) AS /high",
            "COUNT(/id) AS /orders",
        ],
    }


SCENARIOS: dict[str, tuple[int, Callable[[int], dict[str, object]] | None]] = {
    "no subscribers": (0, None),
    "10 aggregated views, 100 groups, distinct": (10, lambda n: aggregated(n + 1)),
    "the same with distinct filters": (10, lambda n: aggregated(n + 1, own_filter=True)),
    "10 aggregated views, 100 groups, one shared": (10, lambda n: aggregated(1)),
}


def drain(session: Session) -> int:
    delivered = 0
    while (taken := session.outbox.take_frame(1 << 20)) is not None:
        delivered += taken.count(b'"c":"')
    return delivered


class Scenario:
    """One engine with the topic loaded and the scenario's subscriptions open (each scenario has
    its own, built once: building an aggregation is a pass over the topic, not what is measured)."""

    def __init__(
        self, records: int, count: int, subscribe: Callable[[int], dict[str, object]] | None
    ) -> None:
        self.records = records
        self.engine, self.feed = build(records)
        self.sessions: list[Session] = []
        started = time.perf_counter()
        for n in range(count):
            assert subscribe is not None
            session = self.engine.broker.open_session(QUIET)
            self.engine.receive(session, orjson.dumps({"sub_id": "s", "t": "t", **subscribe(n)}))
            drain(session)  # the snapshot
            self.sessions.append(session)
        self.opened_s = time.perf_counter() - started

    def round(self, seed: int, frame_size: int) -> tuple[float, int]:
        """Publishes per second in frames of ``frame_size``, and messages delivered."""
        rng = random.Random(seed)
        frames = [
            orjson.dumps(
                [
                    {"c": "publish", "t": "t", "data": row(rng.randrange(self.records), rng)}
                    for _ in range(frame_size)
                ]
            )
            for _ in range(PUBLISHES // frame_size)
        ]
        delivered = 0
        # Each timed run starts after a full collection, so that no scenario pays for the garbage
        # another made (the collector's pauses are measured where they are the subject:
        # bench/latency.py).
        gc.collect()
        started = time.perf_counter()
        for frame in frames:
            self.engine.receive(self.feed, frame)
            for session in self.sessions:
                delivered += drain(session)
        return PUBLISHES / (time.perf_counter() - started), delivered


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--frames", default="100,2000", help="publishes per frame, comma separated")
    args = parser.parse_args()
    sizes = [int(size) for size in args.frames.split(",")]
    scenarios = {}
    for name, (count, subscribe) in SCENARIOS.items():
        started = time.perf_counter()
        scenarios[name] = scenario = Scenario(args.records, count, subscribe)
        print(
            f"{name}: {args.records:,} records loaded and {count} views opened in "
            f"{time.perf_counter() - started:.0f} s (opening the views: {scenario.opened_s:.1f} s)"
        )
    rates: dict[tuple[str, int], list[float]] = {(name, size): [] for name in SCENARIOS for size in sizes}
    delivered: dict[tuple[str, int], int] = {}
    for round_ in range(args.rounds):  # interleaved: every scenario and frame size once per round
        for size in sizes:
            for name, scenario in scenarios.items():
                rate, messages = scenario.round(round_, size)
                rates[name, size].append(rate)
                delivered[name, size] = messages
    for size in sizes:
        base = statistics.median(rates["no subscribers", size])
        print(f"{PUBLISHES:,} changes in frames of {size:,}, {args.rounds} rounds")
        print(f"{'scenario':<46} {'publishes/s min / median / max':>32} {'slower':>7} {'messages':>9}")
        for name in SCENARIOS:
            values = rates[name, size]
            median = statistics.median(values)
            figures = f"{min(values):,.0f} / {median:,.0f} / {max(values):,.0f}"
            print(f"{name:<46} {figures:>32} {base / median:>6.2f}x {delivered[name, size]:>9,}")


if __name__ == "__main__":
    main()
