"""Fan-out against the peers: one publisher sends keyed updates of a 10-field record, every
subscriber receives every update. For each server: deliveries per second of wall time, and
deliveries per CPU-second of the server process (from /proc), the figure that does not depend on
how fast the load client reads; the load client's own CPU is reported beside them.

    .venv/bin/python bench/fanout.py [--peers sowpush,relay,...] [--rounds 3] [--subscribers 20]
                                     [--frames 200,1] [--filtered]

With ``--filtered``, also sowpush alone with 1,000 distinct filtered subscriptions, and full
records against deltas.

Each server gets as many updates as it delivers in about 2 s (measured in a warm-up round, which
also warms up Node's JIT), in interleaved rounds (rounds.py). The load client is one process
(load.py), so on a 2-core machine the server and the client each have about one core.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import replace

import uvloop
from figures import Figure, table
from harness import arguments, cpu_seconds
from load import Crowd, encode, record
from peers import PEERS, Peer
from rounds import Round, describe, interleaved, ratios

DEFAULT_PEERS = "sowpush,relay,socketio,socketio-batched,node-ws,node-socketio,node-socketio-batched"


async def fan_out_round(
    peer: Peer,
    url: str,
    pid: int,
    subscribers: int,
    updates: int,
    frame: int,
    records: int = 200,
    command: str = "subscribe",
    filter_for: Callable[[int], str | None] = lambda n: None,
    wanted: Callable[[int], int] | None = None,
) -> Round:
    """One run: connect and subscribe, publish ``updates`` in frames of ``frame``, wait until every
    subscriber has counted what it should (``wanted(index)``, by default every update)."""
    crowd = await Crowd.open(url, peer.dialect, subscribers, command=command, filter_for=filter_for)
    payload = [
        message
        for first in range(0, updates, frame)
        for message in encode(
            peer.dialect,
            peer.batched,
            [record(n, records) for n in range(first, min(first + frame, updates))],
        )
    ]
    expected = [wanted(index) for index in range(subscribers)] if wanted else updates
    done = crowd.expect(expected)
    cpu, client_cpu, started = cpu_seconds(pid), time.process_time(), time.perf_counter()
    for message in payload:
        crowd.publisher.send(message)
    async with asyncio.timeout(300):
        await done
    wall = time.perf_counter() - started
    result = Round(
        sum(client.listener.expected for client in crowd.subscribers),
        wall,
        cpu_seconds(pid) - cpu,
        time.process_time() - client_cpu,
        sum(client.listener.received_bytes for client in crowd.subscribers),
    )
    await crowd.close()
    return result


def figures(peers: list[Peer], rounds: int, subscribers: int, frames: list[int]) -> list[Figure]:
    out = []
    for frame in frames:
        benchmark = (
            f"fan-out to {subscribers} subscribers, one publish per frame"
            if frame == 1
            else (f"fan-out to {subscribers} subscribers, frames of {frame} publishes")
        )
        results = interleaved(
            peers,
            rounds,
            lambda peer, url, pid, updates, frame=frame: uvloop.run(
                fan_out_round(peer, url, pid, subscribers, updates, frame)
            ),
        )
        out += describe(benchmark, results) + ratios(benchmark, results)
    return out


def filtered_figures(rounds: int, subscriptions: int = 1_000) -> list[Figure]:
    """``subscriptions`` sockets, each with its own filter ``/id = N`` over as many records, so each
    update matches one of them; frames of 200 publishes. (No peer filters: sowpush alone.)"""
    benchmark = f"{subscriptions:,} distinct filtered subscriptions, frames of 200 publishes"
    results = interleaved(
        [PEERS["sowpush"]],
        rounds,
        lambda peer, url, pid, updates: uvloop.run(
            fan_out_round(
                peer,
                url,
                pid,
                subscriptions,
                updates,
                200,
                records=subscriptions,
                filter_for=lambda n: f"/id = {n}",
                wanted=lambda index: updates // subscriptions,
            )
        ),
    )
    return describe(benchmark, results)


def delta_figures(rounds: int, subscribers: int) -> list[Figure]:
    """The same publishes (3 of the record's 10 fields change) to ``subscribe`` and to
    ``delta_subscribe`` (JSON Patch): what a delta costs the server and what it saves on the wire."""
    benchmark = f"full records vs deltas, {subscribers} subscribers, frames of 200 publishes"
    commands = {"sowpush, subscribe": "subscribe", "sowpush, delta_subscribe": "delta_subscribe"}
    variants = [replace(PEERS["sowpush"], name=name) for name in commands]
    results = interleaved(
        variants,
        rounds,
        lambda peer, url, pid, updates: uvloop.run(
            fan_out_round(peer, url, pid, subscribers, updates, 200, command=commands[peer.name])
        ),
    )
    sizes = [
        Figure(benchmark, "bytes received per delivery", name, "B", [r.bytes_per_delivery for r in rs])
        for name, rs in results.items()
    ]
    return describe(benchmark, results) + sizes


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--peers", default=DEFAULT_PEERS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--subscribers", type=int, default=20)
    parser.add_argument("--frames", default="200,1")
    parser.add_argument("--filtered", action="store_true", help="also filtered subscriptions, and deltas")
    args = parser.parse_args()
    peers = [PEERS[name] for name in args.peers.split(",")]
    frames = [int(size) for size in args.frames.split(",")]
    print(f"{os.cpu_count()} cores shared by the servers and the load client, {args.rounds} rounds each")
    out = figures(peers, args.rounds, args.subscribers, frames)
    if args.filtered:
        out += filtered_figures(args.rounds) + delta_figures(args.rounds, args.subscribers)
    print(table(out))


if __name__ == "__main__":
    main()
