"""Where the dashboard's rows come from in its tests. With ``REAL``, from the server: the test
publishes the book and the page's client opens the server's viewports. Otherwise from a test
double of the client's viewports (fake_views.js): ``/web/index.js`` is served as the real module
with ``viewport`` and ``aggregate`` answered from a book held in the page; the server is still
real (the page's connection, the topic list). The double is for the dashboard's layout and
wiring, until the server and the client both have viewports and aggregated views."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page

from ..integration.server_process import ServerProcess
from .feed import publish as publish_to_server
from .feed import publish_many

ROOT = Path(__file__).resolve().parents[2]
# The rows come from the server's viewports (True) or from the page's test double (False).
REAL = False
# Tests of the dashboard against the server's own viewports wait for the client to have them.
needs_viewports = pytest.mark.skipif(
    "viewport(" not in (ROOT / "web" / "client.js").read_text(),
    reason="the JavaScript client has no viewport() yet",
)

FAKE = (Path(__file__).parent / "fake_views.js").read_text()

INDEX = """
import { PushClient as RealClient } from "/web/index.js?real";
import { FakeStore } from "/tests/fake_views.js";
export * from "/web/index.js?real";

const DESKS = ["Rates", "Credit", "FX", "Equities"];
const SYMBOLS = ["AAPL", "IBM", "MSFT", "NVDA", "TSLA"];
const records = window.fakeBook ?? [];
for (let i = 1; !window.fakeBook && i <= SIZE; i++) {
  records.push({
    order: i, desk: DESKS[i % 4], sym: SYMBOLS[(i * 7) % 5], qty: (i * 7919) % 10000 + 1,
    px: Math.round(((i * 104729) % 50000) / 10) / 100, pnl: ((i * 7907) % 20001) - 10000,
  });
}
export const store = new FakeStore(records, "order");
window.fakeStore = store;

export class PushClient extends RealClient {
  viewport(topic, settings) { return store.viewport(topic, settings); }
  aggregate(topic, settings) { return store.aggregate(topic, settings); }
  // The book is the orders topic: a query of it is answered from the book too.
  sow(topic, query = {}) { return topic === "orders" ? store.sow(query) : super.sow(topic, query); }
}
"""


def book(order: int) -> dict[str, object]:
    """Record ``order`` of the book INDEX makes, as it makes it."""
    desks, symbols = ["Rates", "Credit", "FX", "Equities"], ["AAPL", "IBM", "MSFT", "NVDA", "TSLA"]
    return {
        "order": order,
        "desk": desks[order % 4],
        "sym": symbols[(order * 7) % 5],
        "qty": (order * 7919) % 10000 + 1,
        "px": round(((order * 104729) % 50000) / 10) / 100,
        "pnl": ((order * 7907) % 20001) - 10000,
    }


def serve_book(
    page: Page, server: ServerProcess, size: int = 0, records: list[dict[str, Any]] | None = None
) -> None:
    """The page's views show ``records``, or a book of ``size`` records (``book``): published to
    the server, or (not ``REAL``) answered by the page's test double."""
    if REAL:
        publish_many(server, records if records is not None else [book(n) for n in range(1, size + 1)])
        return
    if records is not None:
        page.add_init_script(f"window.fakeBook = {json.dumps(records)};")

    def javascript(body: str) -> object:
        return lambda route: route.fulfill(body=body, content_type="text/javascript")

    fake: object = javascript(FAKE)
    index: object = javascript(INDEX.replace("SIZE", str(size)))
    page.route(f"{server.http}/tests/fake_views.js", fake)  # type: ignore[arg-type]
    page.route(f"{server.http}/web/index.js", index)  # type: ignore[arg-type]


def publish(page: Page, *records: dict[str, Any]) -> None:
    """Change the page's book as a publish would."""
    page.evaluate("(records) => fakeStore.publish(...records)", list(records))


def view(page: Page, index: int = 0) -> Locator:
    return page.locator(".view").nth(index)


def body_rows(page: Page, index: int = 0) -> Locator:
    return view(page, index).locator("regular-table tbody tr")


def column(page: Page, field: str, index: int = 0) -> list[str]:
    """The texts of a column's cells on screen, top to bottom."""
    cells = view(page, index).locator(f"regular-table tbody td[data-field='{field}']")
    texts: list[str] = cells.all_inner_texts()
    return texts


def header(page: Page, field: str, index: int = 0) -> Locator:
    return view(page, index).locator(f"regular-table thead th[data-field='{field}']")


def open_desk(
    page: Page, server: ServerProcess, query: str, records: list[dict[str, Any]] | None = None, size: int = 0
) -> None:
    """Open the dashboard at ``/?query`` over ``records`` (or a book of ``size``)."""
    serve_book(page, server, size, records)
    page.goto(f"{server.http}/?{query}")


def change(page: Page, server: ServerProcess, *records: dict[str, Any]) -> None:
    """Records published while the dashboard shows them."""
    if REAL:
        publish_to_server(server, *records)
    else:
        publish(page, *records)


def lose_connection(page: Page, server: ServerProcess) -> None:
    """The page's connection goes down: the server stops (and, with the double, its views say so)."""
    server.stop()
    if not REAL:
        page.evaluate("() => fakeStore.setStale(true)")


# What the page's views hold: every open view of every panel's tree, its window, filter, order.
HELD = """() => {
  const out = [];
  const visit = (node) => {
    const v = node.view;
    out.push({ rows: v.rows.length, first: v.first, last: v.last, count: v.count,
      filter: v.filter ?? "", orderby: v.orderby ?? "" });
    for (const child of node.children.values()) visit(child);
  };
  for (const panel of dashboard.panels) if (panel.tree) visit(panel.tree.root);
  return out;
}"""
