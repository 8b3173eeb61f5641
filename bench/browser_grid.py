"""The dashboard under load: a headless page with a view of 10,000 records receiving 1,000
updates/s for 10 s. Prints the updates the page applied per second and the worst frame time.

    .venv/bin/python bench/browser_grid.py [--records 10000] [--rate 1000] [--seconds 10]

Runs Debian's Chromium (/usr/bin/chromium, or $CHROMIUM) headless through Playwright; the
updates come from a separate thread over a real WebSocket.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import threading
import time
from pathlib import Path

import orjson
from harness import arguments, free_port, serve
from playwright.sync_api import sync_playwright
from websockets.sync.client import connect

FRAME_RECORDER = """() => {
  window.frameTimes = [];
  let last = performance.now();
  const tick = (now) => { window.frameTimes.push(now - last); last = now; requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
}"""


def record(n: int, rng: random.Random) -> dict[str, object]:
    return {
        "id": n,
        "sym": rng.choice(["MSFT", "AAPL", "NVDA", "IBM"]),
        "qty": rng.randrange(1, 1000),
        "px": round(rng.uniform(10, 500), 2),
        "side": rng.choice("BS"),
        "trader": f"t{n % 37}",
    }


def load(url: str, records: int) -> None:
    rng = random.Random(0)
    with connect(url) as ws:
        for start in range(0, records, 1000):
            ws.send(
                orjson.dumps(
                    [
                        {"c": "publish", "t": "grid", "data": record(n, rng)}
                        for n in range(start, min(start + 1000, records))
                    ]
                ).decode()
            )
        ws.send(orjson.dumps({"c": "flush", "cid": "loaded"}).decode())
        while b'"loaded"' not in ws.recv(timeout=30).encode():
            pass


def stream(url: str, records: int, rate: int, seconds: float, sent: list[int]) -> None:
    rng = random.Random(1)
    batch = max(1, rate // 50)  # 50 frames a second
    with connect(url) as ws:
        deadline = time.perf_counter() + seconds
        next_send = time.perf_counter()
        while time.perf_counter() < deadline:
            ws.send(
                orjson.dumps(
                    [
                        {"c": "publish", "t": "grid", "data": record(rng.randrange(records), rng)}
                        for _ in range(batch)
                    ]
                ).decode()
            )
            sent[0] += batch
            next_send += 1 / 50
            time.sleep(max(0.0, next_send - time.perf_counter()))


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--rate", type=int, default=1_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    chromium = shutil.which(os.environ.get("CHROMIUM", "chromium")) or "/usr/bin/chromium"
    with tempfile.TemporaryDirectory() as work:
        port = free_port()
        server = serve('[[topic]]\nname = "grid"\nkey = ["/id"]\n', Path(work), port)
        url = f"ws://127.0.0.1:{port}/ws"
        try:
            load(url, args.records)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=chromium, args=["--no-sandbox", "--disable-gpu"]
                )
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                started = time.perf_counter()
                page.goto(f"http://127.0.0.1:{port}/?topic=grid&filter=&options=")
                page.wait_for_function(
                    f"[...dashboard.panels][0]?.grid.keys.length >= {args.records}", timeout=60_000
                )
                print(f"{args.records:,} rows in the grid in {time.perf_counter() - started:.1f} s")
                page.evaluate(FRAME_RECORDER)
                before = page.evaluate("() => [...dashboard.panels][0].view.stats.updates")
                sent = [0]
                streaming = threading.Thread(
                    target=stream, args=(url, args.records, args.rate, args.seconds, sent)
                )
                streaming.start()
                streaming.join()
                time.sleep(0.5)  # let the last frames land
                after = page.evaluate("() => [...dashboard.panels][0].view.stats.updates")
                frames = page.evaluate("() => frameTimes")
                pending = page.evaluate("() => [...dashboard.panels][0].pending.size")
                browser.close()
        finally:
            server.terminate()
            server.wait()
    applied = after - before
    frames_sorted = sorted(frames)
    print(f"sent {sent[0]:,} updates in {args.seconds:.0f} s ({sent[0] / args.seconds:,.0f}/s)")
    print(f"applied {applied:,} updates: {applied / args.seconds:,.0f}/s; {pending} waiting at the end")
    print(
        f"frames: {len(frames):,}, median {frames_sorted[len(frames) // 2]:.1f} ms, "
        f"99th percentile {frames_sorted[int(len(frames) * 0.99)]:.1f} ms, worst {frames_sorted[-1]:.1f} ms"
    )


if __name__ == "__main__":
    main()
