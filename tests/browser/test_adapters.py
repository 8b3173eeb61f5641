"""web/adapters/: a view bound to AG Grid, through the example page, in real Chromium against a real
server: snapshots, updates, inserts, OOFs, transactions drawn whole, stale rows across a restart;
and the README's example, run as written."""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from playwright.sync_api import Locator, Page, expect

from ..integration.server_process import ServerProcess
from .feed import publish

SCREENSHOTS = Path(__file__).parent / "screenshots"
ROWS = "#grid .ag-row"


def open_example(page: Page, server: ServerProcess, topic: str = "orders", filter_text: str = "") -> None:
    page.goto(f"{server.http}/static/examples/aggrid.html?topic={topic}&filter={quote(filter_text)}")
    page.wait_for_function("() => window.example !== undefined")
    page.evaluate("() => example.view.ready")


def row(page: Page, field: str, value: object) -> Locator:
    """The grid's row whose cell in column ``field`` shows exactly ``value``."""
    cell = page.locator(f'.ag-cell[col-id="{field}"]', has_text=re.compile(f"^{value}$"))
    return page.locator(ROWS).filter(has=cell)


def cell(page: Page, field: str, value: object, column: str) -> Locator:
    return row(page, field, value).locator(f'.ag-cell[col-id="{column}"]')


def stats(page: Page) -> dict[str, int]:
    result: dict[str, int] = page.evaluate("() => ({ ...example.binding.stats })")
    return result


def test_snapshot_updates_inserts_and_oofs_reach_the_grid(page: Page, server: ServerProcess) -> None:
    publish(
        server,
        {"order": 1, "sym": "MSFT", "qty": 50, "px": 412.5},
        {"order": 2, "sym": "AAPL", "qty": 20, "px": 231.25},
        {"order": 9, "sym": "IBM", "qty": 1, "px": 180.0},
    )
    open_example(page, server, filter_text="/qty > 10")
    expect(page.locator(ROWS)).to_have_count(2)
    expect(cell(page, "order", 1, "qty")).to_have_text("50")
    expect(cell(page, "order", 2, "sym")).to_have_text("AAPL")
    expect(row(page, "order", 9)).to_have_count(0)
    headers = page.locator(".ag-header-cell").evaluate_all("cs => cs.map((c) => c.getAttribute('col-id'))")
    assert headers == ["order", "sym", "qty", "px"]
    # The snapshot reached the grid as one transaction, once the view was ready.
    assert stats(page) == {"batches": 1, "changes": 2, "added": 2, "updated": 0, "removed": 0}

    publish(server, {"order": 1, "sym": "MSFT", "qty": 60, "px": 413.0})
    expect(cell(page, "order", 1, "qty")).to_have_text("60")
    expect(cell(page, "order", 1, "px")).to_have_text("413")
    publish(server, {"order": 3, "sym": "NVDA", "qty": 30, "px": 140.5, "venue": "XNAS"})
    expect(cell(page, "order", 3, "sym")).to_have_text("NVDA")
    expect(page.locator('.ag-header-cell[col-id="venue"]')).to_have_count(1)  # a new field, a new column
    expect(page.locator(ROWS)).to_have_count(3)

    publish(server, {"order": 2, "sym": "AAPL", "qty": 5, "px": 231.25})
    expect(row(page, "order", 2)).to_have_count(0)
    expect(page.locator(ROWS)).to_have_count(2)
    oofs = page.evaluate("() => example.oofs")
    assert [(o["record"]["order"], o["reason"]) for o in oofs] == [(2, "match")]
    expect(page.locator("#oofs li").first).to_contain_text("match")
    assert stats(page)["removed"] == 1
    expect(page.locator("#rows")).to_have_text("2")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_transaction_is_drawn_in_one_frame(page: Page, server: ServerProcess) -> None:
    publish(server, *({"order": n, "qty": 20} for n in range(1, 7)))
    open_example(page, server, filter_text="/qty > 10")
    expect(page.locator(ROWS)).to_have_count(6)
    # What each painted frame shows of the orders the transaction touches: the qty of 1 to 5,
    # whether 6 (leaving) and 7 (entering) have rows. AG Grid animates rows: from the frame a row
    # is removed in, its element fades out, still there but its row id no longer in the grid.
    page.evaluate(
        """() => {
        window.frames_seen = [];
        const qty = (order) => {
          for (const row of document.querySelectorAll("#grid .ag-row")) {
            if (!example.api.getRowNode(row.getAttribute("row-id"))) continue;
            if (row.querySelector('[col-id="order"]')?.textContent === String(order)) {
              return row.querySelector('[col-id="qty"]')?.textContent ?? "";
            }
          }
          return null;
        };
        const sample = () => {
          frames_seen.push([1, 2, 3, 4, 5, 6, 7].map(qty));
          if (!window.stop_sampling) requestAnimationFrame(sample);
        };
        requestAnimationFrame(sample);
    }"""
    )
    page.wait_for_function("() => frames_seen.length >= 2")
    before = stats(page)
    page.evaluate(
        """async () => {
        await example.client.transaction([
          ...[1, 2, 3, 4, 5].map((order) => ({ c: "publish", t: "orders", data: { order, qty: 99 } })),
          { c: "publish", t: "orders", data: { order: 7, qty: 99 } },
          { c: "publish", t: "orders", data: { order: 6, qty: 1 } },
        ]);
    }"""
    )
    expect(row(page, "order", 7)).to_have_count(1)
    expect(row(page, "order", 6)).to_have_count(0)
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
    frames: list[list[str | None]]
    frames = page.evaluate("() => { window.stop_sampling = true; return frames_seen; }")
    old = ["20", "20", "20", "20", "20", "20", None]
    new = ["99", "99", "99", "99", "99", None, "99"]
    assert frames[0] == old and frames[-1] == new
    half_applied = [frame for frame in frames if frame not in (old, new)]
    assert half_applied == [], f"frames showing part of the transaction: {half_applied}"
    after = stats(page)
    assert after["batches"] - before["batches"] == 1
    assert (after["added"], after["updated"], after["removed"]) == (
        before["added"] + 1,
        before["updated"] + 5,
        before["removed"] + 1,
    )
    assert page.errors == []  # type: ignore[attr-defined]


