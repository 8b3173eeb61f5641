"""What a hidden dashboard costs (docs/protocol.md, Hidden views): two dashboards' sockets watch the
demo feed at the same time, the way the dashboard opens its views (sow_and_delta_subscribe with oof
and timestamp, on positions and orders). One tells the server its page is hidden. Prints the bytes
and messages each received in the live part (after the snapshots), per round, and their ratio.

    .venv/bin/python bench/hidden.py [--seconds 60] [--rounds 1] [--rows-per-second 20]
                                     [--hidden-interval 1s]

The demo feed publishes one micro-batch a second, in which each record changes at most once: at
the default hidden_interval of 1 s there is little to conflate. A longer interval shows what a
hidden page saves when records change faster than it.

Both sockets see the same changes in the same seconds, so the comparison needs no interleaving;
the demo feed (Spark, local) runs beside the server on the same two cores.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import orjson
import websockets
from figures import spread
from harness import ROOT, arguments, cpu_seconds, serving

VIEWS = (("positions", "oof,timestamp"), ("orders", "oof,timestamp"))


class Dashboard:
    def __init__(self, hidden: bool) -> None:
        self.hidden = hidden
        self.bytes = self.messages = 0
        self.counting = False

    async def watch(self, url: str, ready: asyncio.Event, stop: asyncio.Event) -> None:
        async with websockets.connect(url, max_size=None) as ws:
            if self.hidden:
                await ws.send(orjson.dumps({"c": "visibility", "hidden": True}).decode())
            for topic, options in VIEWS:
                command = {"c": "sow_and_delta_subscribe", "t": topic, "cid": topic, "o": options}
                await ws.send(orjson.dumps(command).decode())
            snapshots = 0
            while not stop.is_set():
                try:
                    async with asyncio.timeout(0.5):
                        frame = await ws.recv(decode=False)
                except TimeoutError:
                    continue
                if snapshots < len(VIEWS):
                    snapshots += frame.count(b'"c":"group_end"')
                    if snapshots == len(VIEWS):
                        ready.set()
                    continue
                if self.counting:
                    self.bytes += len(frame)
                    self.messages += frame.count(b'"c":"p"') + frame.count(b'"c":"oof"')


async def round_(url: str, seconds: float) -> tuple[Dashboard, Dashboard]:
    visible, hidden = Dashboard(False), Dashboard(True)
    stop = asyncio.Event()
    ready = [asyncio.Event(), asyncio.Event()]
    tasks = [
        asyncio.create_task(d.watch(url, r, stop)) for d, r in zip((visible, hidden), ready, strict=True)
    ]
    for event in ready:
        await event.wait()
    visible.counting = hidden.counting = True
    await asyncio.sleep(seconds)
    visible.counting = hidden.counting = False
    stop.set()
    await asyncio.gather(*tasks)
    return visible, hidden


async def wait_for_feed(url: str, timeout: float = 120.0) -> None:
    """Until the demo feed's first rows are in (Spark takes a while to start)."""
    deadline = time.monotonic() + timeout
    async with websockets.connect(url) as ws:
        await ws.send(orjson.dumps({"c": "subscribe", "t": "orders", "cid": "w"}).decode())
        while time.monotonic() < deadline:
            try:
                async with asyncio.timeout(1.0):
                    if b'"c":"p"' in await ws.recv(decode=False):
                        return
            except TimeoutError:
                continue
    raise RuntimeError("the demo feed published nothing")


async def run(url: str, pid: int, seconds: float, rounds: int, interval: str) -> None:
    await wait_for_feed(url)
    await asyncio.sleep(5)  # let the positions window fill
    figures: dict[str, dict[str, list[float]]] = {
        name: {"kB": [], "messages": []} for name in ("visible", "hidden")
    }
    cpu_before = cpu_seconds(pid)
    for _ in range(rounds):
        for dashboard in await round_(url, seconds):
            name = "hidden" if dashboard.hidden else "visible"
            figures[name]["kB"].append(dashboard.bytes / 1000)
            figures[name]["messages"].append(dashboard.messages)
    cpu = cpu_seconds(pid) - cpu_before
    print(f"the demo feed for {seconds:.0f} s, {rounds} round(s), min / median / max; server CPU {cpu:.1f} s")
    for name, values in figures.items():
        print(f"  {name:<8} {spread(values['kB'])} kB   {spread(values['messages'])} messages")
    shown, away = (sorted(figures[n]["kB"])[rounds // 2] for n in ("visible", "hidden"))
    print(
        f"  hidden_interval {interval}: a hidden dashboard receives {100 * away / shown:.1f} % of the bytes"
    )


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--rows-per-second", type=int, default=20)
    parser.add_argument("--hidden-interval", default="1s", help="the server's hidden_interval")
    args = parser.parse_args()
    config = (ROOT / "server" / "demo.toml").read_text()
    config = config.replace("[server]\n", f'[server]\nhidden_interval = "{args.hidden_interval}"\n', 1)
    with serving(config) as (url, work, server):
        demo = [
            sys.executable,
            "-m",
            "spark_feeds.demo",
            "--url",
            url,
            "--checkpoint",
            str(work / "checkpoints"),
        ]
        feed = subprocess.Popen(
            [*demo, "--rows-per-second", str(args.rows_per_second)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            asyncio.run(run(url, server.pid, args.seconds, args.rounds, args.hidden_interval))
        finally:
            feed.terminate()
            feed.wait()


if __name__ == "__main__":
    main()
