"""A view exported as CSV, in real Chromium: the whole view from the server (not only the rows on
screen), through its filter and quick filters, in its order, with its visible columns; text that
needs quoting quoted, and text a spreadsheet would run as a formula kept as text."""

from __future__ import annotations

import csv
from pathlib import Path

from playwright.sync_api import Page, expect

from ..integration.server_process import ServerProcess
from .desk import book, column_order, menu, open_desk, view_menu


def test_the_whole_view_downloads_as_csv(page: Page, server: ServerProcess, tmp_path: Path) -> None:
    records = [book(n) for n in range(1, 2001)]
    formula = '=HYPERLINK("x", "y")'  # quotes, a comma, and a formula a spreadsheet would run
    records.append({"order": 5000, "desk": "FX", "sym": formula, "qty": 1, "px": 1.5, "pnl": 0})
    page.set_viewport_size({"width": 1400, "height": 900})
    open_desk(page, server, "topic=orders&orderby=/qty%20DESC&quick=desk:FX", records)
    expect(page.locator(".view .rows")).to_have_text("501")  # more than a screen holds
    menu(page, "px", "Hide this column")
    shown = column_order(page)
    assert "px" not in shown
    with page.expect_download() as download:
        view_menu(page.locator(".view")).locator(".export-csv").click()
    assert download.value.suggested_filename == "orders.csv"
    saved = tmp_path / "orders.csv"
    download.value.save_as(saved)
    with saved.open(newline="", encoding="utf-8") as file:
        table = list(csv.reader(file))
    assert table[0] == shown
    fx = sorted((r for r in records if r["desk"] == "FX"), key=lambda r: (-int(r["qty"]), r["order"]))
    assert len(table) - 1 == len(fx) == 501
    assert [int(row[shown.index("qty")]) for row in table[1:]] == [r["qty"] for r in fx]
    odd = next(row for row in table[1:] if row[shown.index("order")] == "5000")
    assert odd[shown.index("sym")] == f"'{formula}"  # read back whole, and kept as text
    expect(page.locator(".view .export-csv")).to_have_attribute("title", "Downloaded 501 records")
    assert page.errors == []  # type: ignore[attr-defined]
