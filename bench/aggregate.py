"""Aggregated views (docs/protocol.md, Aggregated views): what they cost a publish.

One topic of 1,000,000 records; a feed changes the quantity and price of random records (frames
of 100 publishes, as a Spark feed sends them). Measured in the engine itself, on one core, with
the subscribers' queues drained as a socket writer would: publishes/s with no subscribers, with
10 aggregated subscriptions of 100 groups each (distinct projections, so no two share a state:
the worst case), and with the same 10 sharing one state (ten users of one desk view). Every
aggregated subscription keeps SUM, AVG, MIN, MAX and COUNT per group. Interleaved rounds (each
scenario once per round, on the one topic), min / median / max.

    .venv/bin/python bench/aggregate.py [--records 1000000] [--rounds 3]

The target: 10 distinct aggregated subscriptions make publishing at most 2 times slower.
"""

from __future__ import annotations

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
FRAME = 100
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


def aggregated(weight: int) -> dict[str, object]:
    """An aggregated subscription by symbol; ``weight`` makes its projection (and so its state) its own."""
    return {
        "c": "sow_and_subscribe",
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
    "10 aggregated views, 100 groups, one shared": (10, lambda n: aggregated(1)),
}


def drain(session: Session) -> int:
    delivered = 0
    while (taken := session.outbox.take_frame(1 << 20)) is not None:
        delivered += taken.count(b'"c":"')
    return delivered


def scenario(
    engine: Engine,
    feed: Session,
    records: int,
    count: int,
    subscribe: Callable[[int], dict[str, object]] | None,
    seed: int,
) -> tuple[float, int]:
    """Publishes per second with ``count`` subscriptions made by ``subscribe``, and messages delivered."""
    sessions = []
    for n in range(count):
        assert subscribe is not None
        session = engine.broker.open_session(QUIET)
        engine.receive(session, orjson.dumps({"sub_id": "s", "t": "t", **subscribe(n)}))
        drain(session)  # the snapshot
        sessions.append(session)
    rng = random.Random(seed)
    frames = [
        orjson.dumps(
            [{"c": "publish", "t": "t", "data": row(rng.randrange(records), rng)} for _ in range(FRAME)]
        )
        for _ in range(PUBLISHES // FRAME)
    ]
    delivered = 0
    started = time.perf_counter()
    for frame in frames:
        engine.receive(feed, frame)
        for session in sessions:
            delivered += drain(session)
    elapsed = time.perf_counter() - started
    for session in sessions:
        engine.receive(session, orjson.dumps({"c": "unsubscribe", "sub_id": "s"}))
        drain(session)
    return PUBLISHES / elapsed, delivered


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    started = time.perf_counter()
    engine, feed = build(args.records)
    print(f"{args.records:,} records loaded in {time.perf_counter() - started:.0f} s (not measured)")
    rates: dict[str, list[float]] = {name: [] for name in SCENARIOS}
    delivered: dict[str, int] = {}
    for round_ in range(args.rounds):
        for name, (count, subscribe) in SCENARIOS.items():
            rate, messages = scenario(engine, feed, args.records, count, subscribe, round_)
            rates[name].append(rate)
            delivered[name] = messages
    base = statistics.median(rates["no subscribers"])
    print(f"{PUBLISHES:,} changes in frames of {FRAME}, {args.rounds} rounds")
    print(f"{'scenario':<46} {'publishes/s min / median / max':>32} {'slower':>7} {'messages':>9}")
    for name in SCENARIOS:
        values = rates[name]
        median = statistics.median(values)
        figures = f"{min(values):,.0f} / {median:,.0f} / {max(values):,.0f}"
        print(f"{name:<46} {figures:>32} {base / median:>6.2f}x {delivered[name]:>9,}")


if __name__ == "__main__":
    main()
