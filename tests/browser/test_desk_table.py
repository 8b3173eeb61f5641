"""The dashboard's table as a desk uses it, in real Chromium: numbers that read well, flashes
that say which way, columns arranged by hand and kept in the link, quick filters and groups with
totals kept in the link, and headers that take the keyboard."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, expect

from ..integration.server_process import ServerProcess
from .desk import (
    BOOK,
    cell,
    column_order,
    eventually,
    header,
    menu,
    open_desk,
    quick,
    rows,
    shot,
    url_with,
    view_menu,
)
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
    view_menu(page.locator(".view")).locator(".columns-menu summary").click()
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


def test_the_key_column_stays_while_the_table_scrolls_sideways_and_a_column_can_be_pinned(
    page: Page, server: ServerProcess
) -> None:
    """A wide record in a narrow pane: the key column (pinned by default) stays at the left edge as
    the other columns scroll under it; any column can be pinned beside it, and the link keeps it."""
    wide = [{**record, **{f"field_{n:02}": n * record["order"] for n in range(20)}} for record in BOOK]
    page.set_viewport_size({"width": 900, "height": 700})
    open_desk(page, server, "topic=orders&orderby=/order", wide)
    first = rows(page).first
    expect(cell(first, "sym")).to_have_text("MSFT")
    expect(cell(first, "field_19")).to_have_count(0)  # off to the right: not drawn
    table = page.locator(".view regular-table")

    def left_of(locator: Any) -> float:
        box = locator.bounding_box()
        assert box is not None
        return float(box["x"])

    edge = left_of(table)
    assert abs(left_of(cell(first, "order")) - edge) < 2
    to_the_end = (
        "(t) => { t.scrollLeft = t.scrollWidth; return t.querySelector('[data-field=field_19]') !== null; }"
    )
    # (The table learns its columns' widths as it draws them: its width grows as it scrolls.)
    eventually(lambda: table.evaluate(to_the_end), bool)
    expect(cell(first, "field_19")).to_be_in_viewport()
    eventually(lambda: left_of(cell(first, "order")), lambda x: abs(float(x) - edge) < 2)  # type: ignore[arg-type]
    assert abs(left_of(header(page, "order")) - edge) < 2, "and its header"
    expect(cell(first, "sym")).to_have_count(0)  # scrolled out of sight
    shot(page, "desk-pinned-key.png")

    # Pin sym too: it stands beside the key, and the link keeps it.
    table.evaluate("(t) => { t.scrollLeft = 0; }")
    menu(page, "sym", "Pin column")
    link = url_with(page, "pin=sym")
    key_right = left_of(cell(first, "order")) + float(
        (cell(first, "order").bounding_box() or {"width": 0})["width"]
    )
    eventually(lambda: left_of(cell(first, "sym")), lambda x: abs(float(x) - key_right) < 2)  # type: ignore[arg-type]
    page.goto(link)
    expect(cell(rows(page).first, "sym")).to_have_text("MSFT")
    eventually(lambda: page.locator(".view regular-table").evaluate(to_the_end), bool)
    first = rows(page).first
    eventually(lambda: left_of(cell(first, "sym")), lambda x: float(x) >= edge)  # type: ignore[arg-type]
    menu(page, "sym", "Unpin column")
    # A pinned column's quick filter keeps the keyboard while live changes redraw the table.
    page.locator(".view regular-table").evaluate("(t) => { t.scrollLeft = 0; }")
    box = header(page, "order").locator("input.quick")
    box.click()
    page.keyboard.type(">", delay=50)
    page.keyboard.press("Enter")  # applied at once: a comparison not yet finished filters nothing
    publish(server, {**wide[0], "qty": 1}, {**wide[1], "qty": 2})
    expect(cell(rows(page).first, "qty")).to_have_text("1")
    expect(rows(page)).to_have_count(3)
    page.keyboard.type("1", delay=50)
    expect(box).to_have_value(">1")
    assert box.evaluate("(input) => document.activeElement === input")
    expect(rows(page)).to_have_count(2)  # orders 2 and 3
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_column_reads_as_the_desk_chooses_and_colours_by_its_rule(
    page: Page, server: ServerProcess
) -> None:
    """Formats (percent, basis points, a currency) and colour rules (by sign, a threshold, a
    scale) chosen in a column's menu, kept in the link."""
    book = [{**record, "chg": change} for record, change in zip(BOOK, [0.0125, -0.003, 0.25], strict=True)]
    open_desk(page, server, "topic=orders&orderby=/order", book)
    first, second = rows(page).nth(0), rows(page).nth(1)
    expect(cell(first, "chg")).to_have_text("0.0125")
    menu(page, "chg", "Format: percent")
    expect(cell(first, "chg")).to_have_text("1.25%")
    expect(cell(second, "chg")).to_have_text("-0.30%")
    menu(page, "chg", "Format: basis points")
    expect(cell(first, "chg")).to_have_text("125.0 bp")
    menu(page, "px", "Format: USD")
    expect(cell(first, "px")).to_have_text("$101.500")  # the column's decimals, as the data has them
    menu(page, "px", "Decimals: 2")
    expect(cell(first, "px")).to_have_text("$101.50")
    menu(page, "pnl", "Colour: by sign")
    expect(cell(first, "pnl")).to_have_class(re.compile(r"\brule-down\b"))
    expect(cell(second, "pnl")).to_have_class(re.compile(r"\brule-up\b"))
    # A threshold in the quick filters' words marks the cells that meet it.
    header(page, "qty").locator(".column-menu-button").click()
    box = page.locator(".view .column-popup input.threshold")
    box.fill(">1000")
    box.press("Enter")
    expect(cell(first, "qty")).to_have_class(re.compile(r"\brule-hit\b"))
    assert "rule-hit" not in (cell(second, "qty").get_attribute("class") or "")
    link = url_with(page, "qty:%253E1000")  # (written at most once a second; its % escaped too)
    assert "format=chg:bps,px:USD" in link and "colour=pnl:sign,qty:%253E1000" in link
    shot(page, "desk-formats-and-colours.png")
    # The link opens the view as it was; a scale colours by size among the rows on screen.
    page.goto(link)
    first = rows(page).first
    expect(cell(first, "chg")).to_have_text("125.0 bp")
    expect(cell(first, "qty")).to_have_class(re.compile(r"\brule-hit\b"))
    menu(page, "pnl", "Colour: scale")
    eventually(
        lambda: cell(first, "pnl").evaluate("(e) => e.style.backgroundColor"), lambda v: "color-mix" in str(v)
    )
    publish(server, {**book[0], "qty": 5})
    expect(cell(first, "qty")).to_have_text("5")
    eventually(lambda: cell(first, "qty").get_attribute("class") or "", lambda c: "rule-hit" not in str(c))
    assert page.errors == []  # type: ignore[attr-defined]