def tx(add: Sequence[int] = (), update: Sequence[int] = (), remove: Sequence[int] = ()) -> dict[str, Any]:
    """A grid transaction, by the numbers of its records."""
    return {"add": list(add), "update": list(update), "remove": list(remove)}


# (what, operations: ["set", key, n] or ["drop", key], the transaction's records by their n), on a
# batch whose grid holds "a" (record 0).
COLLAPSE_CASES: list[tuple[str, list[list[Any]], dict[str, list[int]]]] = [
    ("insert then oof: nothing", [["set", "b", 1], ["drop", "b"]], tx()),
    ("insert then update: add the latest", [["set", "b", 1], ["set", "b", 2]], tx(add=(2,))),
    ("updates: the latest", [["set", "a", 1], ["set", "a", 2]], tx(update=(2,))),
    ("update then oof: remove", [["set", "a", 1], ["drop", "a"]], tx(remove=(0,))),
    ("oof then back: update", [["drop", "a"], ["set", "a", 3]], tx(update=(3,))),
    ("oof of a row never held", [["drop", "z"]], tx()),
]


def test_changes_to_one_key_within_a_batch_collapse(page: Page, server: ServerProcess) -> None:
    page.goto(server.http + "/healthz")
    results = page.evaluate(
        """async (cases) => {
        const { RowBatch } = await import("/web/adapters/batch.js");
        const record = (n) => ({ n });
        return cases.map(([, operations]) => {
          const batch = new RowBatch();
          batch.reset([["a", record(0)]]);  // the grid holds a
          for (const [op, key, n] of operations) {
            if (op === "set") batch.set(key, record(n)); else batch.drop(key);
          }
          const tx = batch.take();
          const numbers = (records) => records.map((r) => r.n);
          const again = batch.take();
          return [{ add: numbers(tx.add), update: numbers(tx.update), remove: numbers(tx.remove) },
                  tx.changes, again.add.length + again.update.length + again.remove.length];
        });
    }""",
        [[what, operations] for what, operations, _ in COLLAPSE_CASES],
    )
    for (what, operations, expected), (got, changes, left) in zip(COLLAPSE_CASES, results, strict=True):
        assert got == expected, what
        assert changes == len(operations), what
        assert left == 0, what


def test_rows_are_marked_stale_while_the_server_is_away(
    page: Page, server: ServerProcess, tmp_path: Path
) -> None:
    publish(server, *({"id": n, "ref": f"L{n}"} for n in range(1, 4)), topic="ledger")
    open_example(page, server, topic="ledger")
    expect(page.locator(ROWS)).to_have_count(3)
    expect(page.locator(f"{ROWS}.sow-stale")).to_have_count(0)

    port = server.port
    server.stop(signal.SIGTERM)
    expect(page.locator("#state")).to_have_attribute("data-state", re.compile("waiting|connecting"))
    # The last values stay, every row marked stale.
    expect(page.locator(f"{ROWS}.sow-stale")).to_have_count(3)
    expect(cell(page, "id", 2, "ref")).to_have_text("L2")

    config = server.process.args[server.process.args.index("--config") + 1]
    restarted = ServerProcess(config, tmp_path / "data", port=port)
    server.process = restarted.process  # the fixture stops whichever process runs now
    expect(page.locator("#state")).to_have_attribute("data-state", "open")
    expect(page.locator(f"{ROWS}.sow-stale")).to_have_count(0)
    expect(page.locator(ROWS)).to_have_count(3)
    publish(restarted, {"id": 2, "ref": "L2 again"}, topic="ledger")
    expect(cell(page, "id", 2, "ref")).to_have_text("L2 again")
    assert page.errors == []  # type: ignore[attr-defined]


