"""Filter speed: evaluations per second of a 5-predicate filter against a 1 KB record on one core,
where the time goes, and the fan-out cost of 1,000 subscriptions with distinct equality filters.

    .venv/bin/python bench/filters.py
"""

from __future__ import annotations

import time
from collections.abc import Callable

import orjson
from figures import Figure, table
from harness import QUIET

from server.core.engine import Engine
from server.core.filters import compile_filter
from server.core.log.local import LocalLog
from server.core.settings.config import parse_config

PREDICATES = [
    "/sym = 'MSFT'",
    "/qty > 100",
    "/px BETWEEN 10 AND 500",
    "/side IN ('B','S')",
    "/trader LIKE '^t'",
]
FILTER = " AND ".join(PREDICATES)
RECORD = {
    "id": 42,
    "sym": "MSFT",
    "qty": 150,
    "px": 101.25,
    "side": "B",
    "trader": "tom",
    "venue": "XNAS",
    "account": "ACC-000123",
    "status": "open",
    "ts": 1_800_000_000,
    "notes": "x" * 700,
    "legs": [{"qty": 50, "px": 101.0}, {"qty": 100, "px": 101.5}],
}


def rate(work: Callable[[], object], seconds: float = 1.0) -> float:
    """Calls per second, best of three timed batches."""
    batch = 10_000
    best = 0.0
    for _ in range(3):
        count, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds / 3:
            for _ in range(batch):
                work()
            count += batch
        best = max(best, count / (time.perf_counter() - started))
    return best


def evaluation() -> list[Figure]:
    compiled = compile_filter(FILTER)
    assert compiled.matches(RECORD)
    record_bytes = len(orjson.dumps(RECORD))
    benchmark = f"filters, in process: a 5-predicate filter on a {record_bytes}-byte record"
    out = [
        Figure(benchmark, "evaluations per second", "sowpush", "/s", [rate(lambda: compiled.matches(RECORD))])
    ]
    for part in PREDICATES:
        alone = compile_filter(part)
        cost = 1e9 / rate(lambda alone=alone: alone.matches(RECORD), 0.5)
        out.append(Figure(benchmark, f"{part} alone", "sowpush", "ns", [cost]))
    empty = compile_filter("TRUE")
    out.append(
        Figure(
            benchmark,
            "call overhead (TRUE)",
            "sowpush",
            "ns",
            [1e9 / rate(lambda: empty.matches(RECORD), 0.5)],
        )
    )
    return out


def fan_out(filter_for: Callable[[int], str], subscribers: int = 1000, publishes: int = 2000) -> float:
    """Microseconds per publish into an engine with ``subscribers`` filtered subscriptions."""
    engine = Engine(parse_config({"topic": [{"name": "t", "key": ["/id"]}]}), time.time, LocalLog)
    for n in range(subscribers):
        session = engine.broker.open_session(QUIET)
        engine.receive(
            session, orjson.dumps({"c": "subscribe", "t": "t", "sub_id": 1, "filter": filter_for(n)})
        )
    publisher = engine.broker.open_session(QUIET)
    frames = [
        orjson.dumps({"c": "publish", "t": "t", "data": {**RECORD, "id": n % subscribers}})
        for n in range(publishes)
    ]
    started = time.perf_counter()
    for frame in frames:
        engine.receive(publisher, frame)
    return (time.perf_counter() - started) / publishes * 1e6


def figures() -> list[Figure]:
    benchmark = "filters, in process: 1,000 subscriptions with distinct equality filters, one matches"
    indexed = fan_out(lambda n: f"/id = {n}")
    scanned = fan_out(lambda n: f"/id = {n} OR /never = 1")
    return [
        *evaluation(),
        Figure(benchmark, "per publish, indexed (/id = N)", "sowpush", "us", [indexed]),
        Figure(benchmark, "per publish, not indexable (/id = N OR /never = 1)", "sowpush", "us", [scanned]),
    ]


def main() -> None:
    print(table(figures()))


if __name__ == "__main__":
    main()
