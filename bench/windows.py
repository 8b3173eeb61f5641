"""Live windows: what they cost a publish, against plain filtered subscriptions.

100,000 records on one topic; a feed moves the price of random records (frames of 100 publishes,
as a Spark feed sends them). Measured in the engine itself, on one core, with the subscribers'
queues drained as a socket writer would: publishes/s and the cost per subscription, over 0
subscriptions, 100 plain filtered subscriptions, and 100 windows of 50 rows ordered by price
(the same top 50 on 100 sockets; 100 pages of one grid; 10 windows with distinct filters, which
share nothing). Interleaved rounds, min / median / max.

    .venv/bin/python bench/windows.py [--records 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

import orjson
from harness import QUIET

from server.core.engine import Engine
from server.core.log.local import LocalLog
from server.core.session.session import Session
from server.core.settings.config import parse_config

PUBLISHES = 20_000
FRAME = 100


def build(records: int) -> tuple[Engine, Session]:
    engine = Engine(parse_config({"topic": [{"name": "t", "key": ["/id"]}]}), time.time, LocalLog)
    feed = engine.broker.open_session(QUIET)
    rng = random.Random(1)
    for start in range(0, records, 1000):
        batch = [
            {
                "c": "publish",
                "t": "t",
                "data": {"id": n, "price": round(rng.uniform(1, 1000), 2), "sym": f"S{n % 500}"},
            }
            for n in range(start, min(start + 1000, records))
        ]
        engine.receive(feed, orjson.dumps(batch))
    return engine, feed


Subscribe = Callable[[int], dict[str, object]]


def scenario(records: int, subscribers: int, subscribe: Subscribe | None) -> tuple[float, int]:
    """Publishes per second with ``subscribers`` made by ``subscribe``, and messages delivered."""
    engine, feed = build(records)
    sessions = []
    for n in range(subscribers if subscribe is not None else 0):
        session = engine.broker.open_session(QUIET)
        assert subscribe is not None
        engine.receive(session, orjson.dumps({"sub_id": "s", "t": "t", **subscribe(n)}))
        while session.outbox.take_frame(1 << 20) is not None:
            pass  # the snapshot
        sessions.append(session)
    rng = random.Random(2)
    frames = [
        orjson.dumps(
            [
                {
                    "c": "publish",
                    "t": "t",
                    "data": {
                        "id": (i := rng.randrange(records)),
                        "price": round(rng.uniform(1, 1000), 2),
                        "sym": f"S{i % 500}",
                    },
                }
                for _ in range(FRAME)
            ]
        )
        for _ in range(PUBLISHES // FRAME)
    ]
    delivered = 0
    started = time.perf_counter()
    for frame in frames:
        engine.receive(feed, frame)
        for session in sessions:
            while (taken := session.outbox.take_frame(1 << 20)) is not None:
                delivered += taken.count(b'"c":"')
    elapsed = time.perf_counter() - started
    return PUBLISHES / elapsed, delivered


SCENARIOS: dict[str, tuple[int, Subscribe | None]] = {
    "no subscribers": (0, None),
    "100 plain subscriptions (/price > 990)": (100, lambda n: {"c": "subscribe", "filter": "/price > 990"}),
    "100 windows, the same top 50 by price": (
        100,
        lambda n: {"c": "sow_and_subscribe", "top_n": 50, "orderby": "/price DESC", "o": "oof"},
    ),
    "100 windows, pages of 50 of one order": (
        100,
        lambda n: {
            "c": "sow_and_subscribe",
            "top_n": 50,
            "skip_n": 50 * n,
            "orderby": "/price DESC",
            "o": "oof",
        },
    ),
    "10 windows with distinct filters (no sharing)": (
        10,
        lambda n: {
            "c": "sow_and_subscribe",
            "top_n": 50,
            "orderby": "/price DESC",
            "filter": f"/id >= {n}",
            "o": "oof",
        },
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rates: dict[str, list[float]] = {name: [] for name in SCENARIOS}
    delivered: dict[str, int] = {}
    for _ in range(args.rounds):  # interleaved: every scenario once per round
        for name, (count, subscribe) in SCENARIOS.items():
            rate, messages = scenario(args.records, count, subscribe)
            rates[name].append(rate)
            delivered[name] = messages
    base = statistics.median(rates["no subscribers"])
    print(f"{args.records:,} records, {PUBLISHES:,} price changes in frames of {FRAME}, {args.rounds} rounds")
    print(f"{'scenario':<48} {'publishes/s min / median / max':>32} {'us/publish/sub':>15} {'messages':>9}")
    for name, (count, _) in SCENARIOS.items():
        values = rates[name]
        median = statistics.median(values)
        per_sub = (1 / median - 1 / base) / count * 1e6 if count else 0.0
        figures = f"{min(values):,.0f} / {median:,.0f} / {max(values):,.0f}"
        print(f"{name:<48} {figures:>32} {per_sub:>15.2f} {delivered[name]:>9,}")


if __name__ == "__main__":
    main()
