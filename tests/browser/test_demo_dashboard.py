"""What ./scripts/run shows a new user, run as one runs it: the server and the demo Spark feed
start, and the dashboard link it prints shows open orders and the traders' positions filling in,
numbers read as a desk expects, the open orders' count following the feed. Ctrl-C (a SIGINT to
the terminal's whole process group) then stops everything: no stack trace and nothing of Spark's
on the console, no process left behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from ..cluster.redis_process import free_port
from ..integration.server_process import sow_records
from ..spark.jobs import ROOT, group_alive
from ..waiting import HANG_S, eventually
from .conftest import ROW
from .desk import shot

# What the console of a quiet run never shows: a stack trace, Spark's progress bars and chatter.
NOISE = ("Traceback", "Exception", "[Stage", " ERROR ", " WARN ", "log4j", "setLogLevel")
# The table learns its columns' widths as it draws them, so its width grows as it scrolls: scroll
# again until the column meant is drawn (a fixed number of scrolls fell short on a busy machine).
TURNOVER = "tbody [data-field='turnover']"
SCROLL_TO_TURNOVER = (
    f"(t) => {{ t.scrollLeft = t.scrollWidth; return t.querySelector({TURNOVER!r}) !== null; }}"
)


def filled(url: str) -> bool:
    """Both demo topics have records (False while the server is not listening yet)."""
    try:
        return bool(sow_records(url, "orders") and sow_records(url, "positions"))
    except OSError:
        return False


def wait_for(
    run: subprocess.Popen[str], console: Path, done: Callable[[], bool], what: str, timeout: float
) -> None:
    """Wait for ``done()``; fail with the console's text when ``run`` stops or ``timeout`` passes first."""
    deadline = time.monotonic() + timeout
    while not done():
        assert run.poll() is None, f"./scripts/run stopped:\n{console.read_text()}"
        assert time.monotonic() < deadline, f"{what}:\n{console.read_text()}"
        time.sleep(1)


@pytest.mark.slow
def test_scripts_run_serves_the_dashboard_it_prints_and_ctrl_c_stops_it_quietly(
    page: Page, tmp_path: Path
) -> None:
    port = free_port()
    console = tmp_path / "console.txt"
    with console.open("w") as out:
        run = subprocess.Popen(
            ["./scripts/run", "--data-dir", str(tmp_path / "data")],
            cwd=ROOT,
            env={**os.environ, "PORT": str(port), "DEMO_CHECKPOINT": str(tmp_path / "checkpoints")},
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # a terminal's foreground job: Ctrl-C reaches the whole group
        )
    try:
        url = f"ws://127.0.0.1:{port}/ws"
        wait_for(run, console, lambda: filled(url), "the demo feed fills the topics", 2 * HANG_S)
        link = re.search(r"^dashboard: (\S+)$", console.read_text(), re.MULTILINE)
        assert link and link.group(1).startswith(f"http://127.0.0.1:{port}/?topic=orders"), "no link"
        page.set_viewport_size({"width": 1600, "height": 1000})
        page.goto(link.group(1))
        orders, positions = page.locator(".view").nth(0), page.locator(".view").nth(1)
        expect(orders.locator(".topic")).to_have_text("orders")
        expect(positions.locator(".topic")).to_have_text("positions")
        expect(positions.locator(ROW)).to_have_count(8)  # a row per trader
        expect(orders.locator(ROW).first).to_be_visible()
        # Numbers read as a desk expects: separated thousands (turnover is a late column: the table
        # draws only the columns on screen, so it is scrolled to).
        table = positions.locator("regular-table")
        eventually(lambda: table.evaluate(SCROLL_TO_TURNOVER), "the positions table drew no turnover column")
        expect(positions.locator(TURNOVER).first).to_have_text(re.compile(r"^\d{1,3}(,\d{3})+\.\d\d$"))
        # The orders view's size follows the feed.
        first_count = orders.locator(".rows").inner_text()
        expect(orders.locator(".rows")).not_to_have_text(first_count)
        shot(page, "demo-dashboard.png")
        assert page.errors == []  # type: ignore[attr-defined]
        wait_for(
            run, console, lambda: " rows/s" in console.read_text(), "the demo logs no summary line", HANG_S
        )
        os.killpg(run.pid, signal.SIGINT)
        run.wait(timeout=HANG_S)
        eventually(lambda: not group_alive(run.pid), "a process (Spark's JVM?) outlived Ctrl-C", step=0.5)
    finally:
        if group_alive(run.pid):
            os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    text = console.read_text()
    assert "demo feed started: demo-positions, demo-orders" in text
    for noise in NOISE:
        assert noise not in text, f"{noise!r} on the console:\n{text}"
