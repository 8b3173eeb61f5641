"""The targets the figures are held to, and whether a run meets them (medians of its rounds)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from figures import Figure, number


@dataclass(frozen=True)
class Target:
    what: str
    benchmark: str  # the start of the figure's benchmark name
    measure: str  # the start of its measure
    subject: str
    met: Callable[[float], bool]
    goal: str


TARGETS = [
    Target(
        "fan-out, frames of 200, per server CPU-s against the Starlette relay",
        "fan-out to 20 subscribers, frames of 200",
        "sowpush / relay",
        "ratio",
        lambda v: v >= 0.5,
        ">= 0.5x",
    ),
    Target(
        "fan-out, one publish per frame, per server CPU-s against the Starlette relay",
        "fan-out to 20 subscribers, one publish",
        "sowpush / relay",
        "ratio",
        lambda v: v >= 1.0,
        ">= 1.0x",
    ),
    Target(
        "against python-socketio used idiomatically, frames of 200",
        "fan-out to 20 subscribers, frames of 200",
        "sowpush / socketio,",
        "ratio",
        lambda v: v >= 30,
        ">= 30x",
    ),
    Target(
        "against Node Socket.IO batched, frames of 200",
        "fan-out to 20 subscribers, frames of 200",
        "sowpush / node-socketio-batched",
        "ratio",
        lambda v: v > 1,
        "> 1x",
    ),
    Target(
        "against Node Socket.IO batched, one publish per frame",
        "fan-out to 20 subscribers, one publish",
        "sowpush / node-socketio-batched",
        "ratio",
        lambda v: v > 1,
        "> 1x",
    ),
    Target(
        "p99 latency at 25% of the slowest peak against the relay's",
        "latency at 25%",
        "sowpush p99 / relay p99",
        "ratio",
        lambda v: v <= 1.5,
        "<= 1.5x",
    ),
    Target(
        "p99 latency at 50% of the slowest peak against the relay's",
        "latency at 50%",
        "sowpush p99 / relay p99",
        "ratio",
        lambda v: v <= 1.5,
        "<= 1.5x",
    ),
    Target(
        "p99 latency at 90% of the slowest peak, a SOW of 1,000,000 records, against the relay's",
        "latency with a SOW",
        "sowpush p99 / relay p99",
        "ratio",
        lambda v: v <= 1.5,
        "<= 1.5x",
    ),
    Target(
        "p999 latency, the same",
        "latency with a SOW",
        "sowpush p999 / relay p999",
        "ratio",
        lambda v: v <= 3,
        "<= 3x",
    ),
    Target(
        "memory per idle subscribed socket",
        "memory per idle",
        "RSS growth per socket",
        "sowpush",
        lambda v: v <= 12_000,
        "<= 12 KB",
    ),
    Target(
        "memory per SOW record against its JSON size",
        "memory per SOW record",
        "RSS growth / JSON size",
        "sowpush",
        lambda v: v <= 2.5,
        "<= 2.5x",
    ),
    Target(
        "snapshot rows per server CPU-s, 250 sockets at once, against encoding each row once",
        "reconnect storm, 250 sockets",
        "rows per server CPU-s / rows orjson",
        "sowpush",
        lambda v: v >= 0.5,
        ">= 0.5x",
    ),
    Target(
        "connects per server CPU-s against the relay's",
        "connects",
        "connects per server CPU-s, sowpush / relay",
        "ratio",
        lambda v: v >= 1.0,
        ">= 1.0x",
    ),
]


def find(figures: list[Figure], target: Target) -> Figure | None:
    for figure in figures:
        if (
            figure.benchmark.startswith(target.benchmark)
            and figure.measure.startswith(target.measure)
            and figure.subject == target.subject
        ):
            return figure
    return None


def check(figures: list[Figure]) -> list[str]:
    """A line per target: the median measured, the goal, and met / NOT MET / not measured."""
    lines = ["targets (medians):"]
    width = max(len(target.what) for target in TARGETS)
    for target in TARGETS:
        figure = find(figures, target)
        if figure is None or not figure.values:
            lines.append(f"  {target.what:<{width}}  {'-':>9}  {target.goal:<10}  not measured")
            continue
        value = figure.median
        verdict = "met" if target.met(value) else "NOT MET"
        lines.append(f"  {target.what:<{width}}  {number(value):>9}  {target.goal:<10}  {verdict}")
    return lines
