"""The dashboard over a topic of a million records, through the server's viewports: a headless page
opened by a link (``/?topic=orders&orderby=/order``) and what it costs to show and move.

Before measuring, the benchmark publishes ``--records`` records of about 200 bytes over a
WebSocket in batches (not measured). Each round then measures, in turn (interleaved, so a slow
moment of the machine falls on all of them), wall time and the server's CPU time for:

- dashboard, first screen: page.goto(link) until the table's first data row shows order 0;
- dashboard, scroll to middle: the table's scroll container scrolled to half its height, until
  the first row drawn shows the order of its row index (rows are in key order, so index = order);
- dashboard, sort: a click on the ``rank`` header until the first row is the record of the lowest
  rank (ranks are a permutation of the keys, fixed, so the expected row is known);
- dashboard, quick filter: ``>=N-5`` typed in the ``order`` quick filter box, until the first row
  is the lowest rank among the last five orders;
- dashboard, bytes in 10 s: the bytes of the WebSocket frames the page receives in its first
  10 s (Playwright's framereceived payloads) while a feed changes ``--rate`` random records/s;
- AG Grid, first screen and scroll to middle: the same through web/adapters/aggrid-viewport.js
  (static/examples/aggrid.html?viewport=1); the scroll is the grid's own (ensureIndexVisible of
  the middle row), and it waits for the first row displayed to show its own index as order.

    .venv/bin/python bench/dashboard_viewport.py [--records 1000000] [--rate 2000] [--rounds 3]

What limits the figures: the machine has 2 cores, shared by Chromium (its renderer and its
browser process), the server and the feed thread, so every wall time includes waiting for a
core and is a floor for what a workstation sees. The topic is configured as a desk configures
its blotter, ``orders = ["/order", "/rank"]`` (docs/protocol.md, Kept orders): the link's order
and the sort's are kept from the start, so the first screen and the sort are moves in every
round, and the quick filter's order (``/order >= N-5``, sorted by ``/rank``) is built from the
records in that range of the kept ``/order``, found by bisection (no pass over the topic, in
round 1; later rounds reuse it, since the server keeps recent orders after their last window
closes). ``--no-kept-orders`` measures the same topic without them: then the
first open of each order builds it over the whole topic (seconds at 1,000,000 records), and the
sort builds ``/rank`` again in every round, since the orders a topic keeps idle hold 2,000,000
records at most (IDLE_ORDER_RECORDS, server/core/limits.py) and the least recently used goes.
The AG Grid first screen reuses the ``/order`` the dashboard built.
The scroll is one jump to the middle: the server reads rows at an offset of its order, whatever
the distance. The bytes figure depends on the feed's rate and on how many of its changes fall on
the rows on screen (and their margin), not on the topic's size; the server CPU beside it is
mostly the feed's 2,000 publishes/s, not the page.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson
from figures import spread
from harness import arguments, cpu_seconds, free_port, serve
from playwright.sync_api import Browser, Page, WebSocket, sync_playwright
from websockets.sync.client import connect

STRIDE = 7919  # a prime: n -> n * STRIDE % records is a permutation while records is not its multiple
SYMBOLS = ("MSFT", "AAPL", "NVDA", "IBM", "AMZN", "GOOG", "TSLA", "META")
NOTE = "x" * 48
TIMEOUT = int(os.environ.get("BENCH_TIMEOUT_MS", "300000"))


def record(n: int, records: int, rng: random.Random) -> dict[str, object]:
    """Record ``n``, about 200 bytes as JSON: its key ``order`` and ``rank`` are fixed; quantity
    and price move with every update."""
    return {
        "order": n,
        "rank": (n * STRIDE + 1) % records,
        "sym": SYMBOLS[n % len(SYMBOLS)],
        "side": "BS"[n // 8 % 2],
        "qty": rng.randrange(1, 10_000),
        "px": round(rng.uniform(10, 500), 2),
        "trader": f"trader-{n % 37:02d}",
        "desk": f"desk-{n % 5}",
        "venue": ("XNAS", "XNYS", "ARCX", "BATS")[n % 4],
        "note": NOTE,
    }


def load(url: str, records: int) -> None:
    rng = random.Random(0)
    with connect(url, max_size=None) as ws:
        for start in range(0, records, 2000):
            ws.send(
                orjson.dumps(
                    [
                        {"c": "publish", "t": "orders", "data": record(n, records, rng)}
                        for n in range(start, min(start + 2000, records))
                    ]
                ).decode()
            )
        ws.send(orjson.dumps({"c": "flush", "cid": "loaded"}).decode())
        while b'"loaded"' not in ws.recv(timeout=600).encode():
            pass


def feed(url: str, records: int, rate: int, stop: threading.Event) -> None:
    rng = random.Random(1)
    batch = max(1, rate // 50)  # 50 frames a second
    with connect(url) as ws:
        next_send = time.perf_counter()
        while not stop.is_set():
            ws.send(
                orjson.dumps(
                    [
                        {"c": "publish", "t": "orders", "data": record(rng.randrange(records), records, rng)}
                        for _ in range(batch)
                    ]
                ).decode()
            )
            next_send += 1 / 50
            time.sleep(max(0.0, next_send - time.perf_counter()))


# The dashboard's table: its data rows, each row's `order` cell (the key comes first) and its
# row index (regular-table's getMeta).
FIRST_ROW = """() => {
  const table = document.querySelector("regular-table");
  const td = table?.querySelector("tbody tr td");
  if (!td || !td.textContent) return null;
  return { text: td.textContent.trim(), y: table.getMeta(td)?.y };
}"""


def first_row(page: Page) -> dict[str, object] | None:
    return page.evaluate(FIRST_ROW)  # type: ignore[no-any-return]


def timed(pid: int, action: Callable[[], None]) -> tuple[float, float]:
    """Wall seconds and the server's CPU seconds of ``action``."""
    cpu = cpu_seconds(pid)
    start = time.perf_counter()
    action()
    return time.perf_counter() - start, cpu_seconds(pid) - cpu