def test_binding_needs_row_ids_and_unbind_stops_following(page: Page, server: ServerProcess) -> None:
    publish(server, {"order": 1, "qty": 50})
    open_example(page, server)
    expect(cell(page, "order", 1, "qty")).to_have_text("50")
    refusal = page.evaluate(
        """async () => {
        const { bindAgGrid } = await import("/web/adapters/aggrid.js");
        const element = document.createElement("div");
        const api = agGrid.createGrid(element, { columnDefs: [{ field: "order" }] });
        try { bindAgGrid(example.view, api); return "bound"; }
        catch (error) { return error.message; }
        finally { api.destroy(); }
    }"""
    )
    assert "getRowId" in refusal

    page.evaluate("() => example.binding.unbind()")
    publish(server, {"order": 1, "qty": 51})
    page.wait_for_function("() => example.view.records.values().next().value.qty === 51")
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")
    expect(cell(page, "order", 1, "qty")).to_have_text("50")

    # Bound again to the ready view: its records are the rows at once, and it is followed again.
    rebound = page.evaluate(
        """async () => {
        const { bindAgGrid } = await import("/web/adapters/aggrid.js");
        example.binding = bindAgGrid(example.view, example.api);
        return example.api.getDisplayedRowAtIndex(0).data;
    }"""
    )
    assert rebound == {"order": 1, "qty": 51}
    expect(cell(page, "order", 1, "qty")).to_have_text("51")
    publish(server, {"order": 1, "qty": 52}, {"order": 2, "qty": 7})
    expect(cell(page, "order", 1, "qty")).to_have_text("52")
    expect(cell(page, "order", 2, "qty")).to_have_text("7")
    assert page.errors == []  # type: ignore[attr-defined]


def test_screenshot_of_the_example(page: Page, server: ServerProcess) -> None:
    sides = ["B", "S"]
    syms = ["MSFT", "AAPL", "NVDA", "IBM", "AMZN"]
    orders = [
        {"order": n, "sym": syms[n % 5], "side": sides[n % 2], "qty": 10 + n * 7, "px": 100 + n * 3.25}
        for n in range(1, 16)
    ]
    publish(server, *orders)
    page.set_viewport_size({"width": 1100, "height": 560})
    open_example(page, server, filter_text="/qty > 20")
    expect(page.locator(ROWS)).to_have_count(14)
    publish(server, {**orders[3], "qty": 5}, {**orders[7], "qty": 3})
    expect(page.locator("#oofs li")).to_have_count(2)
    expect(page.locator(ROWS)).to_have_count(12)  # the rows that left have faded out
    expect(page.locator("#rows")).to_have_text("12")
    publish(server, {**orders[4], "px": 199.75}, {**orders[5], "qty": 77})
    expect(cell(page, "order", 6, "qty")).to_have_text("77")
    expect(cell(page, "order", 6, "qty")).to_have_class(re.compile("ag-cell-data-changed"))
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "aggrid-example.png"))
    assert page.errors == []  # type: ignore[attr-defined]


def readme_example() -> str:
    """The page in the README's "Grid adapters" section."""
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme.split("### Grid adapters", 1)[1]
    match = re.search(r"```html\n(.*?)```", section, re.DOTALL)
    assert match, "the README's Grid adapters section has no html example"
    return match.group(1)


def test_the_readme_example_works(page: Page, server: ServerProcess) -> None:
    publish(server, {"order": 1, "sym": "MSFT", "qty": 50}, {"order": 2, "sym": "AAPL", "qty": 20})
    page.goto(server.http + "/healthz")  # the page's origin, for the example's absolute imports
    page.set_content(readme_example())
    expect(page.locator(ROWS)).to_have_count(2)
    expect(cell(page, "order", 1, "qty")).to_have_text("50")
    with page.expect_console_message(lambda message: "left the view" in message.text) as logged:
        publish(server, {"order": 2, "sym": "AAPL", "qty": 3})
    assert logged.value.text == "order 2 left the view: match"
    expect(page.locator(ROWS)).to_have_count(1)
    assert page.errors == []  # type: ignore[attr-defined]
