"""Publish-to-delivery latency at a moderate rate: p50 / p99 / p999 of the time from the
publisher's send to a subscriber's receipt, at fractions of the slowest server's peak (so that
every server compared gets the same rate, one it can sustain), against the peers.

    .venv/bin/python bench/latency.py [--rounds 3] [--seconds 3] [--fractions 0.25,0.5,0.9]
                                      [--records 1000000]

``--records N`` first loads N more records (of about 200 bytes, keys of their own) into each
sowpush server's topic: the garbage collector's worst case is a big SOW, whose every record a
full collection used to walk.

Peak: each server's deliveries per wall second with one publish per frame to 20 subscribers, all
sent at once (fanout.py's round, sized to ~2 s by a warm-up round, median of 2 rounds), over 20:
publishes/s. Then, at each fraction of the lowest of them, sowpush, relay and node-ws get the same
absolute rate: 20
subscribers (the first 2 timed), one publisher sending one publish per frame, paced in ticks of
~1 ms (each tick sends what is due, each record stamped with time.perf_counter_ns() as it is
sent) for --seconds, then a wait until every subscriber has counted every update. Rounds are
interleaved (A, B, C, A, B, C, ...) on servers started once (after one unmeasured round each, for
connections and Node's JIT). Per round: the percentiles of the timed subscribers' latencies,
leaving out the first 0.3 s of sends (warm-up), and the server's and the load client's CPU per
wall second. A round whose deliveries are not all in 5 s + 2 x --seconds after the last send did
not keep up: no latency. One that sent, or delivered, under 95% of the rate fell behind (delivered:
from the latency's growth between the first and the last tenth of a round's samples): its latency
depends on the round's length. The figures' notes say so. The load client's garbage collector is
off during a round. Its delay in reading (one process, on 2 cores shared with the servers) is part
of the latency, an upper bound for the server's; its CPU share shows how busy it was.
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import orjson
import uvloop
import websockets
from fanout import fan_out_round
from figures import Figure, table
from harness import arguments, cpu_seconds
from load import Crowd, encode, record
from peers import PEERS, Peer
from rounds import WARM_UP_UPDATES

PEER_NAMES = ("sowpush", "relay", "node-ws")
SUBSCRIBERS = 20
TIMED = 2
PEAK_ROUNDS = 2
WARM_UP_S = 0.3  # sends left out of each round's latencies
TICK_S = 0.001
TIMEOUT_S = 5  # plus 2 x --seconds after the last send: past that, deliveries missing = not kept up
BEHIND = 0.95  # delivered (or sent) below this share of the rate: the round fell behind
QUANTILES = (("p50", 0.5), ("p99", 0.99), ("p999", 0.999))


@dataclass
class Sample:
    percentiles_ms: dict[str, float]  # empty: not kept up (deliveries missing at the timeout)
    server_cpu: float  # cores: CPU-s per wall second
    client_cpu: float
    sent_rate: float  # publishes per second the publisher managed
    delivered_rate: float  # publishes per second delivered, from the latency's growth


def percentile(ordered: list[int], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1e6


async def paced_round(peer: Peer, url: str, pid: int, rate: float, seconds: float) -> Sample:
    """One round: ``rate`` publishes per second for ``seconds``, then wait for every delivery."""
    crowd = await Crowd.open(url, peer.dialect, SUBSCRIBERS, timed=TIMED)
    await asyncio.sleep(0.1)
    total = max(1, round(rate * seconds))
    done = crowd.expect(total)
    gc.collect()
    gc.disable()
    try:
        cpu, client_cpu, started = cpu_seconds(pid), time.process_time(), time.perf_counter()
        sent = 0
        while sent < total:
            due = min(total, int((time.perf_counter() - started) * rate) + 1)
            while sent < due:
                update = record(sent, 200, sent_ns=time.perf_counter_ns())
                for message in encode(peer.dialect, peer.batched, [update]):
                    crowd.publisher.send(message)
                sent += 1
            await asyncio.sleep(TICK_S)
        sending = time.perf_counter() - started
        try:
            async with asyncio.timeout(TIMEOUT_S + 2 * seconds):
                await done
            kept = True
        except TimeoutError:
            kept = False
        wall = time.perf_counter() - started
        server_cpu, client_cpu = cpu_seconds(pid) - cpu, time.process_time() - client_cpu
    finally:
        gc.enable()
    skip = int(WARM_UP_S * rate)
    latencies = sorted(
        value for client in crowd.subscribers[:TIMED] for value in client.listener.latencies_ns[skip:]
    )
    # Latency growing through the round means deliveries fell behind: by the growth from the first
    # tenth of a timed subscriber's (ordered) deliveries to the last, over the time between them.
    trend = crowd.subscribers[0].listener.latencies_ns[skip:] or [0]
    tenth = max(1, len(trend) // 10)
    growth_s = max(0, statistics.median(trend[-tenth:]) - statistics.median(trend[:tenth])) / 1e9
    delivered = rate / (1 + growth_s / max(0.9 * len(trend) / rate, 1e-3))
    await crowd.close()
    if not kept:
        await asyncio.sleep(1)  # let the server drop what it still holds for the closed sockets
    percentiles = {label: percentile(latencies, q) for label, q in QUANTILES} if kept and latencies else {}
    return Sample(percentiles, server_cpu / wall, client_cpu / wall, total / sending, delivered)


def peak(peer: Peer, pid: int, url: str) -> list[float]:
    """``peer``'s publishes per wall second, one per frame, to 20 subscribers: one per round."""

    def run(updates: int) -> float:
        return uvloop.run(fan_out_round(peer, url, pid, SUBSCRIBERS, updates, 1)).wall_rate

    per_second = run(WARM_UP_UPDATES) / SUBSCRIBERS
    updates = max(WARM_UP_UPDATES, int(round(per_second * 2, -3)))
    return [run(updates) / SUBSCRIBERS for _ in range(PEAK_ROUNDS)]


