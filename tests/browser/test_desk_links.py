"""Linked views, in real Chromium, as a desk uses them: the orders view follows the traders selected
in the positions view (one, several, none), the link is chosen in the toolbar and kept in the link."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from ..integration.server_process import ServerProcess, running
from .desk import body_rows, column, eventually, shot, url_with, view_menu
from .feed import publish_many

TOPICS = [{"name": "orders", "key": ["/order"]}, {"name": "positions", "key": ["/trader"]}]
TRADERS = ["ann", "ben", "cho", "dev"]
ORDERS = [{"order": n, "trader": TRADERS[n % 4 if n % 5 else 0], "qty": n * 10} for n in range(1, 41)]


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[ServerProcess]:
    with running(tmp_path, TOPICS) as server:
        publish_many(server, ORDERS)
        publish_many(
            server,
            [{"trader": t, "orders": sum(o["trader"] == t for o in ORDERS)} for t in TRADERS],
            "positions",
        )
        yield server


def count(trader: str) -> int:
    return sum(order["trader"] == trader for order in ORDERS)


def test_orders_follow_the_traders_selected_in_positions(page: Page, desk: ServerProcess) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(
        f"{desk.http}/?topic=positions&orderby=/trader&link=&topic=orders&orderby=/order&link=positions:trader"
    )
    positions, orders = page.locator(".view").nth(0), page.locator(".view").nth(1)
    expect(orders.locator(".rows")).to_have_text("40")
    body_rows(page, 0).filter(has_text="ben").locator("td").first.click()
    expect(orders.locator(".rows")).to_have_text(str(count("ben")))
    expect(orders.locator(".linked")).to_have_text("linked: /trader = 'ben'")
    eventually(lambda: set(column(page, "trader", 1)), lambda traders: traders == {"ben"})
    shot(page, "desk-linked.png")
    body_rows(page, 0).filter(has_text="dev").locator("td").first.click(modifiers=["Control"])
    expect(orders.locator(".rows")).to_have_text(str(count("ben") + count("dev")))
    eventually(lambda: set(column(page, "trader", 1)), lambda traders: traders == {"ben", "dev"})
    positions.locator("regular-table").press("Escape")
    expect(orders.locator(".rows")).to_have_text("40")
    expect(orders.locator(".linked")).to_be_hidden()
    # Closed, the positions view no longer filters the orders.
    body_rows(page, 0).filter(has_text="cho").locator("td").first.click()
    expect(orders.locator(".rows")).to_have_text(str(count("cho")))
    view_menu(positions).locator(".close").click()
    expect(page.locator(".view")).to_have_count(1)
    expect(page.locator(".view .rows")).to_have_text("40")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_link_is_chosen_in_the_toolbar_and_kept_in_the_link(page: Page, desk: ServerProcess) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{desk.http}/?topic=positions&orderby=/trader&topic=orders&orderby=/order")
    orders = page.locator(".view").nth(1)
    expect(orders.locator(".rows")).to_have_text("40")
    body_rows(page, 0).filter(has_text="cho").locator("td").first.click()
    # It follows what is selected already.
    view_menu(orders).locator("select.link").select_option("positions:trader")
    expect(orders.locator(".rows")).to_have_text(str(count("cho")))
    link = url_with(page, "link=positions:trader")
    page.goto(link)
    expect(page.locator(".view").nth(1).locator("select.link")).to_have_value("positions:trader")
    expect(page.locator(".view").nth(1).locator(".rows")).to_have_text("40")  # nothing selected yet
    body_rows(page, 0).filter(has_text="ann").locator("td").first.click()
    expect(page.locator(".view").nth(1).locator(".rows")).to_have_text(str(count("ann")))
    assert page.errors == []  # type: ignore[attr-defined]