def dashboard(browser: Browser, base: str, records: int, pid: int) -> dict[str, tuple[float, float]]:
    """First screen, scroll to the middle, sort, quick filter: (wall s, server CPU s) of each."""
    figures: dict[str, tuple[float, float]] = {}
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:

        def open_link() -> None:
            page.goto(base + "/?topic=orders&orderby=/order")
            page.wait_for_function(f"() => ({FIRST_ROW})()?.text === '0'", timeout=TIMEOUT, polling=10)

        figures["first screen"] = timed(pid, open_link)
        page.wait_for_timeout(300)

        def scroll() -> None:
            page.evaluate(
                """() => { const t = document.querySelector("regular-table");
                t.scrollTop = (t.scrollHeight - t.clientHeight) / 2; }"""
            )
            page.wait_for_function(
                f"""() => {{ const r = ({FIRST_ROW})();
                return r && r.y > {records // 4} && r.text === String(r.y); }}""",
                timeout=TIMEOUT,
                polling=10,
            )

        figures["scroll to middle"] = timed(pid, scroll)
        # Back to the top (not measured): a sort keeps the scroll position.
        page.evaluate("() => { document.querySelector('regular-table').scrollTop = 0; }")
        page.wait_for_function(f"() => ({FIRST_ROW})()?.text === '0'", timeout=TIMEOUT, polling=10)
        page.wait_for_timeout(300)
        lowest = pow(STRIDE, -1, records) * (records - 1) % records  # rank 0

        def sort() -> None:
            page.click('regular-table .head[data-field="rank"] .title')
            page.wait_for_function(f"() => ({FIRST_ROW})()?.text === '{lowest}'", timeout=TIMEOUT, polling=10)

        figures["sort"] = timed(pid, sort)
        page.wait_for_timeout(300)
        last = range(records - 5, records)
        expected = min(last, key=lambda n: (n * STRIDE + 1) % records)

        def quick() -> None:
            box = page.locator('regular-table .head[data-field="order"] input.quick')
            box.fill(f">={records - 5}")
            box.press("Enter")
            page.wait_for_function(
                f"() => ({FIRST_ROW})()?.text === '{expected}'", timeout=TIMEOUT, polling=10
            )

        figures["quick filter"] = timed(pid, quick)
    finally:
        page.close()
    return figures


