"""The dashboard's table as a desk uses it, in real Chromium against a real server: numbers that
read well, flashes that say which way, columns arranged by hand and kept in the link, quick
filters, grouping with totals, and headers that take the keyboard."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from ..integration.server_process import ServerProcess
from .desk import BOOK, cell, column_order, eventually, header, quick, rows, shot, url_with
from .feed import publish


def test_numbers_timestamps_and_hostile_text_read_as_a_desk_expects(
    page: Page, server: ServerProcess
) -> None:
    hostile = '<img src=x onerror="window.hacked=1">'
    publish(server, *BOOK, {**BOOK[1], "order": 4, "sym": hostile})
    page.goto(f"{server.http}/?topic=orders")
    order_1 = page.locator(".tabulator-cell[tabulator-field='order']", has_text=re.compile("^1$"))
    first = rows(page).filter(has=order_1)
    expect(cell(first, "qty")).to_have_text("12,500")  # thousands separated
    expect(cell(first, "px")).to_have_text("101.500")  # as many decimals as the column's values have
    expect(cell(first, "pnl")).to_have_text("-8,081.25")
    expect(cell(first, "pnl")).to_have_class(re.compile(r"\bnegative\b"))
    expect(cell(first, "order")).to_have_text("1")  # a key is a name, not a quantity
    expect(cell(first, "at")).to_have_text(re.compile(r"^(2026-11-2[34] )?\d\d:\d\d:01\.250$"))
    assert cell(first, "at").get_attribute("title") == BOOK[0]["at"]
    assert cell(first, "qty").evaluate("(e) => getComputedStyle(e).textAlign") == "right"
    title = header(page, "qty").locator(".tabulator-col-title")
    assert title.evaluate("(e) => getComputedStyle(e).textAlign") == "right", "aligned with its values"
    # Records are other people's data: shown as text, never run.
    expect(rows(page).filter(has_text=hostile)).to_have_count(1)
    assert page.evaluate("() => window.hacked") is None

    # A rise flashes green, a fall red.
    publish(server, {**BOOK[0], "qty": 12600, "px": 100.25})
    expect(cell(first, "qty")).to_have_class(re.compile(r"\bflash-up"))
    expect(cell(first, "px")).to_have_class(re.compile(r"\bflash-down"))
    expect(cell(first, "px")).to_have_text("100.250")
    shot(page, "desk-formatting.png")
    assert page.errors == []  # type: ignore[attr-defined]


def test_columns_moved_resized_and_hidden_by_hand_come_back_from_the_link(
    page: Page, server: ServerProcess
) -> None:
    publish(server, *BOOK)
    page.goto(f"{server.http}/?topic=orders")
    expect(rows(page)).to_have_count(3)
    assert column_order(page)[:3] == ["order", "sym", "qty"]

    # Reorder: drag the px header onto the sym header.
    source = header(page, "px").locator(".tabulator-col-title").bounding_box()
    target = header(page, "sym").locator(".tabulator-col-title").bounding_box()
    assert source and target
    page.mouse.move(source["x"] + 5, source["y"] + source["height"] / 2)
    page.mouse.down()
    page.wait_for_timeout(400)  # Tabulator starts a column move after a short hold
    page.mouse.move(source["x"] - 20, source["y"] + source["height"] / 2, steps=5)
    page.mouse.move(target["x"] + 2, target["y"] + target["height"] / 2, steps=10)
    page.mouse.up()
    eventually(lambda: column_order(page)[:3], lambda order: order == ["order", "px", "sym"])

    # Resize: drag the qty header's right edge (Tabulator's handle sits over it) 80 px wider.
    before = header(page, "qty").bounding_box()
    assert before
    edge_x, middle_y = before["x"] + before["width"] - 1, before["y"] + before["height"] / 2
    page.mouse.move(edge_x, middle_y)
    page.mouse.down()
    page.mouse.move(edge_x + 80, middle_y, steps=8)
    page.mouse.up()
    widened = header(page, "qty").bounding_box()
    assert widened and widened["width"] > before["width"] + 60

    # Hide: untick the column in the Columns list.
    page.locator(".view .columns-menu summary").click()
    page.locator(".view .column-list label", has_text="at").locator("input").uncheck()
    expect(header(page, "at")).to_be_hidden()
    page.locator(".view .columns-menu summary").click()

    url_with(page, "-at")
    link = page.url
    assert "columns=" in link
    order, width = column_order(page), widened["width"]

    page.goto("about:blank")
    page.goto(link)
    expect(rows(page)).to_have_count(3)
    assert column_order(page) == order
    expect(header(page, "at")).to_be_hidden()
    again = header(page, "qty").bounding_box()
    assert again and abs(again["width"] - width) < 3
    assert page.errors == []  # type: ignore[attr-defined]


def test_quick_filters_and_grouping_with_totals_are_kept_in_the_link(
    page: Page, server: ServerProcess
) -> None:
    publish(server, *BOOK)
    page.goto(f"{server.http}/?topic=orders")
    expect(rows(page)).to_have_count(3)

    quick(page, "qty", ">100")  # client side, on top of the server's filter
    expect(rows(page)).to_have_count(2)
    page.locator(".view .clear-quick").click()
    expect(rows(page)).to_have_count(3)
    quick(page, "sym", "ms")  # text: contains, any case
    expect(rows(page)).to_have_count(2)
    quick(page, "sym", "")
    quick(page, "qty", "1..1000")
    expect(rows(page)).to_have_count(2)

    page.locator(".view select.group").select_option("sym")
    groups = page.locator(".view .tabulator-row.tabulator-group")
    expect(groups).to_have_count(2)
    expect(groups.filter(has_text="MSFT")).to_contain_text("1 row")  # quick filter still on: 700 only
    quick(page, "qty", "")
    expect(groups.filter(has_text="MSFT")).to_contain_text("2 rows")
    totals = page.locator(".view .tabulator-footer .tabulator-calcs")
    expect(cell(totals, "qty")).to_have_text("13,203")  # the sum, every row
    expect(cell(totals, "order")).to_have_text("n 3")  # a key column counts
    expect(cell(totals, "px")).to_have_text("avg 150.208")  # a price averages
    # The total is wider than the column's values: the column widens to show it whole.
    eventually(lambda: cell(totals, "px").evaluate("(e) => e.scrollWidth <= e.clientWidth"), bool)
    # The header menu chooses another total.
    header(page, "px").locator(".tabulator-header-popup-button").click()
    page.locator(".tabulator-menu .tabulator-menu-item", has_text="Total: count").click()
    expect(cell(totals, "px")).to_have_text("n 3")
    shot(page, "desk-grouped.png")

    quick(page, "sym", "IBM")
    expect(rows(page)).to_have_count(1)
    url_with(page, "group=sym")
    url_with(page, "quick=sym%3AIBM")
    assert "totals=px%3Acount" in page.url
    link = page.url
    page.goto("about:blank")
    page.goto(link)
    expect(page.locator(".view .tabulator-row.tabulator-group")).to_have_count(1)
    expect(rows(page)).to_have_count(1)
    expect(header(page, "sym").locator("input")).to_have_value("IBM")
    expect(cell(page.locator(".view .tabulator-footer .tabulator-calcs"), "px")).to_have_text("n 1")
    assert page.errors == []  # type: ignore[attr-defined]


def test_headers_are_reached_and_sorted_with_the_keyboard(page: Page, server: ServerProcess) -> None:
    publish(server, *BOOK)
    page.goto(f"{server.http}/?topic=orders")
    expect(rows(page)).to_have_count(3)
    qty = header(page, "qty")
    assert qty.get_attribute("tabindex") == "0"
    expect(qty).to_have_attribute("aria-sort", "none")
    qty.focus()
    page.keyboard.press("Enter")
    expect(qty).to_have_attribute("aria-sort", "ascending")
    expect(cell(rows(page).first, "qty")).to_have_text("3")
    page.keyboard.press(" ")
    expect(qty).to_have_attribute("aria-sort", "descending")
    expect(cell(rows(page).first, "qty")).to_have_text("12,500")
    url_with(page, "sort=qty%3Adesc")
    assert page.errors == []  # type: ignore[attr-defined]
