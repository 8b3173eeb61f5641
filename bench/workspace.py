"""A desk's workspace under the demo feed: a headless page with six live panes while the Spark demo
feed (``python -m spark_feeds.demo``, as ``./scripts/run`` starts it) writes orders, positions and
quotes, against the same page with one pane. Each round measures both in turn (interleaved, so a
slow moment of the machine falls on each): the page's frame times (median, 99th percentile,
worst: the gaps between animation frames), its main thread's busy time (Chromium's TaskDuration)
per second of wall time, and the changes the panes received per second; min / median / max over
the rounds, with the server's CPU beside them.

The six panes: the demo's open orders (``status IN ('new', 'partial')``, with OOFs), positions,
orders grouped by desk (an aggregated view), orders by quantity (a moving sort), quotes, and the
orders of the traders selected in positions (a linked view, a trader selected).

    .venv/bin/python bench/workspace.py [--seconds 10] [--rounds 3] [--warm-up 20]

What limits the figures: the machine has 2 cores, shared by Chromium (renderer and browser
processes), the server, the feed's Python driver and Spark's JVM (which alone takes most of a
core). Every figure is a floor for a desk's workstation, where the feed runs elsewhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from browser_grid import FRAME_RECORDER, busy
from figures import print_round, print_rounds
from harness import ROOT, arguments, cpu_seconds, free_port, serve
from playwright.sync_api import Browser, sync_playwright

OPEN = quote("/status IN ('new', 'partial')")
SIX = (
    f"topic=orders&filter={OPEN}&options=oof&orderby=/order"
    "&topic=positions"
    "&topic=orders&group=/desk"
    "&topic=orders&orderby=" + quote("/qty DESC") + "&topic=quotes"
    "&topic=orders&link=positions:trader"
)
TARGETS = {"one pane": (f"topic=orders&filter={OPEN}&options=oof&orderby=/order", 1), "six panes": (SIX, 6)}

# Changes the page's views received so far, every pane's tree (web/view.js stats).
RECEIVED = """() => {
  let total = 0;
  const visit = (node) => {
    total += node.view.stats.updates;
    for (const child of node.children.values()) visit(child);
  };
  for (const panel of dashboard.panels) if (panel.tree) visit(panel.tree.root);
  return total;
}"""


def measure(browser: Browser, base: str, target: str, seconds: float, server_pid: int) -> dict[str, float]:
    """One target, one round: open the link, wait for every pane's first rows, then measure."""
    query, panes = TARGETS[target]
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    try:
        page.goto(f"{base}/?{query}")
        page.wait_for_function(
            f"() => dashboard.panels.size === {panes} && [...dashboard.panels].every((p) => p.established)",
            timeout=120_000,
        )
        if panes > 1:  # the linked pane follows a trader selected in positions
            page.locator(".view").nth(1).locator("regular-table tbody tr").first.locator("td").first.click()
        page.wait_for_timeout(1000)
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        busy_before = busy(cdp)
        page.evaluate(FRAME_RECORDER)
        received_before = page.evaluate(RECEIVED)
        cpu_before = cpu_seconds(server_pid)
        started = time.perf_counter()
        page.wait_for_timeout(seconds * 1000)
        elapsed = time.perf_counter() - started
        received = page.evaluate(RECEIVED) - received_before
        frames = sorted(page.evaluate("() => frameTimes"))
        busy_after = busy(cdp)
        server_cpu = cpu_seconds(server_pid) - cpu_before
        assert page.evaluate("() => document.querySelectorAll('.view').length") == panes
    finally:
        page.close()
    return {
        "received/s": received / elapsed,
        "median frame ms": frames[len(frames) // 2],
        "p99 frame ms": frames[int(len(frames) * 0.99)],
        "worst frame ms": frames[-1],
        "main thread busy %": 100 * (busy_after - busy_before) / elapsed,
        "server CPU %": 100 * server_cpu / elapsed,
    }


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm-up", type=float, default=20.0, help="seconds of feed before the first round")
    args = parser.parse_args()
    chromium = shutil.which(os.environ.get("CHROMIUM", "chromium")) or "/usr/bin/chromium"
    results: dict[str, list[dict[str, float]]] = {name: [] for name in TARGETS}
    with tempfile.TemporaryDirectory() as work:
        port = free_port()
        server = serve((ROOT / "server" / "demo.toml").read_text(), Path(work), port)
        url = f"ws://127.0.0.1:{port}/ws"
        command = [sys.executable, "-m", "spark_feeds.demo", "--url", url, "--checkpoint", f"{work}/ck"]
        feed = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with sync_playwright() as playwright:
                flags = ["--no-sandbox", "--disable-gpu"]
                browser = playwright.chromium.launch(executable_path=chromium, args=flags)
                probe = browser.new_page()
                probe.goto(f"http://127.0.0.1:{port}/?topic=positions")
                probe.wait_for_function("() => [...dashboard.panels][0]?.tree?.count > 0", timeout=300_000)
                probe.close()
                time.sleep(args.warm_up)
                for round_number in range(args.rounds):
                    for name in TARGETS:
                        assert feed.poll() is None, "the demo feed stopped"
                        figures = measure(browser, f"http://127.0.0.1:{port}", name, args.seconds, server.pid)
                        results[name].append(figures)
                        print_round(round_number, name, figures)
                browser.close()
        finally:
            feed.terminate()
            feed.wait(60)
            server.terminate()
            server.wait()
    rounds_said = f"{args.rounds} rounds (min / median / max)"
    print_rounds(f"the demo feed running, {args.seconds:.0f} s a measure, {rounds_said}", results)


if __name__ == "__main__":
    main()
