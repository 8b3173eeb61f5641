"""A resumed view against a full snapshot (docs/protocol.md, Resuming a view): a view of 50,000
records, of which 100 changed (90 updated, 10 deleted) while its client was away. Each round makes
the changes, then reopens the view both ways, in turn: with ``resume`` from the bookmark the client
last received, and as a plain ``sow_and_subscribe``. Prints the bytes received and the time until
``group_end`` of each (min / median / max over the rounds), and the server's CPU time.

    .venv/bin/python bench/resume.py [--records 50000] [--changed 100] [--rounds 5] [--durable]

The load client reads frames without parsing them, except the one frame that ends the reply.
"""

from __future__ import annotations

import asyncio
import time

import orjson
import websockets
from figures import spread
from harness import arguments, cpu_seconds, serving

RECORD_PAD = "x" * 120  # a record of about 200 bytes, as a blotter row


def record(n: int, version: int) -> dict[str, object]:
    return {"order": n, "sym": f"S{n % 500}", "qty": n % 1000, "version": version, "note": RECORD_PAD}


async def publish_all(url: str, commands: list[dict[str, object]]) -> None:
    async with websockets.connect(url, max_size=None) as ws:
        for start in range(0, len(commands), 1000):
            await ws.send(orjson.dumps(commands[start : start + 1000]).decode())
        await ws.send(orjson.dumps({"c": "flush", "cid": "done"}).decode())
        while b'"cid":"done"' not in (await ws.recv(decode=False)):
            pass


async def open_view(url: str, bookmark: str | None) -> tuple[int, float, str, bool]:
    """Bytes received and seconds until group_end, the group_end's bookmark, and ``resumed``."""
    command: dict[str, object] = {"c": "sow_and_subscribe", "t": "orders", "cid": "v", "o": "resume"}
    if bookmark is not None:
        command["bm"] = bookmark
    async with websockets.connect(url, max_size=None) as ws:
        started = time.perf_counter()
        await ws.send(orjson.dumps(command).decode())
        received = 0
        while True:
            frame = await ws.recv(decode=False)
            received += len(frame)
            if b'"group_end"' in frame:
                elapsed = time.perf_counter() - started
                end = next(m for m in orjson.loads(frame) if m["c"] == "group_end")
                return received, elapsed, end["bm"], bool(end.get("resumed"))


async def run(url: str, pid: int, records: int, changed: int, rounds: int) -> None:
    await publish_all(url, [{"c": "publish", "t": "orders", "data": record(n, 0)} for n in range(records)])
    _, _, bookmark, _ = await open_view(url, None)
    figures: dict[str, dict[str, list[float]]] = {
        way: {"kB": [], "ms": [], "cpu_ms": []} for way in ("resume", "snapshot")
    }
    deleted = 0
    for round_ in range(1, rounds + 1):
        # The changes made while the client was away: updates spread over the view, and deletes.
        step = records // changed
        updates = [
            {"c": "publish", "t": "orders", "data": record(n, round_)} for n in range(0, records, step)
        ]
        gone = [
            {"c": "sow_delete", "t": "orders", "filter": f"/order = {records - 1 - deleted - i}"}
            for i in range(changed // 10)
        ]
        deleted += len(gone)
        await publish_all(url, updates[: changed - len(gone)] + gone)
        for way in ("resume", "snapshot"):
            cpu_before = cpu_seconds(pid)
            size, elapsed, end_bm, resumed = await open_view(url, bookmark if way == "resume" else None)
            assert resumed == (way == "resume"), f"{way}: resumed={resumed}"
            figures[way]["kB"].append(size / 1000)
            figures[way]["ms"].append(elapsed * 1000)
            figures[way]["cpu_ms"].append((cpu_seconds(pid) - cpu_before) * 1000)
            if way == "resume":
                bookmark = end_bm  # the next round resumes from here
    print(f"a view of {records:,} records, {changed} changed while away; {rounds} rounds, min / median / max")
    for way, values in figures.items():
        print(
            f"  {way:<9} {spread(values['kB'])} kB   {spread(values['ms'])} ms to group_end   "
            f"server CPU {spread(values['cpu_ms'])} ms"
        )
    ratio = sorted(figures["snapshot"]["kB"])[rounds // 2] / sorted(figures["resume"]["kB"])[rounds // 2]
    print(f"  the median resume is {ratio:,.0f}x smaller than the snapshot")


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--changed", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--durable", action="store_true", help="a durable topic (resumes from the log)")
    args = parser.parse_args()
    durable = "true" if args.durable else "false"
    with serving(f'[[topic]]\nname = "orders"\nkey = ["/order"]\ndurable = {durable}\n') as (url, _, server):
        asyncio.run(run(url, server.pid, args.records, args.changed, args.rounds))


if __name__ == "__main__":
    main()
