"""The dashboard's states, in real Chromium: paused, empty for each reason, stale while the
connection is down, light and dark."""

from __future__ import annotations

import re
from urllib.parse import quote

from playwright.sync_api import Browser, Page, expect

from ..integration.server_process import ServerProcess
from .desk import BOOK, cell, open_desk, rows, shot
from .feed import publish, publish_many, request


def test_pause_holds_the_rows_and_says_how_much_waits(page: Page, server: ServerProcess) -> None:
    open_desk(page, server, "topic=orders&orderby=/order", BOOK)
    first = rows(page).first
    expect(cell(first, "qty")).to_have_text("12,500")
    pause = page.locator(".view .pause")
    pause.click()
    expect(pause).to_have_attribute("aria-pressed", "true")
    publish(server, {**BOOK[0], "qty": 1}, {**BOOK[1], "qty": 2}, {**BOOK[2], "order": 9})
    expect(page.locator(".view .waiting")).to_contain_text(re.compile(r"paused: [1-9]\d* updates? waiting"))
    page.wait_for_timeout(300)
    expect(cell(first, "qty")).to_have_text("12,500")
    expect(rows(page)).to_have_count(3)
    shot(page, "desk-paused.png")
    pause.click()
    expect(pause).to_have_attribute("aria-pressed", "false")
    expect(cell(first, "qty")).to_have_text("1")
    expect(rows(page)).to_have_count(4)
    expect(page.locator(".view .waiting")).to_have_text("")
    assert page.errors == []  # type: ignore[attr-defined]


def test_an_empty_table_says_why(page: Page, server: ServerProcess) -> None:
    empty = page.locator(".view .empty-state")
    open_desk(page, server, "topic=nosuch", [])
    # A topic the server keeps no records of has no viewport: the view is refused at once.
    expect(page.locator("#form-error")).to_contain_text(re.compile(r"^nosuch: invalid"))
    expect(page.locator(".view")).to_have_count(0)
    shot(page, "desk-empty-unknown.png")

    page.goto(f"{server.http}/?topic=ledger")
    expect(empty).to_have_attribute("data-kind", "no-records")
    expect(empty).to_contain_text("ledger has no records yet")

    open_desk(page, server, f"topic=orders&filter={quote('/qty > 1000000')}", BOOK)
    expect(empty).to_have_attribute("data-kind", "no-match")
    expect(empty).to_contain_text("No record of orders matches /qty > 1000000")
    shot(page, "desk-empty-no-match.png")

    # A filter on a field no record has (a typo: /symbol for /sym) says so, with the fields there are.
    typo = quote("/symbol = 'MSFT'")
    page.goto(f"{server.http}/?topic=orders&filter={typo}")
    expect(empty).to_have_attribute("data-kind", "unknown-field")
    expect(empty).to_have_text(
        "No record of orders has /symbol: its records have /at, /order, /pnl, /px, /qty, /sym."
    )
    shot(page, "desk-empty-unknown-field.png")

    # A topic the server does not keep, typed in the form, is refused in the server's words, with
    # the topics it keeps that are close, and its pane goes.
    page.locator("[name=topic]").fill("ordrs")
    page.locator("#open-view button[type=submit]").click()
    expect(page.locator("#form-error")).to_have_text(
        re.compile(
            r"^ordrs: invalid topic: 'ordrs' is not a configured topic, .*"
            + re.escape("did you mean 'orders'? (configured: ledger, orders)")
            + "$"
        )
    )
    expect(page.locator(".view")).to_have_count(1)

    page.goto(f"{server.http}/?topic=orders&quick=sym:NOPE")
    expect(empty).to_have_attribute("data-kind", "quick")
    expect(empty).to_contain_text("No rows match the quick filters")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_lost_connection_marks_rows_stale_with_the_attempt_and_the_age(
    page: Page, server: ServerProcess
) -> None:
    open_desk(page, server, "topic=orders&orderby=/order", BOOK)
    expect(rows(page)).to_have_count(3)
    server.stop()
    badge = page.locator(".view .stale-badge")
    expect(badge).to_be_visible()
    expect(badge).to_contain_text(re.compile(r"last message \d+ s ago"))
    expect(badge).to_contain_text(re.compile(r"attempt \d+"))
    first = badge.inner_text()
    expect(badge).not_to_have_text(first)  # the age and the attempt move
    expect(rows(page)).to_have_count(3)  # the last values stay, dimmed
    expect(page.locator("#offline")).to_be_visible()
    shot(page, "desk-disconnected.png")


def test_light_and_dark_follow_the_system_and_the_button(browser: Browser, server: ServerProcess) -> None:
    publish_many(server, BOOK)
    backgrounds = {}
    for scheme in ("light", "dark"):
        context = browser.new_context(color_scheme=scheme, viewport={"width": 1400, "height": 800})
        page = context.new_page()
        page.goto(f"{server.http}/?topic=orders&group=/sym")
        expect(page.locator(".view regular-table tbody tr.group-row")).to_have_count(2)
        page.locator(".view regular-table tbody tr.group-row th").first.click()
        expect(rows(page)).to_have_count(1)
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


