"""What the desk tests share: records like a desk's (a few, or a book of any size), opening the
dashboard over them, and ways to find a table's rows and cells (a <regular-table>: cells carry
their field in `data-field`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, expect

from .. import waiting
from ..integration.server_process import ServerProcess
from ..waiting import HANG_S
from .feed import publish_many

SCREENSHOTS = Path(__file__).parent / "screenshots"

BOOK = [
    {"order": 1, "sym": "MSFT", "qty": 12500, "px": 101.5, "pnl": -8081.25, "at": "2026-11-23T09:30:01.250Z"},
    {"order": 2, "sym": "IBM", "qty": 3, "px": 99.125, "pnl": 10.5, "at": "2026-11-23T09:30:02.000Z"},
    {"order": 3, "sym": "MSFT", "qty": 700, "px": 250.0, "pnl": 1200.0, "at": "2026-11-23T09:30:03.500Z"},
]


def book(order: int) -> dict[str, Any]:
    """Record ``order`` of a book of any size: four desks, five symbols, quantities, prices and
    P&L that spread over their ranges."""
    desks, symbols = ["Rates", "Credit", "FX", "Equities"], ["AAPL", "IBM", "MSFT", "NVDA", "TSLA"]
    return {
        "order": order,
        "desk": desks[order % 4],
        "sym": symbols[(order * 7) % 5],
        "qty": (order * 7919) % 10000 + 1,
        "px": round(((order * 104729) % 50000) / 10) / 100,
        "pnl": ((order * 7907) % 20001) - 10000,
    }


def open_desk(
    page: Page, server: ServerProcess, query: str, records: list[dict[str, Any]] | None = None, size: int = 0
) -> None:
    """Publish ``records`` (or a book of ``size``) and open the dashboard at ``/?query``."""
    publish_many(server, records if records is not None else [book(n) for n in range(1, size + 1)])
    page.goto(f"{server.http}/?{query}")


# What the page's views hold: every open view of every panel's tree, its window, filter, order.
HELD = """() => {
  const out = [];
  const visit = (node) => {
    const v = node.view;
    out.push({ rows: v.rows.length, first: v.first, last: v.last, count: v.count,
      filter: v.filter ?? "", orderby: v.orderby ?? "" });
    for (const child of node.children.values()) visit(child);
  };
  for (const panel of dashboard.panels) if (panel.tree) visit(panel.tree.root);
  return out;
}"""


def view(page: Page, index: int = 0) -> Locator:
    return page.locator(".view").nth(index)


def body_rows(page: Page, index: int = 0) -> Locator:
    """Every row on screen of a view's table, group rows included."""
    return view(page, index).locator("regular-table tbody tr")


def column(page: Page, field: str, index: int = 0) -> list[str]:
    """The texts of a column's cells on screen, top to bottom."""
    cells = view(page, index).locator(f"regular-table tbody [data-field='{field}']")
    texts: list[str] = cells.all_inner_texts()
    return texts


def rows(page: Page) -> Locator:
    """The record rows on screen of the first view's table (not group rows)."""
    return page.locator(".view").first.locator("regular-table tbody tr:not(.group-row)")


def cell(row: Locator, field: str) -> Locator:
    return row.locator(f"[data-field='{field}']")


def header(page: Page, field: str, index: int = 0) -> Locator:
    return view(page, index).locator(f"regular-table thead th[data-field='{field}']")


def column_order(page: Page) -> list[str]:
    fields: list[str] = (
        page.locator(".view")
        .first.locator("regular-table thead th[data-field]")
        .evaluate_all("(columns) => columns.map((c) => c.dataset.field)")
    )
    return fields


def shot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / name))


def quick(page: Page, field: str, text: str) -> None:
    """Type a quick filter under ``field``'s header (Enter applies it at once; typing applies it too)."""
    box = header(page, field).locator("input.quick")
    box.fill(text)
    box.press("Enter")


def view_menu(view: Locator) -> Locator:
    """A view's ⋯ menu, opened: the controls a desk uses less (columns, link, details, CSV, close)."""
    more = view.locator(".view-menu")
    if more.get_attribute("open") is None:
        more.locator("> summary").click()
    items = more.locator(".view-menu-items")
    expect(items).to_be_visible()
    return items


def menu(page: Page, field: str, item: str) -> None:
    """Choose ``item`` in ``field``'s header menu."""
    header(page, field).locator(".column-menu-button").click()
    page.locator(".view .column-popup").get_by_role("button", name=item).first.click()


def eventually(
    read: Callable[[], object], check: Callable[[object], bool], timeout: float = HANG_S
) -> object:
    """``read()`` once ``check`` holds for it (tests/waiting.py: the timeout is a hang guard).
    ``read`` must ask the page (a Playwright call), not read a value Playwright caches."""
    last: list[object] = []

    def holds() -> tuple[object] | None:
        last[:] = [read()]
        return (last[0],) if check(last[0]) else None

    return waiting.eventually(holds, lambda: f"still {last[0]!r}" if last else "never read", timeout)[0]


def url_with(page: Page, part: str) -> str:
    """The page's address once it holds ``part`` (the dashboard writes it within a second)."""
    # Read from the page: Playwright's page.url follows the page only while Playwright is called.
    return str(eventually(lambda: page.evaluate("() => location.href"), lambda url: part in str(url)))
