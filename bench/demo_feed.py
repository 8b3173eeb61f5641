"""The demo feed as ./scripts/run starts it, measured: the server (with the demo's topics), the
feed (``python -m spark_feeds.demo``: its Python driver and Spark's JVM) and one dashboard-like
subscriber holding a delta view of every order and position. After a warm-up, over a window:
the CPU each process used (of one core), the updates a second the subscriber received per topic,
how many orders a second changed, and the bytes the deltas saved against full records (counted
as the dashboard counts them: each record's JSON length minus its message's share of the frame).

    .venv/bin/python bench/demo_feed.py [--seconds 60] [--warm-up 30] [demo options...]

Options after ``--`` go to the demo (``-- --orders-per-second 4000 --trigger-seconds 2``).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import jsonpatch
import orjson
from harness import ROOT, arguments, cpu_seconds, free_port, serve
from websockets.sync.client import connect


class Dashboard:
    """A delta view of each topic, kept like the dashboard keeps it, with its figures."""

    def __init__(self, url: str, topics: list[str]) -> None:
        self.url, self.topics = url, topics
        self.records: dict[str, dict[str, Any]] = {}
        self.updates: Counter[str] = Counter()
        self.bytes = 0
        self.saved = 0
        self.orders_changed: set[str] = set()  # keys of orders changed since the last look
        self.lock = threading.Lock()
        self.done = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        with connect(self.url, max_size=None) as ws:
            for topic in self.topics:
                command = {"c": "sow_and_delta_subscribe", "t": topic, "sub_id": topic, "o": "oof"}
                ws.send(orjson.dumps(command).decode())
            while not self.done.is_set():
                try:
                    frame = ws.recv(timeout=0.5)
                except TimeoutError:
                    continue
                self._frame(frame if isinstance(frame, bytes) else frame.encode())

    def _frame(self, frame: bytes) -> None:
        messages = orjson.loads(frame)
        share = len(frame) / max(len(messages), 1)
        with self.lock:
            self.bytes += len(frame)
            for message in messages:
                if message.get("c") not in ("sow", "p"):
                    continue
                key = f"{message['t']}/{message['k']}"
                if "patch" in message:
                    record = jsonpatch.apply_patch(self.records[key], message["patch"])
                    self.saved += max(0, len(orjson.dumps(record)) - int(share))
                else:
                    record = message["data"]
                self.records[key] = record
                if message["c"] == "p":
                    self.updates[message["t"]] += 1
                    if message["t"] == "orders":
                        self.orders_changed.add(key)

    def look(self) -> tuple[Counter[str], int, int, set[str]]:
        with self.lock:
            seen = (Counter(self.updates), self.bytes, self.saved, set(self.orders_changed))
            self.orders_changed.clear()
            return seen


def jvm_of(pid: int) -> int:
    """Spark's JVM: the feed's child process."""
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        if "java" in Path(f"/proc/{child}/cmdline").read_text():
            return int(child)
    raise RuntimeError("the feed has no JVM (yet)")


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--seconds", type=float, default=60, help="the measured window")
    parser.add_argument("--warm-up", type=float, default=30, help="seconds after the first records")
    parser.add_argument("demo", nargs="*", help="options for python -m spark_feeds.demo (after --)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        port = free_port()
        server = serve((ROOT / "server" / "demo.toml").read_text(), Path(work), port)
        url = f"ws://127.0.0.1:{port}/ws"
        command = [sys.executable, "-m", "spark_feeds.demo", "--url", url, "--checkpoint", f"{work}/ck"]
        feed = subprocess.Popen(
            [*command, *args.demo],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        dashboard = Dashboard(url, ["orders", "positions"])
        try:
            while not (dashboard.updates["orders"] and dashboard.updates["positions"]):
                assert feed.poll() is None, "the demo feed stopped"
                time.sleep(1)
            time.sleep(args.warm_up)
            jvm = jvm_of(feed.pid)
            pids = {"server": server.pid, "feed (Python)": feed.pid, "feed (Spark JVM)": jvm}
            cpu = {name: cpu_seconds(pid) for name, pid in pids.items()}
            updates, received, saved, _ = dashboard.look()
            changed: list[int] = []
            started = time.perf_counter()
            while time.perf_counter() - started < args.seconds:
                time.sleep(1)
                changed.append(len(dashboard.look()[3]))
            elapsed = time.perf_counter() - started
            used = {name: cpu_seconds(pid) - cpu[name] for name, pid in pids.items()}
            updates_after, received_after, saved_after, _ = dashboard.look()
            book = sum(1 for key in dashboard.records if key.startswith("orders/"))
        finally:
            dashboard.done.set()
            feed.terminate()
            feed.wait(60)
            server.terminate()
            server.wait()
    options = " ".join(args.demo) or "(defaults)"
    print(f"demo feed {options}: {elapsed:.0f} s after a {args.warm_up:.0f} s warm-up")
    for name, seconds in used.items():
        print(f"  CPU {name:<17} {100 * seconds / elapsed:5.1f} % of a core")
    print(f"  CPU total             {100 * sum(used.values()) / elapsed:5.1f} % of a core (2 cores: 200 %)")
    for topic in ("orders", "positions"):
        rate = (updates_after[topic] - updates[topic]) / elapsed
        print(f"  {topic:<9} {rate:8,.0f} updates/s to a subscriber of every record")
    median = sorted(changed)[len(changed) // 2]
    print(f"  orders changed each second: median {median:,} of {book:,} in the book")
    got, kept = received_after - received, saved_after - saved
    print(
        f"  bytes received {got / elapsed / 1024:,.0f} KiB/s; "
        f"saved by deltas {kept / elapsed / 1024:,.0f} KiB/s "
        f"({100 * kept / (got + kept):.0f} % of what full records would have taken)"
    )


if __name__ == "__main__":
    main()
