"""What ./scripts/run shows a new user: the demo Spark feed into the dashboard link it prints.
Open orders and the traders' positions fill in, numbers read as a desk expects, and the open
orders' count follows the feed as orders arrive and fill."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from ..integration.server_process import ServerProcess, running
from ..spark.jobs import ROOT, kill
from ..spark.test_demo_console import start_demo, stop
from .conftest import ROW
from .desk import shot

SCROLL_TO_THE_RIGHT = """async (table) => {
  for (let step = 0; step < 20; step++) {
    table.scrollLeft = table.scrollWidth;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}"""
DEMO_TOPICS = [{"name": "orders", "key": ["/order"]}, {"name": "positions", "key": ["/trader"]}]


def run_link() -> str:
    """The dashboard link ./scripts/run prints (its query)."""
    match = re.search(r'^view="(\?[^"]+)"$', (ROOT / "scripts" / "run").read_text(), re.MULTILINE)
    assert match, "scripts/run prints no dashboard link"
    return match.group(1)


@pytest.fixture
def demo_server(tmp_path: Path) -> Iterator[ServerProcess]:
    with running(tmp_path, DEMO_TOPICS) as process:
        yield process


@pytest.mark.slow
def test_the_demo_feed_in_the_dashboard_link_scripts_run_prints(
    page: Page, demo_server: ServerProcess, tmp_path: Path
) -> None:
    feed = start_demo(demo_server, tmp_path / "checkpoints")
    try:
        page.set_viewport_size({"width": 1600, "height": 1000})
        page.goto(f"{demo_server.http}/{run_link()}")
        orders, positions = page.locator(".view").nth(0), page.locator(".view").nth(1)
        expect(orders.locator(".topic")).to_have_text("orders")
        expect(positions.locator(".topic")).to_have_text("positions")
        expect(positions.locator(ROW)).to_have_count(8, timeout=60_000)  # a row per trader
        expect(orders.locator(ROW).first).to_be_visible()
        # Numbers read as a desk expects: separated thousands (turnover is a late column: the table
        # draws the columns on screen, so it is scrolled to, as far as the columns it measures go).
        positions.locator("regular-table").evaluate(SCROLL_TO_THE_RIGHT)
        expect(positions.locator("td[data-field='turnover']").first).to_have_text(
            re.compile(r"^\d{1,3}(,\d{3})+\.\d\d$")
        )
        # The orders view's size follows the feed.
        first_count = orders.locator(".rows").inner_text()
        expect(orders.locator(".rows")).not_to_have_text(first_count, timeout=30_000)
        shot(page, "demo-dashboard.png")
        assert page.errors == []  # type: ignore[attr-defined]
    finally:
        if feed.poll() is None:
            stop(feed)
        kill(feed)
