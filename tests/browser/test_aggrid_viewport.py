"""web/adapters/aggrid-viewport.js: a viewport drawn by AG Grid Community's Infinite Row Model (the
vendored build) in real Chromium against a real server. What the grid shows on screen is, each
time, the server's own window at those rows: the first screen, after a jump far down, after live
changes that move rows, and after sorting by a column header."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

from ..integration.server_process import ServerProcess
from ..waiting import eventually
from .client_page import open_client_page
from .feed import request
from .viewport_data import NO_COUNT, ORDER, publish_many, record, window

SHOWN = """() => {
  const first = grid.getFirstDisplayedRowIndex(), last = grid.getLastDisplayedRowIndex();
  const rows = [];
  for (let i = first; i <= last; i++) rows.push(grid.getDisplayedRowAtIndex(i)?.data ?? null);
  return { first, last, rows };
}"""


def open_grid(page: Page, server: ServerProcess, settings: str) -> None:
    open_client_page(page, server)
    page.add_script_tag(url="/static/vendor/ag-grid/ag-grid-community.min.js")
    page.evaluate(
        f"""async () => {{
        const adapter = await import("/web/adapters/aggrid-viewport.js");
        window.adapter = adapter;
        document.body.innerHTML = '<div id="grid" style="width: 600px; height: 420px"></div>';
        window.client = new push.PushClient(`ws://${{location.host}}/ws`);
        await client.connect();
        window.vp = client.viewport("orders", {{ {settings} }});
        const columnDefs = [{{ field: "order" }}, {{ field: "qty" }}, {{ field: "desk" }}];
        window.grid = agGrid.createGrid(document.getElementById("grid"),
          {{ columnDefs, ...adapter.viewportGridOptions({{ blockSize: 50 }}) }});
        window.binding = adapter.bindAgGridViewport(vp, grid, {{ margin: 30 }});
        await vp.ready;
    }}"""
    )


def wait_for_screen(page: Page, server: ServerProcess, orderby: str = ORDER) -> dict[str, Any]:
    """Wait until the rows on screen are the server's rows at those positions."""
    seen: dict[str, Any] = {}

    def drawn() -> dict[str, Any] | None:
        shown = page.evaluate(SHOWN)
        seen.update(shown=shown, expected=window(server, shown["first"], shown["last"], orderby=orderby))
        return dict(shown) if shown["rows"] == seen["expected"] and shown["rows"] else None

    return eventually(drawn, lambda: f"on screen {seen.get('shown')}, the server's {seen.get('expected')}")


def test_the_grid_shows_the_servers_window_as_it_scrolls_changes_and_sorts(
    page: Page, server: ServerProcess
) -> None:
    publish_many(server, [record(n) for n in range(1, 20001)])
    open_grid(page, server, f"orderby: '{ORDER}', rows: [0, 99]")
    first = wait_for_screen(page, server)
    assert first["first"] == 0
    page.wait_for_function("() => grid.getDisplayedRowCount() === 20000")  # the view's count
    page.evaluate("() => grid.ensureIndexVisible(12000, 'top')")
    page.wait_for_function("() => grid.getFirstDisplayedRowIndex() > 11000")
    far = wait_for_screen(page, server)
    assert far["first"] > 11000
    held = page.evaluate("() => [vp.first, vp.last, vp.rows.length]")
    assert held[0] <= far["first"] and far["last"] <= held[1] and held[2] <= 10000
    assert held[1] - held[0] < 500, "the window is the screen and its margin, not the view"

    # Live: a record from far below jumps onto the screen; the rows below it move down.
    target = window(server, far["first"] + 2, far["first"] + 2)[0]
    mover = window(server, 19000, 19000)[0]
    request(server.url, [{"c": "publish", "t": "orders", "data": {**mover, "qty": target["qty"]}}])
    wait_for_screen(page, server)
    assert page.evaluate("() => binding.stats.redrawn") > 0

    # A column's sort goes to the server: the same rows of the view in the new order.
    page.evaluate("() => grid.applyColumnState({ state: [{ colId: 'order', sort: 'asc' }] })")
    page.wait_for_function("() => vp.orderby === '/order'")
    wait_for_screen(page, server, orderby="/order")
    page.evaluate("() => grid.ensureIndexVisible(0, 'top')")
    top = wait_for_screen(page, server, orderby="/order")
    assert top["rows"][0] == record(1)
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_binding_needs_the_infinite_row_model_and_unbinds(page: Page, server: ServerProcess) -> None:
    publish_many(server, [record(n) for n in range(1, 101)])
    open_grid(page, server, f"orderby: '{ORDER}', rows: [0, 99], {NO_COUNT}")
    wait_for_screen(page, server)
    result = page.evaluate(
        """() => {
        const plain = agGrid.createGrid(document.createElement("div"), { columnDefs: [{ field: "order" }] });
        let refused = "";
        try { adapter.bindAgGridViewport(vp, plain); } catch (error) { refused = error.message; }
        binding.unbind();
        return { refused, listening: vp._listeners.get("rows")?.size ?? 0 };
    }"""
    )
    assert "Infinite Row Model" in result["refused"]
    assert result["listening"] == 0
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_scrollbar_is_sized_by_the_views_count(page: Page, server: ServerProcess) -> None:
    publish_many(server, [record(n) for n in range(1, 5001)])
    open_grid(page, server, f"orderby: '{ORDER}', rows: [0, 99]")
    page.wait_for_function("() => grid.getDisplayedRowCount() === 5000")
    request(server.url, [{"c": "sow_delete", "t": "orders", "filter": "/order > 4000"}])
    page.wait_for_function("() => grid.getDisplayedRowCount() === 4000")
    page.evaluate("() => grid.ensureIndexVisible(3999, 'bottom')")
    assert wait_for_screen(page, server)["last"] == 3999
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_readme_example_works(page: Page, server: ServerProcess) -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    match = re.search(r"```js\n(import \{ bindAgGridViewport.*?)```", readme, re.DOTALL)
    assert match, "the README has no example of a viewport in AG Grid"
    publish_many(server, [{**record(n), "sym": f"S{n % 7}"} for n in range(1, 3001)])
    page.goto(server.http + "/healthz")  # the page's origin, for the example's absolute imports
    page.set_content(
        '<script src="/static/vendor/ag-grid/ag-grid-community.min.js"></script>'
        '<div id="grid" style="height: 500px"></div><script type="module">'
        'import { PushClient } from "/web/index.js";'
        "const client = new PushClient(`ws://${location.host}/ws`); await client.connect();"
        f"{match.group(1)}\nwindow.grid = api; window.vp = viewport;</script>"
    )
    page.wait_for_function("() => window.vp !== undefined && grid.getDisplayedRowCount() === 3000")
    assert wait_for_screen(page, server)["first"] == 0
    page.evaluate("() => grid.ensureIndexVisible(2500, 'top')")
    assert wait_for_screen(page, server)["first"] > 2400
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _wide_enough(page: Page) -> None:
    page.set_viewport_size({"width": 900, "height": 700})
