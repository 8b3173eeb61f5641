"""The Python publisher's ``publish_many``: 500,000 persisted publishes in one call, to a durable
topic of a real server on a loopback port, until ``wait_persisted`` returns (every one on disk).

    .venv/bin/python bench/publish_many.py [--records 500000] [--rounds 3] [--store memory|file]
        [--ack-every 500]

Each round is a new ``Publisher`` (its own client name) with a new publish store (``--store
file``: a ``FilePublishStore`` in the run's directory, fsynced before the frames go). Prints, min
/ median / max over the rounds: the wall time from the call to the last persisted ack, the
publisher's CPU time (this process) and the server's, and whether the server closed the
publisher meanwhile (a slow consumer's 4001 is logged by the client's reconnect), and how many
persisted acks it read (the server sends one per group commit, so a faster server sends more).
The publisher is one Python process: its CPU time (encoding every publish, reading every ack) is
what limits the figure when it is close to the wall time; the server's is what it costs to
persist them; the note says which. Then the store alone: ``--records`` pending publishes taking
acks of ``--ack-every`` each, the publisher's whole cost of acks (it was quadratic in what was
pending: a scan of every pending publish per ack).
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from figures import Figure, table
from harness import arguments, cpu_seconds, serving

from server.client import FilePublishStore, MemoryPublishStore, Publisher, PublishStore

TOPIC = '[[topic]]\nname = "orders"\nkey = ["/order"]\ndurable = true\n'


def record(n: int) -> dict[str, object]:
    """A blotter row of about 100 bytes."""
    return {"order": n, "sym": f"S{n % 500}", "qty": n % 1000, "px": 101.25, "side": "B", "trader": "t7"}


class Reconnects(logging.Handler):
    """Counts the client's reconnect lines (each one a connection the server closed or lost)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "reconnect" in record.getMessage():
            self.count += 1


class Counted:
    """A publish store that counts the acks it is given (``discard_through``: the logon's and every
    persisted ack), around the store under test."""

    def __init__(self, store: PublishStore) -> None:
        self.store = store
        self.acks = 0

    def add(self, seq: int, message: bytes) -> None:
        self.store.add(seq, message)

    def sync(self) -> None:
        self.store.sync()

    def discard_through(self, seq: int) -> None:
        self.acks += 1
        self.store.discard_through(seq)

    def pending(self) -> Iterator[tuple[int, bytes]]:
        return self.store.pending()

    @property
    def last_seq(self) -> int:
        return self.store.last_seq

    def __len__(self) -> int:
        return len(self.store)


async def one_round(url: str, name: str, rows: list[dict[str, object]], store: PublishStore) -> float:
    publisher = Publisher(url, name, store=store)
    await publisher.connect()
    try:
        started = time.perf_counter()
        await publisher.publish_many("orders", rows)
        await publisher.wait_persisted()
        return time.perf_counter() - started
    finally:
        await publisher.close()


def acks_alone(kind: str, records: int, every: int, directory: Path) -> float:
    """Seconds for a store holding ``records`` pending publishes to take the acks that discard
    them ``every`` at a time (the publisher's part of reading acks, without a socket)."""
    store = FilePublishStore(directory / f"alone-{time.monotonic_ns()}.store") if kind == "file" else None
    held: PublishStore = store if store is not None else MemoryPublishStore()
    for seq in range(1, records + 1):
        held.add(seq, b'{"c":"publish"}')
    held.sync()
    started = time.perf_counter()
    for through in range(every, records + every, every):
        held.discard_through(through)
    elapsed = time.perf_counter() - started
    if store is not None:
        store.close()
    return elapsed


def limit(wall: float, client: float, server: float) -> str:
    """What the wall time waits on, from the medians: a process that ran nearly all of it, or else
    neither (the machine's other work, or the server's fsyncs)."""
    if client > 0.8 * wall:
        return "the publisher's one core"
    if server > 0.8 * wall:
        return "the server's CPU"
    if client + server > 0.8 * wall:
        return "the publisher's CPU, then the server's (mostly in turn: it encodes, the server persists)"
    load = os.getloadavg()[0]
    return f"neither process's CPU: waits (load average {load:.1f} on {os.cpu_count()} cores, fsyncs)"


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--store", choices=("memory", "file"), default="memory")
    parser.add_argument("--ack-every", type=int, default=500, help="publishes per ack, for the store alone")
    args = parser.parse_args()
    reconnects = Reconnects()
    logging.getLogger("server.client").addHandler(reconnects)
    benchmark = f"publish_many of {args.records:,} persisted publishes, a {args.store} store"
    wall = Figure(benchmark, "wall time to the last persisted ack", "sowpush", "s")
    client = Figure(benchmark, "publisher CPU time", "sowpush", "s")
    server_cpu = Figure(benchmark, "server CPU time", "sowpush", "s")
    closed = Figure(benchmark, "connections lost meanwhile", "sowpush", "")
    acks = Figure(benchmark, "acks read (each discards what it covers)", "sowpush", "")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the start", flush=True)
    with serving(TOPIC) as (url, _, server), tempfile.TemporaryDirectory() as stores:
        for round_index in range(args.rounds):
            offset = round_index * args.records  # new records each round: no update of old ones
            rows = [record(offset + n) for n in range(args.records)]
            store: PublishStore = (
                FilePublishStore(Path(stores) / f"round{round_index}.store")
                if args.store == "file"
                else MemoryPublishStore()
            )
            counted = Counted(store)
            before = (time.process_time(), cpu_seconds(server.pid), reconnects.count)
            elapsed = asyncio.run(one_round(url, f"bench-publish-many-{round_index}", rows, counted))
            acks.values.append(counted.acks)
            wall.values.append(elapsed)
            client.values.append(time.process_time() - before[0])
            server_cpu.values.append(cpu_seconds(server.pid) - before[1])
            closed.values.append(reconnects.count - before[2])
            print(
                f"round {round_index + 1}: {elapsed:.2f} s, publisher CPU {client.values[-1]:.2f} s, "
                f"server CPU {server_cpu.values[-1]:.2f} s, {acks.values[-1]:.0f} acks, "
                f"{closed.values[-1]:.0f} reconnects, "
                f"load average {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            if isinstance(store, FilePublishStore):
                store.close()
        alone = Figure(
            f"the {args.store} store alone: {args.records:,} pending, acked {args.ack_every} at a time",
            f"{-(-args.records // args.ack_every):,} acks",
            "sowpush",
            "s",
        )
        for _ in range(args.rounds):
            alone.values.append(acks_alone(args.store, args.records, args.ack_every, Path(stores)))
    wall.note = f"limited by {limit(wall.median, client.median, server_cpu.median)}"
    print()
    print(table([wall, client, server_cpu, acks, closed, alone]))


if __name__ == "__main__":
    main()