PATHS = [
    ("/symbol = 'MSFT'", ["symbol"]),
    ("/a/b > 1 AND /c = 'x/y'", ["a", "c"]),
    ("/qty / 2 > /px", ["qty", "px"]),
    ("[/odd name/x] = 1 OR /z IS NULL", ["odd name", "z"]),
    ("UPPER(/sym) = 'A' AND /n IN (1, 2)", ["sym", "n"]),
    ("(/a + 1) / /b = 3", ["a", "b"]),
    ("/list[0] = 2 AND 'it''s /x' = /y", ["list", "y"]),
    ("'it\\'s /x' = /y OR /z BEGINS WITH ('a/b')", ["y", "z"]),
    ("/prénom = 'x' AND /größe > 1", ["prénom", "größe"]),
    ('NULL / /q AND "say \\"/w\\"" = /v', ["q", "v"]),
]


def test_the_fields_a_filter_names_are_read_as_the_server_reads_them(
    page: Page, server: ServerProcess
) -> None:
    page.goto(server.http)
    for filter_text, fields in PATHS:
        found = page.evaluate(
            "async (text) => [...(await import('/static/filter_fields.js')).pathsOf(text)]", filter_text
        )
        assert found == fields, filter_text


def test_a_row_that_leaves_says_which_in_what_state_and_why(page: Page, server: ServerProcess) -> None:
    """A record a change takes out of the view leaves the table, and the line under it says which,
    with the values it left with of the fields the filter names, or that it was deleted, expired."""
    open_desk(page, server, f"topic=orders&orderby=/order&filter={quote('/qty > 100')}", BOOK)
    expect(rows(page)).to_have_count(2)  # orders 1 and 3
    departures = page.locator(".view .departures")
    expect(departures).to_be_hidden()
    publish(server, {**BOOK[0], "qty": 0})
    expect(rows(page)).to_have_count(1)
    expect(departures.locator(".departure").first).to_have_text("order 1 left: qty is now 0")
    expect(departures.locator(".departure").first).to_have_attribute("data-reason", "match")
    request(server.url, [{"c": "sow_delete", "t": "orders", "data": {"order": 3}}])
    expect(departures.locator(".departure").first).to_have_text("order 3 was deleted")
    expect(departures.locator(".departure")).to_have_count(2)
    publish(server, {**BOOK[2], "order": 30})
    request(server.url, [{"c": "publish", "t": "orders", "data": {**BOOK[2], "order": 31}, "e": 1}])
    expect(rows(page)).to_have_count(2)
    expect(departures.locator(".departure").first).to_have_text("order 31 expired")
    expect(page.locator(".view .rows")).to_have_text("1")
    shot(page, "desk-departures.png")
    # After a few seconds the line is empty again.
    expect(departures).to_be_hidden()
    assert page.errors == []  # type: ignore[attr-defined]


def test_rows_a_new_record_pushes_past_the_window_are_not_said_to_leave(
    page: Page, server: ServerProcess
) -> None:
    """The view's window keeps its size: a new order at the top pushes the window's last row out
    (an OOF), though that row is still in the view. Only a row that leaves the view is said."""
    book = [{"order": n, "sym": "MSFT", "qty": 500} for n in range(1, 401)]
    open_desk(page, server, f"topic=orders&orderby={quote('/order DESC')}&filter={quote('/qty > 100')}", book)
    expect(page.locator(".view .rows")).to_have_text("400")
    expect(cell(rows(page).first, "order")).to_have_text("400")
    publish(server, *[{"order": n, "sym": "IBM", "qty": 700} for n in range(401, 406)])
    expect(cell(rows(page).first, "order")).to_have_text("405")
    expect(page.locator(".view .rows")).to_have_text("405")
    publish(server, {"order": 404, "sym": "IBM", "qty": 5})
    departures = page.locator(".view .departure")
    expect(departures.first).to_have_text("order 404 left: qty is now 5")
    page.wait_for_timeout(500)
    expect(departures).to_have_count(1)  # the rows pushed past the window's end are not listed
    # The window's last row deleted is a departure all the same (a push is a `match`, unchanged).
    last = page.evaluate("() => [...dashboard.panels][0].tree.root.view.rows.at(-1).order")
    request(server.url, [{"c": "sow_delete", "t": "orders", "data": {"order": last}}])
    expect(departures.first).to_have_text(f"order {last} was deleted")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_row_that_leaves_names_the_fields_that_changed(page: Page, server: ServerProcess) -> None:
    """Of the fields the filters name, the words say those whose change took the row out."""
    book = [{"order": n, "sym": "MSFT", "qty": 500, "status": "new"} for n in range(1, 4)]
    both = quote("/qty > 100 AND /status IN ('new', 'partial')")
    query = f"topic=orders&orderby=/order&filter={both}"
    open_desk(page, server, query, book)
    expect(rows(page)).to_have_count(3)
    publish(server, {**book[1], "status": "filled"})
    expect(page.locator(".view .departure").first).to_have_text("order 2 left: status is now filled")
    assert page.errors == []  # type: ignore[attr-defined]