def notes(rounds: list[Sample], rate: float) -> list[str]:
    """What limits a peer's figures: rounds not kept up, fallen behind, or sent too slowly."""
    out = []
    missed = sum(not s.percentiles_ms for s in rounds)
    if missed:
        out.append(f"{missed} of {len(rounds)} rounds not kept up: deliveries missing at the timeout")
    behind = [s.delivered_rate for s in rounds if s.percentiles_ms and s.delivered_rate < BEHIND * rate]
    if behind:
        out.append(f"{len(behind)} of {len(rounds)} fell behind: {min(behind):,.0f}/s delivered at worst")
    slow = [s.sent_rate for s in rounds if s.sent_rate < BEHIND * rate]
    if slow:
        out.append(f"publisher behind in {len(slow)} of {len(rounds)}: {min(slow):,.0f}/s at worst")
    return out


def describe(benchmark: str, rate: float, samples: dict[str, list[Sample]]) -> list[Figure]:
    out = []
    for name, rounds in samples.items():
        note = "; ".join(notes(rounds, rate))
        for label, _ in QUANTILES:
            values = [s.percentiles_ms[label] for s in rounds if s.percentiles_ms]
            out.append(Figure(benchmark, label, name, "ms", values, note))
        out.append(Figure(benchmark, "server CPU / wall", name, "cores", [s.server_cpu for s in rounds]))
        out.append(Figure(benchmark, "load client CPU / wall", name, "cores", [s.client_cpu for s in rounds]))
    # The ratio against the first other peer: the relay (the Python floor), or the baseline.
    other = next(name for name in samples if name != "sowpush")
    note = "; ".join(f"{name}: {text}" for name in ("sowpush", other) for text in notes(samples[name], rate))
    for label in ("p99", "p999"):
        pairs = zip(samples["sowpush"], samples[other], strict=True)
        ratio = [
            mine.percentiles_ms[label] / theirs.percentiles_ms[label]
            for mine, theirs in pairs
            if mine.percentiles_ms and theirs.percentiles_ms
        ]
        out.append(Figure(benchmark, f"sowpush {label} / {other} {label}", "ratio", "x", ratio, note))
    return out


PRELOAD_FRAME = 2_000


async def preload(url: str, records: int) -> None:
    """``records`` records with keys the rounds never use, published in frames, then a query whose
    answer says they are all applied."""
    async with websockets.connect(url, max_size=None) as socket:
        for start in range(0, records, PRELOAD_FRAME):
            stop = min(records, start + PRELOAD_FRAME)
            updates = [{**record(n, 1), "id": f"preload-{n}"} for n in range(start, stop)]
            await socket.send(encode("sowpush", True, updates)[0])
        await socket.send(orjson.dumps({"c": "sow", "t": "bench", "cid": "loaded", "top_n": 1}))
        while b'"loaded"' not in (await socket.recv(decode=False)):
            pass


def figures(
    rounds: int,
    seconds: float,
    fractions: list[float],
    names: tuple[str, ...] = PEER_NAMES,
    records: int = 0,
) -> list[Figure]:
    peers = [PEERS[name] for name in names]
    out = []
    with tempfile.TemporaryDirectory() as work:
        started = {}
        try:
            for peer in peers:
                started[peer.name] = peer.start(Path(work) / peer.name)
                if records and peer.dialect == "sowpush":
                    loading = time.perf_counter()
                    uvloop.run(preload(started[peer.name][1], records))
                    print(f"{peer.name}: {records:,} records loaded in {time.perf_counter() - loading:.0f} s")
            benchmark = f"peak, one publish per frame, {SUBSCRIBERS} subscribers, sent at once"
            peaks = {}
            for peer in peers:
                process, url = started[peer.name]
                values = peak(peer, process.pid, url)
                peaks[peer.name] = statistics.median(values)
                out.append(Figure(benchmark, "publishes per wall second", peer.name, "/s", values))
            slowest = min(peaks, key=peaks.__getitem__)
            top = peaks[slowest]
            print(f"the slowest peak is {slowest}'s: {top:,.0f} publishes/s", flush=True)
            for peer in peers:  # unmeasured: connections, Node's JIT
                process, url = started[peer.name]
                uvloop.run(paced_round(peer, url, process.pid, top * fractions[0], 1.0))
            for fraction in fractions:
                rate = round(top * fraction)
                samples: dict[str, list[Sample]] = {peer.name: [] for peer in peers}
                for _ in range(rounds):
                    for peer in peers:
                        process, url = started[peer.name]
                        sample = uvloop.run(paced_round(peer, url, process.pid, rate, seconds))
                        samples[peer.name].append(sample)
                sow = f" with a SOW of {records:,} records" if records else ""
                benchmark = (
                    f"latency{sow} at {round(fraction * 100)}% of the slowest peak, {slowest}'s "
                    f"({rate:,} publishes/s, {SUBSCRIBERS} subscribers)"
                )
                out += describe(benchmark, rate, samples)
        finally:
            for process, _ in started.values():
                process.terminate()
                process.wait()
    return out


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--fractions", default="0.25,0.5,0.9")
    parser.add_argument("--peers", default=",".join(PEER_NAMES))
    parser.add_argument("--records", type=int, default=0)
    args = parser.parse_args()
    fractions = [float(value) for value in args.fractions.split(",")]
    names = tuple(args.peers.split(","))
    print(f"{os.cpu_count()} cores shared by the servers and the load client, {args.rounds} rounds each")
    print(table(figures(args.rounds, args.seconds, fractions, names, args.records)))


if __name__ == "__main__":
    main()
