"""Fan-out against the peers: one publisher sends keyed updates of a 10-field record, every
subscriber receives every update. For each server: deliveries per second of wall time, and
deliveries per CPU-second of the server process (from /proc), the figure that does not depend on
how fast the load client reads; the load client's own CPU is reported beside them.

    .venv/bin/python bench/fanout.py [--peers sowpush,relay,...] [--rounds 3] [--subscribers 20]
                                     [--frames 200,1]

Each server gets as many updates as it delivers in about 2 s (measured in a warm-up round, which
also warms up Node's JIT), in interleaved rounds (rounds.py). The load client is one process
(load.py), so on a 2-core machine the server and the client each have about one core.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

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
    await asyncio.wait_for(done, 300)
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


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--peers", default=DEFAULT_PEERS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--subscribers", type=int, default=20)
    parser.add_argument("--frames", default="200,1")
    args = parser.parse_args()
    peers = [PEERS[name] for name in args.peers.split(",")]
    frames = [int(size) for size in args.frames.split(",")]
    print(f"{os.cpu_count()} cores shared by the servers and the load client, {args.rounds} rounds each")
    print(table(figures(peers, args.rounds, args.subscribers, frames)))


if __name__ == "__main__":
    main()
