"""The dashboard's table as a desk uses it, in real Chromium: numbers that read well, flashes
that say which way, columns arranged by hand and kept in the link, quick filters and groups with
totals kept in the link, and headers that take the keyboard."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from ..integration.server_process import ServerProcess
from .desk import BOOK, cell, column_order, eventually, header, menu, open_desk, quick, rows, shot, url_with
from .feed import publish


def test_numbers_timestamps_and_hostile_text_read_as_a_desk_expects(
    page: Page, server: ServerProcess
) -> None:
    hostile = '<img src=x onerror="window.hacked=1">'
    open_desk(page, server, "topic=orders&orderby=/order", [*BOOK, {**BOOK[1], "order": 4, "sym": hostile}])
    first = rows(page).first
    expect(cell(first, "order")).to_have_text("1")  # a key is a name, not a quantity
    expect(cell(first, "qty")).to_have_text("12,500")  # thousands separated
    expect(cell(first, "px")).to_have_text("101.500")  # as many decimals as the column's values have
    expect(cell(first, "pnl")).to_have_text("-8,081.25")
    expect(cell(first, "pnl")).to_have_class(re.compile(r"\bnegative\b"))
    expect(cell(first, "at")).to_have_text(re.compile(r"^(2026-11-2[34] )?\d\d:\d\d:01\.250$"))
    assert cell(first, "at").get_attribute("title") == BOOK[0]["at"]
    assert cell(first, "qty").evaluate("(e) => getComputedStyle(e).textAlign") == "right"
    title = header(page, "qty").locator(".head-line")
    aligned = title.evaluate("(e) => getComputedStyle(e).justifyContent")
    assert aligned == "flex-end", "aligned with its values"
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


def test_a_column_whose_changes_should_not_flash_stays_still_and_the_link_keeps_it(
    page: Page, server: ServerProcess
) -> None:
    open_desk(page, server, "topic=orders&orderby=/order", BOOK)
    first = rows(page).first
    expect(cell(first, "qty")).to_have_text("12,500")
    menu(page, "qty", "Flash changes")  # on by default: this turns it off
    link = url_with(page, "noflash=qty")
    publish(server, {**BOOK[0], "qty": 12600, "px": 100.25})
    expect(cell(first, "px")).to_have_class(re.compile(r"\bflash-down"))
    expect(cell(first, "qty")).to_have_text("12,600")
    assert "flash" not in (cell(first, "qty").get_attribute("class") or "")
    # The link opens it the same way, and the menu says so.
    page.goto(link)
    expect(rows(page).first).to_be_visible()
    header(page, "qty").locator(".column-menu-button").click()
    expect(page.locator(".view .column-popup button", has_text="Flash changes")).to_have_text("Flash changes")
    page.keyboard.press("Escape")
    publish(server, {**BOOK[0], "qty": 12700, "px": 100.5})
    first = rows(page).first
    expect(cell(first, "px")).to_have_class(re.compile(r"\bflash-up"))
    assert "flash" not in (cell(first, "qty").get_attribute("class") or "")
    assert page.errors == []  # type: ignore[attr-defined]


def test_columns_moved_resized_and_hidden_by_hand_come_back_from_the_link(
    page: Page, server: ServerProcess
) -> None:
    open_desk(page, server, "topic=orders&orderby=/order", BOOK)
    expect(rows(page)).to_have_count(3)
    assert column_order(page)[:3] == ["order", "sym", "qty"]

    # Reorder: px two places left, from its header menu.
    menu(page, "px", "Move left")
    menu(page, "px", "Move left")
    eventually(lambda: column_order(page)[:3], lambda order: order == ["order", "px", "sym"])

    # Resize: drag the qty header's right edge 80 px wider (once the moved columns have their
    # widths: the table measures them after drawing).
    def settled_box() -> object:
        first = header(page, "qty").bounding_box()
        page.wait_for_timeout(150)
        return first if first == header(page, "qty").bounding_box() else None

    before = eventually(settled_box, bool)
    assert isinstance(before, dict)
    edge_x, middle_y = before["x"] + before["width"] - 3, before["y"] + before["height"] / 2
    page.mouse.move(edge_x, middle_y)
    page.mouse.down()
    page.mouse.move(edge_x + 80, middle_y, steps=8)
    page.mouse.up()
    widened = eventually(
        lambda: header(page, "qty").bounding_box(),
        lambda box: isinstance(box, dict) and box["width"] > before["width"] + 60,
    )
    assert isinstance(widened, dict)

    # Hide: untick the column in the Columns list.
    page.locator(".view .columns-menu summary").click()
    page.locator(".view .column-list label", has_text="at").locator("input").uncheck()
    expect(header(page, "at")).to_have_count(0)
    page.locator(".view .columns-menu summary").click()

    link = url_with(page, "-at")
    assert "columns=" in link and "qty:" in link
    order, width = column_order(page), widened["width"]

    page.goto("about:blank")
    page.goto(link)
    expect(rows(page)).to_have_count(3)
    eventually(lambda: column_order(page), lambda now: now == order)
    expect(header(page, "at")).to_have_count(0)
    again = header(page, "qty").bounding_box()
    assert again and abs(again["width"] - width) < 3
    assert page.errors == []  # type: ignore[attr-defined]


def test_quick_filters_and_groups_with_totals_are_kept_in_the_link(page: Page, server: ServerProcess) -> None:
    open_desk(page, server, "topic=orders&orderby=/order", BOOK)
    expect(rows(page)).to_have_count(3)

    quick(page, "qty", ">100")  # the server's filter, added to the view's own
    expect(rows(page)).to_have_count(2)
    page.locator(".view .clear-quick").click()
    expect(rows(page)).to_have_count(3)
    quick(page, "sym", "ms")  # text: contains, any case
    expect(rows(page)).to_have_count(2)
    quick(page, "sym", "")
    quick(page, "qty", "1..1000")
    expect(rows(page)).to_have_count(2)

    page.locator(".view select.group").select_option("sym")
    groups = page.locator(".view regular-table tbody tr.group-row")
    expect(groups).to_have_count(2)
    msft = groups.filter(has_text="MSFT")
    expect(msft).to_contain_text("1 row")  # quick filter still on: 700 only
    quick(page, "qty", "")
    expect(msft).to_contain_text("2 rows")
    expect(cell(msft, "qty")).to_have_text("13,200")  # the group's sum
    expect(cell(msft, "px")).to_have_text("avg 175.750")  # a price averages
    expect(cell(msft, "pnl")).to_have_text("-6,881.25")
    # The header menu chooses another total.
    menu(page, "px", "Total: count")
    expect(cell(groups.filter(has_text="MSFT"), "px")).to_have_text("n 2")
    shot(page, "desk-grouped.png")

    quick(page, "sym", "IBM")
    expect(groups).to_have_count(1)
    link = url_with(page, "quick=sym:IBM")
    assert "group=/sym" in link and "totals=px:count" in link
    page.goto("about:blank")
    page.goto(link)
    expect(page.locator(".view regular-table tbody tr.group-row")).to_have_count(1)
    expect(header(page, "sym").locator("input.quick")).to_have_value("IBM")
    expect(cell(page.locator(".view regular-table tbody tr.group-row"), "px")).to_have_text("n 1")
    assert page.errors == []  # type: ignore[attr-defined]


def test_headers_are_reached_and_sorted_with_the_keyboard(page: Page, server: ServerProcess) -> None:
    open_desk(page, server, "topic=orders&orderby=/order", BOOK)
    expect(rows(page)).to_have_count(3)
    qty = header(page, "qty")
    title = qty.locator(".title")
    assert title.get_attribute("tabindex") == "0"
    expect(qty).to_have_attribute("aria-sort", "none")
    title.focus()
    page.keyboard.press("Enter")
    expect(qty).to_have_attribute("aria-sort", "ascending")
    expect(cell(rows(page).first, "qty")).to_have_text("3")
    page.keyboard.press(" ")
    expect(qty).to_have_attribute("aria-sort", "descending")
    expect(cell(rows(page).first, "qty")).to_have_text("12,500")
    url_with(page, "orderby=/qty%20DESC")
    assert page.errors == []  # type: ignore[attr-defined]
