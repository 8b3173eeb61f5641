"""Every benchmark of the table in one run: one table on the terminal, the same figures as JSON
(``--json``, default bench/results/latest.json) so that two runs can be compared, and the
targets each figure is held to, met or not.

    .venv/bin/python bench/run.py [--quick] [--only fanout,latency,...] [--rounds 3] [--json PATH]

Parts, in order: ``fanout`` (20 subscribers, frames of 200 and of one publish, against every peer
of peers.py), ``filtered`` (1,000 filtered subscriptions; full records against deltas),
``latency`` (p50/p99/p999 at 25, 50 and 90% of the slowest peak), ``latency-sow`` (at 90%
with a SOW of 1,000,000 records, 5 rounds), ``memory`` (per idle socket,
connects per second, per SOW record), ``storm`` (250 and 2,048 sockets opening a view of
10,000 rows at once), ``filters`` (in process), ``durable`` (publishes/s with
persisted acks; restart time) and ``cluster`` (needs redis-server). ``--quick`` runs one round
of each with small sizes, to check the benchmarks themselves.

Each comparison starts its servers once and runs them in interleaved rounds; every server is a
process of its own and the load client is this process. On a 2-core machine the server and the
client each have about a core: the table gives both CPU shares, and a figure set by the client
says so. Benchmarks that are not in the table (the browser, Spark, the slow consumer and the
other feature benchmarks) run on their own: see README, Benchmarks.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import cluster
import durable
import fanout
import filters
import latency
import memory
import storm
from figures import Figure, table, write_json
from harness import ROOT, arguments
from peers import PEERS
from targets import check

Part = Callable[[int, bool], list[Figure]]


def fanout_part(rounds: int, quick: bool) -> list[Figure]:
    peers = [PEERS[name] for name in fanout.DEFAULT_PEERS.split(",")]
    return fanout.figures(peers, rounds, 20, [200, 1])


def filtered_part(rounds: int, quick: bool) -> list[Figure]:
    return fanout.filtered_figures(rounds, 200 if quick else 1_000) + fanout.delta_figures(rounds, 20)


def latency_part(rounds: int, quick: bool) -> list[Figure]:
    return latency.figures(rounds, 1.0 if quick else 3.0, [0.25, 0.5, 0.9])


def big_sow_latency_part(rounds: int, quick: bool) -> list[Figure]:
    """At 90% of the slowest peak (about 5,000 publishes/s here) with a million records in the
    SOW: the garbage collector's worst case."""
    if quick:
        return latency.figures(rounds, 1.0, [0.9], records=20_000)
    return latency.figures(max(rounds, 5), 3.0, [0.9], records=1_000_000)


def memory_part(rounds: int, quick: bool) -> list[Figure]:
    if quick:
        return memory.figures(rounds, 200, 500, 5_000)
    # Idle 25 s: long enough for an idle socket to have let go of its writer task.
    return memory.figures(rounds, 2_000, 10_000, 100_000, idle_s=25.0)


def storm_part(rounds: int, quick: bool) -> list[Figure]:
    peers = [PEERS["sowpush"]]
    if quick:
        return storm.figures(peers, rounds, 50, 2_000)
    return storm.figures(peers, rounds, 250, 10_000) + storm.figures(peers, rounds, 2_048, 10_000)


def filters_part(rounds: int, quick: bool) -> list[Figure]:
    return filters.figures()


def durable_part(rounds: int, quick: bool) -> list[Figure]:
    if quick:
        return durable.figures(10_000, 10_000, rounds)
    return durable.figures(200_000, 1_000_000, rounds)


def cluster_part(rounds: int, quick: bool) -> list[Figure]:
    if shutil.which("redis-server") is None:
        print("cluster: skipped, no redis-server (apt-get install redis-server)")
        return []
    if quick:
        return cluster.figures(20, 200, rounds, 100, 2_000)
    return cluster.figures(200, 2_000, rounds, 1_000, 1_000_000)


PARTS: dict[str, Part] = {
    "fanout": fanout_part,
    "filtered": filtered_part,
    "latency": latency_part,
    "latency-sow": big_sow_latency_part,
    "memory": memory_part,
    "storm": storm_part,
    "filters": filters_part,
    "durable": durable_part,
    "cluster": cluster_part,
}


def context(rounds: int, quick: bool) -> dict[str, object]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "commit": commit,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "load_average_at_start": os.getloadavg(),
        "rounds": rounds,
        "quick": quick,
    }


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default=",".join(PARTS))
    parser.add_argument("--rounds", type=int, default=None, help="rounds per comparison (3; 1 with --quick)")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "latest.json")
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.quick else 3)
    about = context(rounds, args.quick)
    print(f"{about['cores']} cores, Python {about['python']}, commit {about['commit']}, {rounds} rounds each")
    figures: list[Figure] = []
    for name in args.only.split(","):
        started = time.perf_counter()
        print(f"running {name} ...", flush=True)
        figures += PARTS[name](rounds, args.quick)
        print(f"  {name} took {time.perf_counter() - started:.0f} s", flush=True)
    print()
    print(table(figures))
    print()
    print("\n".join(check(figures)))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.json, figures, about)
    print(f"\nwritten to {args.json}")


if __name__ == "__main__":
    main()
