"""The dashboard under load: a headless page with a view of 10,000 records receiving 1,000
updates/s. Each round measures every target in turn (interleaved, so a slow moment of the machine
falls on all of them): the dashboard's plain table (a viewport: it receives the updates to the
rows on screen); the same grouped by symbol (an aggregated view: every update changes a group's
totals); the same also sorted by quantity (the moving column); and the AG Grid example page
(static/examples/aggrid.html, bound by web/adapters/aggrid.js, which holds every row). For each:
updates received per second, frame times (median, 99th percentile, worst), and the page's main
thread busy time (Chromium's TaskDuration) per second of wall time, as min / median / max over the
rounds.

    .venv/bin/python bench/browser_grid.py [--records 10000] [--rate 1000] [--seconds 10] [--rounds 3]

Runs Debian's Chromium (/usr/bin/chromium, or $CHROMIUM) headless through Playwright; the
updates come from a separate thread over a real WebSocket. On two cores the page, the server and
the load thread share the machine: the figures are a floor, not what a desk's workstation does.
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
from figures import print_round, print_rounds
from harness import ROOT, arguments, free_port, serve
from playwright.sync_api import Browser, CDPSession, sync_playwright
from websockets.sync.client import connect

FRAME_RECORDER = """() => {
  window.frameTimes = [];
  let last = performance.now();
  const tick = (now) => { window.frameTimes.push(now - last); last = now; requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
}"""


def record(n: int, rng: random.Random) -> dict[str, object]:
    """Record ``n``: what names it (symbol, side, trader) is fixed, as in a desk's data; its
    quantity and price move with every update."""
    return {
        "id": n,
        "sym": ("MSFT", "AAPL", "NVDA", "IBM")[n % 4],
        "qty": rng.randrange(1, 1000),
        "px": round(rng.uniform(10, 500), 2),
        "side": "BS"[n // 4 % 2],
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


# What each target page is, and how the benchmark reads it: the records its view has, the
# updates it received, the changes waiting to be drawn.
DASHBOARD = (
    "[...dashboard.panels][0]?.tree?.records() ?? 0",
    "[...dashboard.panels][0].tree.root.view.stats.updates",
    "0",
)
TARGETS = {
    "dashboard": ("/?topic=grid", *DASHBOARD),
    "dashboard, grouped": ("/?topic=grid&group=/sym", *DASHBOARD),
    "dashboard, grouped + sorted": ("/?topic=grid&group=/sym&orderby=/qty%20DESC", *DASHBOARD),
    "AG Grid example": (
        "/static/examples/aggrid.html?topic=grid",
        "window.example?.view?.records.size ?? 0",
        "window.example.view.stats.updates",
        "0",
    ),
}


def measure(
    browser: Browser, base: str, url: str, records: int, rate: int, seconds: float, target: str
) -> dict[str, float]:
    """One target, one round: load the page, stream for ``seconds``, read the figures."""
    path, held, received, waiting = TARGETS[target]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.goto(base + path)
        page.wait_for_function(f"({held}) >= {records}", timeout=120_000)
        page.wait_for_timeout(500)
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        busy_before = busy(cdp)
        page.evaluate(FRAME_RECORDER)
        before = page.evaluate(f"() => {received}")
        sent = [0]
        streaming = threading.Thread(target=stream, args=(url, records, rate, seconds, sent))
        streaming.start()
        streaming.join()
        time.sleep(0.5)  # let the last frames land
        after = page.evaluate(f"() => {received}")
        frames = sorted(page.evaluate("() => frameTimes"))
        left = page.evaluate(f"() => {waiting}")
        busy_after = busy(cdp)
    finally:
        page.close()
    return {
        "received/s": (after - before - left) / seconds,
        "median frame ms": frames[len(frames) // 2],
        "p99 frame ms": frames[int(len(frames) * 0.99)],
        "worst frame ms": frames[-1],
        "main thread busy %": 100 * (busy_after - busy_before) / (seconds + 0.5),
    }


def busy(cdp: CDPSession) -> float:
    """Seconds the page's main thread has spent on tasks so far."""
    metrics = cdp.send("Performance.getMetrics")["metrics"]
    return float(next(m["value"] for m in metrics if m["name"] == "TaskDuration"))


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--rate", type=int, default=1_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="", help="measure only the targets whose name contains this")
    args = parser.parse_args()
    chromium = shutil.which(os.environ.get("CHROMIUM", "chromium")) or "/usr/bin/chromium"
    targets = [
        name
        for name in TARGETS
        if name != "AG Grid example" or (ROOT / "static/examples/aggrid.html").exists()
    ]
    results: dict[str, list[dict[str, float]]] = {name: [] for name in targets}
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
                for round_number in range(args.rounds):
                    for name in targets:
                        figures = measure(
                            browser,
                            f"http://127.0.0.1:{port}",
                            url,
                            args.records,
                            args.rate,
                            args.seconds,
                            name,
                        )
                        results[name].append(figures)
                        print_round(round_number, name, figures)
                browser.close()
        finally:
            server.terminate()
            server.wait()
    print_rounds(
        f"{args.records:,} rows, {args.rate:,} updates/s sent for {args.seconds:.0f} s, "
        f"{args.rounds} rounds (min / median / max)",
        results,
    )


if __name__ == "__main__":
    main()