def received_bytes(
    browser: Browser, base: str, url: str, records: int, rate: int, seconds: float, pid: int
) -> dict[str, tuple[float, float]]:
    """Bytes received by the dashboard's sockets in its first ``seconds`` while the feed runs,
    with the server's CPU time over them."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    total = [0]
    deadline = [float("inf")]

    def frame(payload: str | bytes) -> None:
        if time.perf_counter() < deadline[0]:
            total[0] += len(payload.encode() if isinstance(payload, str) else payload)

    def socket(ws: WebSocket) -> None:
        ws.on("framereceived", frame)

    page.on("websocket", socket)
    stop = threading.Event()
    feeding = threading.Thread(target=feed, args=(url, records, rate, stop))
    try:
        feeding.start()
        time.sleep(0.5)  # the feed at its rate
        cpu = cpu_seconds(pid)
        deadline[0] = time.perf_counter() + seconds
        page.goto(base + "/?topic=orders&orderby=/order")
        while time.perf_counter() < deadline[0]:
            page.wait_for_timeout(100)  # Playwright delivers the frame events while it waits
        used = cpu_seconds(pid) - cpu
    finally:
        stop.set()
        feeding.join()
        page.close()
    return {"bytes in first 10 s": (total[0], used)}


AG_ROW = """(i) => document.querySelector(
  `.ag-row[row-index="${i}"] [col-id="order"]`)?.textContent?.trim()"""


def aggrid(browser: Browser, base: str, records: int, pid: int) -> dict[str, tuple[float, float]]:
    figures: dict[str, tuple[float, float]] = {}
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:

        def open_page() -> None:
            page.goto(base + "/static/examples/aggrid.html?topic=orders&viewport=1&orderby=/order")
            page.wait_for_function(f"() => ({AG_ROW})(0) === '0'", timeout=TIMEOUT, polling=10)

        figures["first screen"] = timed(pid, open_page)
        page.wait_for_timeout(300)

        def scroll() -> None:
            page.evaluate(f"() => example.api.ensureIndexVisible({records // 2}, 'top')")
            page.wait_for_function(
                f"""() => {{ const i = example.api.getFirstDisplayedRowIndex();
                return i > {records // 4} && ({AG_ROW})(i) === String(i); }}""",
                timeout=TIMEOUT,
                polling=10,
            )

        figures["scroll to middle"] = timed(pid, scroll)
    finally:
        page.close()
    return figures


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rate", type=int, default=2_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-kept-orders", action="store_true", help="configure no kept orders")
    args = parser.parse_args()
    if args.records % STRIDE == 0:
        parser.error(f"--records must not be a multiple of {STRIDE}")
    chromium = shutil.which(os.environ.get("CHROMIUM", "chromium")) or "/usr/bin/chromium"
    results: dict[str, dict[str, list[tuple[float, float]]]] = {}
    with tempfile.TemporaryDirectory() as work:
        port = free_port()
        config = '[[topic]]\nname = "orders"\nkey = ["/order"]\n'
        if not args.no_kept_orders:
            config += 'orders = ["/order", "/rank"]\n'
        server = serve(config, Path(work), port)
        url = f"ws://127.0.0.1:{port}/ws"
        base = f"http://127.0.0.1:{port}"
        try:
            start = time.perf_counter()
            load(url, args.records)
            print(f"published {args.records:,} records in {time.perf_counter() - start:.1f} s", flush=True)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=chromium, args=["--no-sandbox", "--disable-gpu"]
                )
                for round_number in range(args.rounds):
                    parts = {
                        "dashboard": lambda: dashboard(browser, base, args.records, server.pid),
                        "dashboard, feed": lambda: received_bytes(
                            browser, base, url, args.records, args.rate, args.seconds, server.pid
                        ),
                        "AG Grid viewport": lambda: aggrid(browser, base, args.records, server.pid),
                    }
                    for name, part in parts.items():
                        for figure, value in part().items():
                            results.setdefault(name, {}).setdefault(figure, []).append(value)
                            print(
                                f"round {round_number + 1}, {name}, {figure}: "
                                f"{value[0]:,.3f} / server CPU {value[1]:.3f} s",
                                flush=True,
                            )
                browser.close()
        finally:
            server.terminate()
            server.wait()
    orders = (
        "no kept orders: round 1 builds each order, later rounds reuse it"
        if args.no_kept_orders
        else "/order and /rank kept by the topic; round 1 builds the filtered order"
    )
    print(
        f"\n{args.records:,} records, {args.rounds} rounds (min / median / max); "
        f"times in s, server CPU s beside; {orders}:"
    )
    for name, figures in results.items():
        print(f"  {name}")
        for figure, values in figures.items():
            print(
                f"    {figure:<20} {spread([v[0] for v in values])}"
                f"   server CPU {spread([v[1] for v in values])}"
            )


if __name__ == "__main__":
    main()
