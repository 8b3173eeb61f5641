"""The detail pane, in real Chromium: every field of the row selected in a view, as the view
formats them, live; kept in the link and in a layout."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from ..integration.server_process import ServerProcess
from .desk import BOOK, cell, eventually, menu, open_desk, rows, shot, url_with, view_menu
from .feed import publish, request


def test_the_detail_pane_follows_the_selection_live(page: Page, server: ServerProcess) -> None:
    open_desk(page, server, "topic=orders&orderby=/order", BOOK)
    expect(rows(page)).to_have_count(3)
    view_menu(page.locator(".view")).locator(".details").click()
    pane = page.locator(".detail-pane")
    expect(pane).to_be_visible()
    expect(pane.locator(".detail-note")).to_have_text(
        "Select a row in the orders view to see all its fields here."
    )
    expect(page.locator(".dv-tab", has_text="details · orders")).to_be_visible()
    # The panes share the screen: the detail pane stands beside its view, never over it.
    view_box, pane_box = page.locator(".view").bounding_box(), pane.bounding_box()
    assert view_box and pane_box
    assert (
        view_box["x"] + view_box["width"] <= pane_box["x"] + 1
        or view_box["y"] + view_box["height"] <= pane_box["y"] + 1
    )

    cell(rows(page).first, "sym").click()
    expect(pane.locator("h3")).to_have_text("orders · order 1")
    value = lambda field: pane.locator(f"[data-field='{field}'] dd")  # noqa: E731
    expect(value("qty")).to_have_text("12,500")  # as the view formats it
    expect(value("pnl")).to_have_class("negative")
    menu(page, "px", "Format: USD")
    publish(server, {**BOOK[0], "qty": 12600})
    expect(value("qty")).to_have_text("12,600")  # live
    expect(value("px")).to_have_text("$101.500")
    # More than one selected: the first, said so.
    cell(rows(page).nth(1), "sym").click(modifiers=["Control"])
    expect(pane.locator(".detail-note")).to_have_text("1 more row selected: this is the first.")
    shot(page, "desk-details.png")
    # Its record deleted: its last values, said so.
    request(server.url, [{"c": "sow_delete", "t": "orders", "data": {"order": 1}}])
    expect(pane.locator(".detail-note")).to_have_text("order 1 was deleted: these are its last values.")
    expect(value("qty")).to_have_text("12,600")

    # The link keeps it; closing it from the view's toolbar (or its tab) closes it.
    link = url_with(page, "details=1")
    page.goto(link)
    expect(page.locator(".detail-pane")).to_be_visible()
    view_menu(page.locator(".view")).locator(".details").click()
    expect(page.locator(".detail-pane")).to_have_count(0)
    eventually(lambda: page.evaluate("() => location.search"), lambda search: "details=" not in str(search))
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_layout_keeps_the_detail_pane(page: Page, server: ServerProcess) -> None:
    open_desk(page, server, "topic=orders&orderby=/order", BOOK)
    view_menu(page.locator(".view")).locator(".details").click()
    expect(page.locator(".detail-pane")).to_be_visible()
    page.locator("#layouts > summary").click()
    page.locator(".save-layout input").fill("with details")
    page.locator(".save-layout button").click()
    expect(page.locator(".layout-message")).to_have_text('saved "with details" in this browser')
    page.goto(server.http)
    expect(page.locator(".view")).to_have_count(0)
    page.locator("#layouts > summary").click()
    page.locator(".open-layout", has_text="with details").click()
    expect(page.locator(".view")).to_have_count(1)
    expect(page.locator(".detail-pane")).to_have_count(1)
    expect(page.locator(".dv-tab")).to_have_count(2)
    cell(rows(page).first, "sym").click()
    expect(page.locator(".detail-pane h3")).to_have_text("orders · order 1")
    assert page.errors == []  # type: ignore[attr-defined]
