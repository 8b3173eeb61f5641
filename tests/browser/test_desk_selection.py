"""Selecting rows in a view's table, in real Chromium, as a desk does: a click, Ctrl and Shift
clicks, the arrow keys (scrolling the table when they leave the screen), Escape, and Ctrl+C,
which copies the selected rows as tab-separated text with the column names first."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from ..integration.server_process import ServerProcess
from .desk import body_rows, book, column_order, open_desk, shot

SELECTED = "regular-table tbody tr[aria-selected=true]"


def orders_selected(page: Page) -> list[str]:
    keys: list[str] = page.locator(SELECTED).evaluate_all("(rows) => rows.map((row) => row.dataset.key)")
    return keys


def test_rows_are_selected_moved_and_copied(page: Page, server: ServerProcess) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.http)
    page.set_viewport_size({"width": 1400, "height": 700})
    open_desk(page, server, "topic=orders&orderby=/order", [book(n) for n in range(1, 201)])
    rows = body_rows(page)
    expect(rows.first).to_contain_text("1")
    cell = "[data-field=sym]"
    rows.nth(1).locator(cell).click()
    expect(page.locator(SELECTED)).to_have_count(1)
    rows.nth(4).locator(cell).click(modifiers=["Shift"])
    expect(page.locator(SELECTED)).to_have_count(4)  # rows 2 to 5
    rows.nth(2).locator(cell).click(modifiers=["Control"])
    expect(page.locator(SELECTED)).to_have_count(3)  # row 3 taken out
    shot(page, "desk-selection.png")

    page.keyboard.press("Control+c")
    copied: str = page.evaluate("() => navigator.clipboard.readText()")
    lines = copied.rstrip("\n").split("\n")
    fields = column_order(page)
    assert lines[0].split("\t") == fields
    orders = [line.split("\t")[fields.index("order")] for line in lines[1:]]
    assert sorted(orders, key=int) == ["2", "4", "5"]

    # The arrow keys move a single selection, and the table scrolls to keep it on screen.
    rows.nth(0).locator(cell).click()
    for _ in range(40):
        page.keyboard.press("ArrowDown")
    expect(page.locator(SELECTED)).to_have_count(1)
    expect(page.locator(SELECTED).locator("[data-field=order]")).to_have_text("41")
    page.keyboard.press("Shift+ArrowUp")
    expect(page.locator(SELECTED)).to_have_count(2)
    page.keyboard.press("Escape")
    expect(page.locator(SELECTED)).to_have_count(0)
    assert page.errors == []  # type: ignore[attr-defined]
