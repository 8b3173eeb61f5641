"""The dashboard's states, in real Chromium against a real server: paused, held still under the
pointer, charted, empty for each reason, disconnected, showing why a row left, light and dark."""

from __future__ import annotations

import re
from urllib.parse import quote

from playwright.sync_api import Browser, Page, expect

from ..integration.server_process import ServerProcess
from .desk import BOOK, cell, rows, shot, url_with
from .feed import publish


def test_pause_holds_the_rows_and_says_how_much_waits(page: Page, server: ServerProcess) -> None:
    publish(server, *BOOK)
    page.goto(f"{server.http}/?topic=orders")
    first = rows(page).first
    expect(cell(first, "qty")).to_have_text("12,500")
    pause = page.locator(".view .pause")
    pause.click()
    expect(pause).to_have_attribute("aria-pressed", "true")
    publish(server, {**BOOK[0], "qty": 1}, {**BOOK[1], "qty": 2}, {**BOOK[2], "order": 9})
    expect(page.locator(".view .waiting")).to_contain_text("3 rows with changes waiting")
    expect(cell(first, "qty")).to_have_text("12,500")
    expect(rows(page)).to_have_count(3)
    shot(page, "desk-paused.png")
    pause.click()
    expect(pause).to_have_attribute("aria-pressed", "false")
    expect(cell(first, "qty")).to_have_text("1")
    expect(rows(page)).to_have_count(4)
    expect(page.locator(".view .waiting")).to_have_text("")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_sorted_table_holds_its_order_while_the_pointer_is_over_it(
    page: Page, server: ServerProcess
) -> None:
    publish(server, *BOOK)
    page.goto(f"{server.http}/?topic=orders&sort=qty:desc")
    expect(cell(rows(page).first, "qty")).to_have_text("12,500")
    rows(page).nth(1).hover()
    publish(server, {**BOOK[1], "qty": 99999})  # would be first
    expect(rows(page).filter(has_text="99,999")).to_have_count(1)
    page.wait_for_timeout(2000)  # two re-sorts' worth
    expect(cell(rows(page).first, "qty")).to_have_text("12,500")
    page.mouse.move(2, 2)  # the pointer leaves: the order catches up
    expect(cell(rows(page).first, "qty")).to_have_text("99,999")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_chart_follows_a_column_total(page: Page, server: ServerProcess) -> None:
    publish(server, *BOOK)
    page.goto(f"{server.http}/?topic=orders&chart=pnl")
    expect(page.locator(".view .sparkline canvas")).to_be_visible()
    expect(page.locator(".view .chart-value")).to_have_text("-6,870.75")
    expect(page.locator(".view .chart-value")).to_have_class(re.compile("negative"))
    publish(server, {**BOOK[0], "pnl": 100.0})
    expect(page.locator(".view .chart-value")).to_have_text("1,310.50")
    page.locator(".view select.chart").select_option("qty")
    expect(page.locator(".view .chart-label")).to_have_text("Σ qty")
    url_with(page, "chart=qty")
    shot(page, "desk-chart.png")
    assert page.errors == []  # type: ignore[attr-defined]


def test_an_empty_table_says_why(page: Page, server: ServerProcess) -> None:
    empty = page.locator(".view .empty-state")
    page.goto(f"{server.http}/?topic=nosuch")
    expect(empty).to_have_attribute("data-kind", "unknown")
    expect(empty).to_contain_text("nosuch is not a topic the server keeps records of")
    expect(empty).to_contain_text("invalid topic")
    shot(page, "desk-empty-unknown.png")

    publish(server, *BOOK)
    page.goto(f"{server.http}/?topic=orders&filter={quote('/qty > 1000000')}")
    expect(empty).to_have_attribute("data-kind", "no-match")
    expect(empty).to_contain_text("No record of orders matches /qty > 1000000")
    shot(page, "desk-empty-no-match.png")

    page.goto(f"{server.http}/?topic=ledger")
    expect(empty).to_have_attribute("data-kind", "no-records")
    expect(empty).to_contain_text("ledger has no records yet")

    page.goto(f"{server.http}/?topic=orders&quick=sym:NOPE")
    expect(empty).to_have_attribute("data-kind", "quick")
    expect(empty).to_contain_text("No rows match the quick filters")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_lost_connection_marks_rows_stale_with_the_attempt_and_the_age(
    page: Page, server: ServerProcess
) -> None:
    publish(server, *BOOK)
    page.goto(f"{server.http}/?topic=orders")
    expect(rows(page)).to_have_count(3)
    server.stop()
    badge = page.locator(".view .stale-badge")
    expect(badge).to_be_visible()
    expect(badge).to_contain_text(re.compile(r"last message \d+ s ago"))
    expect(badge).to_contain_text(re.compile(r"attempt \d+"))
    first = badge.inner_text()
    expect(badge).not_to_have_text(first, timeout=5000)  # the age and the attempt move
    expect(rows(page)).to_have_count(3)  # the last values stay, dimmed
    shot(page, "desk-disconnected.png")


def test_a_row_that_leaves_says_why_while_it_goes(page: Page, server: ServerProcess) -> None:
    publish(server, *BOOK)
    page.goto(f"{server.http}/?topic=orders&filter={quote('/qty > 10')}&options=oof")
    expect(rows(page)).to_have_count(2)
    publish(server, {**BOOK[2], "qty": 5})
    leaving = rows(page).filter(has_text="250.0")
    expect(leaving).to_have_class(re.compile("leaving"))
    reason = leaving.get_attribute("data-reason")
    assert reason, "the row shows the server's reason"
    note = page.locator(".view .left-note")
    expect(note).to_have_text("order 3 left the view: no longer matches the filter")
    shot(page, "desk-leaving.png")
    expect(rows(page)).to_have_count(1, timeout=6000)
    expect(page.locator(".view .left-note")).to_contain_text("left the view")  # still there to read
    assert page.errors == []  # type: ignore[attr-defined]


def test_light_and_dark_follow_the_system_and_the_button(browser: Browser, server: ServerProcess) -> None:
    publish(server, *BOOK)
    backgrounds = {}
    for scheme in ("light", "dark"):
        context = browser.new_context(color_scheme=scheme, viewport={"width": 1400, "height": 800})
        page = context.new_page()
        page.goto(f"{server.http}/?topic=orders&group=sym")
        expect(rows(page)).to_have_count(3)
        backgrounds[scheme] = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        shot(page, f"desk-{scheme}.png")
        status = context.new_page()  # the status page follows the same theme
        status.goto(f"{server.http}/status")
        assert status.evaluate("() => getComputedStyle(document.body).backgroundColor") == backgrounds[scheme]
        status.close()
        if scheme == "light":
            button = page.locator("#theme")
            expect(button).to_have_text("theme: auto")
            button.click()
            button.click()  # auto → light → dark
            expect(button).to_have_text("theme: dark")
            dark = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
            assert dark != backgrounds["light"]
            page.reload()  # the choice is remembered
            expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        context.close()
    assert backgrounds["light"] != backgrounds["dark"]
    assert backgrounds["light"] == "rgb(244, 246, 250)"
