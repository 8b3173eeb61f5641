"""Interleaved rounds: every server of a comparison is started once, each is sized by a warm-up
round, then they take turns (A, B, C, A, B, C, ...) so that whatever else the machine does falls
on all of them alike. A round reports deliveries, wall time, the server's CPU time (from /proc)
and the load client's, and turns into figures: deliveries per server CPU-second (the figure that
does not depend on how fast the load client reads), per wall second, both processes' CPU shares,
and ratios against one subject."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from figures import Figure
from peers import Peer

WARM_UP_UPDATES = 2_000  # sizes the rounds: each peer gets as many updates as it takes in ~2 s
CLIENT_BOUND = 0.85  # the load client's share of a core above which it, not the server, sets the pace


@dataclass
class Round:
    deliveries: int
    wall_s: float
    server_cpu_s: float
    client_cpu_s: float
    received_bytes: int

    @property
    def wall_rate(self) -> float:
        return self.deliveries / self.wall_s

    @property
    def bytes_per_delivery(self) -> float:
        return self.received_bytes / self.deliveries

    @property
    def per_cpu_second(self) -> float:
        return self.deliveries / self.server_cpu_s if self.server_cpu_s else math.nan


def interleaved(
    peers: list[Peer], rounds: int, run: Callable[[Peer, str, int, int], Round], seconds: float = 2.0
) -> dict[str, list[Round]]:
    """Start every peer; size each peer's rounds from a warm-up round (``run(peer, url, pid,
    updates)``) to last about ``seconds``; run ``rounds`` rounds of each in turn (A, B, A, B, ...);
    stop them."""
    results: dict[str, list[Round]] = {peer.name: [] for peer in peers}
    with tempfile.TemporaryDirectory() as work:
        started = {peer.name: peer.start(Path(work) / peer.name) for peer in peers}
        try:
            sizes = {}
            for peer in peers:
                process, url = started[peer.name]
                warm = run(peer, url, process.pid, WARM_UP_UPDATES)
                per_second = WARM_UP_UPDATES / warm.wall_s
                sizes[peer.name] = max(WARM_UP_UPDATES, int(round(per_second * seconds, -3)))
            for _ in range(rounds):
                for peer in peers:
                    process, url = started[peer.name]
                    results[peer.name].append(run(peer, url, process.pid, sizes[peer.name]))
        finally:
            for process, _ in started.values():
                process.terminate()
                process.wait()
    return results


def describe(benchmark: str, results: dict[str, list[Round]]) -> list[Figure]:
    """Per peer: deliveries per server CPU-second and per wall second, and both CPU shares."""
    out = []
    for name, rounds in results.items():
        client = [r.client_cpu_s / r.wall_s for r in rounds]
        bound = "load client near one core: the wall rate is the client's" * (max(client) > CLIENT_BOUND)
        server = [r.server_cpu_s / r.wall_s for r in rounds]
        out += [
            Figure(benchmark, "deliveries per server CPU-s", name, "/s", [r.per_cpu_second for r in rounds]),
            Figure(benchmark, "deliveries per wall second", name, "/s", [r.wall_rate for r in rounds]),
            Figure(benchmark, "server CPU / wall", name, "cores", server),
            Figure(benchmark, "load client CPU / wall", name, "cores", client, bound),
        ]
    return out


def ratios(benchmark: str, results: dict[str, list[Round]], base: str = "sowpush") -> list[Figure]:
    """``base``'s deliveries per server CPU-second over each other peer's, round by round."""
    mine = [r.per_cpu_second for r in results[base]]
    return [
        Figure(
            benchmark,
            f"{base} / {name}, per server CPU-s",
            "ratio",
            "x",
            [m / r.per_cpu_second for m, r in zip(mine, rounds, strict=True)],
        )
        for name, rounds in results.items()
        if name != base
    ]
