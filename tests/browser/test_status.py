"""Latency you can see, in real Chromium: each view's p50/p99, and the status page it links to."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from ..integration.server_process import ServerProcess
from .feed import publish

SCREENSHOTS = Path(__file__).parent / "screenshots"
NO_FIGURE = "\N{EN DASH}"


def test_views_show_their_latency_and_the_status_page_its_figures(page: Page, server: ServerProcess) -> None:
    publish(server, *[{"order": n, "ref": f"order-{n}", "qty": n} for n in range(5)])
    page.goto(f"{server.http}/?topic=orders&options=oof")
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")
    expect(page.locator(".figures .rows")).to_have_text("5")
    latency = page.locator(".figures .latency")
    expect(latency).to_have_text(NO_FIGURE)  # a snapshot is old state, not a latency
    for round_ in range(5):
        publish(server, *[{"order": n, "ref": f"order-{n}", "qty": n + 10 * round_} for n in range(5)])
    # Server and browser share this machine's clock: a loopback update arrives within a second.
    expect(latency).to_have_text(re.compile(r"^\d+(\.\d)? ms / \d+(\.\d)? ms$"))
    assert page.url.endswith("options=oof"), "the URL keeps the options as typed"
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "dashboard-latency.png"))

    with page.context.expect_page() as opened:
        page.locator("a.status-link").click()
    status = opened.value
    expect(status.locator("#state")).to_have_attribute("data-state", "open")
    row = status.locator("#topics tbody tr", has_text="orders")
    expect(row).to_contain_text("5")  # records
    cells = row.locator("td")
    expect(cells.nth(3)).to_have_text("1")  # the dashboard's one subscription
    expect(cells.nth(7)).to_have_text(re.compile(r"^([1-9][\d.]* KiB|[1-9]\d* B)$"))  # bytes sent
    expect(cells.nth(12)).to_have_text(re.compile(r"\d+(\.\d+)? ms"))  # to socket, p50
    expect(status.locator("#sockets tbody tr")).to_have_count(1)
    expect(status.locator("#sockets tbody tr")).to_contain_text("visible")
    # Whose screen it is: the dashboard names its tab (kept across a reload of that tab).
    label = status.locator("#sockets tbody tr td").nth(2)
    expect(label).to_have_text(re.compile(r"^dashboard, tab [0-9a-f]{4}$"))
    tab = label.inner_text()
    page.reload()
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")
    expect(status.locator("#sockets tbody tr")).to_have_count(1)
    expect(label).to_have_text(tab)
    # Readable: every header over its own column, the client's name first, numbers to the right,
    # one time zone.
    for table in ("topics", "sockets"):
        headers = status.locator(f"#{table} thead th").all_inner_texts()
        assert len(headers) == status.locator(f"#{table} tbody tr").first.locator("td").count(), headers
    assert status.locator("#sockets thead th").first.inner_text() == "client name"
    assert status.locator("#topics thead th").nth(13).inner_text() == "to socket p99"
    align = "(cell) => getComputedStyle(cell).textAlign"
    assert cells.nth(2).evaluate(align) == "right" and cells.nth(0).evaluate(align) == "left"
    expect(status.locator("#state")).to_have_text(re.compile(r"^updated \d\d:\d\d:\d\d UTC$"))
    expect(status.locator("#cards")).to_contain_text(re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"))
    expect(status.locator("#cluster")).to_be_hidden()
    expect(status.locator("#workers-section")).to_be_hidden()
    expect(status.locator("#token-form")).to_be_hidden()  # no metrics_token: none is asked for
    status.screenshot(path=str(SCREENSHOTS / "status.png"), full_page=True)
    assert page.errors == []  # type: ignore[attr-defined]
