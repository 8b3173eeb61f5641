"""The dashboard at / in real Chromium: a view from the URL, live updates, rows leaving the view,
errors, restarts."""

from __future__ import annotations

import re
import signal
from pathlib import Path
from urllib.parse import quote

from playwright.sync_api import Page, expect

from ..integration.server_process import ServerProcess, running
from .conftest import ROW
from .desk import open_desk, shot, view_menu
from .feed import publish, publish_many


def test_a_view_from_the_url_follows_updates_and_rows_leaving(page: Page, server: ServerProcess) -> None:
    book = [{"order": 1, "ref": "order-1", "qty": 50}, {"order": 2, "ref": "order-2", "qty": 5}]
    open_desk(page, server, f"topic=orders&filter={quote('/qty > 10')}&options=oof", book)
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")
    first = page.locator(ROW, has_text="order-1")
    expect(first).to_contain_text("50")
    expect(page.locator(ROW, has_text="order-2")).to_have_count(0)
    expect(page.locator(".figures .rows")).to_have_text("1")

    publish(server, {"order": 1, "ref": "order-1", "qty": 75}, {"order": 3, "ref": "order-3", "qty": 30})
    expect(first).to_contain_text("75")
    expect(page.locator(ROW, has_text="order-3")).to_contain_text("30")
    expect(page.locator(".figures .rows")).to_have_text("2")

    publish(server, {"order": 1, "ref": "order-1", "qty": 2})
    expect(page.locator(ROW, has_text="order-1")).to_have_count(0)
    expect(page.locator(".figures .rows")).to_have_text("1")
    publish(server, {"order": 1, "ref": "order-1", "qty": 31})  # back in
    expect(page.locator(ROW, has_text="order-1")).to_contain_text("31")
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_form_opens_views_side_by_side_and_shows_a_bad_filter(page: Page, server: ServerProcess) -> None:
    publish_many(server, [{"order": 1, "ref": "order-1", "qty": 50, "side": "B"}])
    page.goto(server.http + "/")
    expect(page.locator("#topics li", has_text="orders")).to_be_visible()
    # An empty workspace says how to open a view; a click on a topic opens all its records.
    expect(page.locator(".empty-workspace")).to_contain_text("Click a topic on the left")
    shot(page, "dashboard-empty.png")
    page.locator("#topics li", has_text="orders").click()
    expect(page.locator(".view")).to_have_count(1)
    expect(page.locator(".view").nth(0).locator(ROW)).to_have_count(1)
    expect(page.locator(".empty-workspace")).to_be_hidden()
    view_menu(page.locator(".view")).locator(".close").click()
    expect(page.locator(".view")).to_have_count(0)
    page.fill("[name=topic]", "orders")
    page.fill("[name=filter]", "/qty >")
    page.click("button[type=submit]")
    expect(page.locator("#form-error")).to_contain_text("bad filter")
    expect(page.locator(".view")).to_have_count(0)
    page.fill("[name=filter]", "/side = 'B'")
    page.click("button[type=submit]")
    page.fill("[name=filter]", "")
    page.click("button[type=submit]")
    expect(page.locator(".view")).to_have_count(2)
    expect(page.locator(".view").nth(0).locator(ROW)).to_have_count(1)
    assert "topic=orders" in page.url, "the link reproduces the views"
    header = page.locator(".view").nth(0).locator("regular-table thead th[data-field=qty]")
    header.locator(".title").click()
    expect(header).to_have_attribute("aria-sort", "ascending")
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_dashboard_survives_a_server_restart(page: Page, server: ServerProcess, tmp_path: Path) -> None:
    publish(server, {"id": 1, "ref": "order-1"}, {"id": 2, "ref": "order-2"}, topic="ledger")
    page.goto(f"{server.http}/?topic=ledger&filter=&options=&orderby=/id")
    expect(page.locator(ROW)).to_have_count(2)
    port, config = server.port, server.process.args[server.process.args.index("--config") + 1]
    server.stop(signal.SIGTERM)
    expect(page.locator("#connection")).to_have_attribute("data-state", re.compile("waiting|connecting"))
    expect(page.locator(".view")).to_have_class(re.compile(r"\bstale\b"))
    expect(page.locator(ROW)).to_have_count(2)  # the last values stay
    restarted = ServerProcess(Path(config), tmp_path / "data", port=port)
    server.process = restarted.process
    try:
        publish(restarted, {"id": 3, "ref": "order-3"}, {"id": 1, "ref": "order-1b"}, topic="ledger")
        expect(page.locator("#connection")).to_have_attribute("data-state", "open")
        expect(page.locator(ROW)).to_have_count(3)
        expect(page.locator(ROW).first).to_contain_text("order-1b")
        expect(page.locator(".view")).not_to_have_class(re.compile(r"\bstale\b"))
        expect(page.locator(".figures .rows")).to_have_text("3")
        assert page.errors == []  # type: ignore[attr-defined]
    finally:
        restarted.stop()


def test_a_view_opened_from_the_form_starts_in_its_topics_first_kept_order(
    page: Page, tmp_path: Path
) -> None:
    topics = [{"name": "orders", "key": ["/order"], "orders": ["/qty DESC", "/order"]}]
    with running(tmp_path, topics) as server:
        publish_many(
            server, [{"order": n, "ref": f"order-{n}", "qty": q} for n, q in ((1, 5), (2, 50), (3, 7))]
        )
        page.goto(server.http + "/")
        expect(page.locator("#topics li", has_text="orders")).to_be_visible()
        page.fill("[name=topic]", "orders")
        page.click("button[type=submit]")
        expect(page.locator(ROW).first).to_contain_text("order-2")
        header = page.locator("regular-table thead th[data-field=qty]")
        expect(header).to_have_attribute("aria-sort", "descending")
        expect(page).to_have_url(re.compile(r"orderby=/qty%20DESC"))  # the link reproduces it
        shot(page, "kept-order-from-the-form.png")
        assert page.errors == []  # type: ignore[attr-defined]