def test_counts_and_totals_agree_with_the_rows_shown(page: Page, server: ServerProcess) -> None:
    """The toolbar's rows follow the quick filters; group counts and a count total include the
    records whose value is 0; the updates waiting while paused are the changes received."""
    book = [
        {"order": n, "sym": ("MSFT", "IBM", "AAPL")[n % 3], "qty": 0 if n % 3 == 0 else n}
        for n in range(1, 10)
    ]
    open_desk(page, server, "topic=orders&orderby=/order", book)
    expect(rows(page)).to_have_count(9)
    figure = page.locator(".view .rows")
    expect(figure).to_have_text("9")
    quick(page, "qty", ">0")
    expect(rows(page)).to_have_count(6)
    expect(figure).to_have_text("6")
    page.locator(".view .clear-quick").click()
    expect(figure).to_have_text("9")
    page.locator(".view select.group").select_option("sym")
    groups = page.locator(".view regular-table tbody tr.group-row")
    expect(groups).to_have_count(3)
    menu(page, "qty", "Total: count")
    expect(cell(groups.filter(has_text="MSFT"), "qty")).to_have_text("n 3")  # 3, 6 and 9: all qty 0
    labels = [int(text.split("·")[1].split()[0]) for text in groups.locator("th.group").all_inner_texts()]
    counts = [int(text.removeprefix("n ")) for text in groups.locator("[data-field='qty']").all_inner_texts()]
    assert sum(labels) == sum(counts) == 9, (labels, counts)
    menu(page, "qty", "Pin column")  # a pinned column's group rows keep their totals
    expect(cell(groups.filter(has_text="MSFT"), "qty")).to_have_text("n 3")
    menu(page, "qty", "Unpin column")
    page.locator(".view .group-levels button").first.click()  # stop grouping
    expect(rows(page)).to_have_count(9)
    page.locator(".view .pause").click()
    publish(server, {**book[0], "qty": 5}, {**book[1], "qty": 7})
    expect(page.locator(".view .waiting")).to_have_text("paused: 2 updates waiting")
    assert page.errors == []  # type: ignore[attr-defined]


def test_fields_and_link_values_named_like_javascripts_own_are_fields_like_any_other(
    page: Page, server: ServerProcess
) -> None:
    """Found in review: `format=px:toString` was taken for a format, and a field named
    `constructor` read a function from the settings' maps; either broke every draw of the view."""
    book = [{"order": n, "constructor": n * 10, "toString": "x", "px": 1.5} for n in range(1, 4)]
    open_desk(page, server, "topic=orders&orderby=/order&format=px:toString&colour=constructor:sign", book)
    first = rows(page).first
    expect(cell(first, "px")).to_have_text("1.5")  # as the data: the link's value is no format
    expect(cell(first, "constructor")).to_have_class(re.compile(r"\brule-up\b"))
    menu(page, "constructor", "Total: count")
    quick(page, "constructor", ">10")
    expect(rows(page)).to_have_count(2)
    assert page.errors == []  # type: ignore[attr-defined]
