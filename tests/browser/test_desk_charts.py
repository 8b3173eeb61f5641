"""The chart pane, in real Chromium: a number column of the rows selected in a view, one line per
row over time, live; kept in the link."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from ..integration.server_process import ServerProcess
from .desk import BOOK, cell, eventually, menu, open_desk, rows, shot, url_with
from .feed import publish

# The chart's lines: their names, and each line's last value (uPlot's data).
LINES = """() => {
  const chart = [...dashboard.companions.open.values()].find((c) => c.kind === "chart")?.pane;
  if (!chart) return null;
  return {
    names: chart.series.map((line) => line.label),
    last: chart.data.slice(1).map((line) => line.at(-1) ?? null),
    points: chart.data[0].length,
    canvas: chart.element.querySelector("canvas") !== null,
  };
}"""


def test_a_chart_draws_the_selected_rows_column_live(page: Page, server: ServerProcess) -> None:
    page.emulate_media(color_scheme="dark")
    open_desk(page, server, "topic=orders&orderby=/order", BOOK)
    expect(rows(page)).to_have_count(3)
    menu(page, "px", "Chart this column")
    pane = page.locator(".chart-pane")
    expect(pane.locator("h3")).to_have_text("orders · px")
    expect(pane.locator(".chart-note")).to_have_text(
        "Select rows in the orders view to chart their px here, one line each."
    )
    expect(page.locator(".dv-tab", has_text="chart · orders · px")).to_be_visible()
    cell(rows(page).nth(0), "sym").click()
    cell(rows(page).nth(2), "sym").click(modifiers=["Control"])

    def lines() -> Any:
        return page.evaluate(LINES)

    eventually(lines, lambda got: got["names"] == ["order 1", "order 3"] and got["last"] == [101.5, 250.0])
    publish(server, {**BOOK[0], "px": 103.25})
    eventually(lines, lambda got: got["last"] == [103.25, 250.0] and got["canvas"])
    expect(pane.locator(".u-legend")).to_contain_text("order 3")
    # Sampled once a second as well: the lines reach the present while nothing changes.
    points = lines()["points"]
    eventually(lines, lambda got: got["points"] >= points + 2)
    shot(page, "desk-chart.png")

    # The link keeps it; the column's menu stops it.
    page.goto(url_with(page, "chart=px"))
    expect(page.locator(".chart-pane")).to_be_visible()
    menu(page, "px", "Stop charting this column")
    expect(page.locator(".chart-pane")).to_have_count(0)
    assert page.errors == []  # type: ignore[attr-defined]
