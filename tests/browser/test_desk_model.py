"""The table ends as the server's view, whatever the stream did: a seeded stream of inserts,
updates that cross the filter's edge (out of the view and back), updates that move a record to
another group, and deletes, sent in frames while the dashboard shows the view sorted by the
column that changes; once settled, the rows on screen are exactly the server's first rows of that
order, the count is the view's size, and each group row's count and total are its records'.
Grouped and plain, because the two are different views (a viewport, or an aggregate)."""

from __future__ import annotations

import random
from typing import Any
from urllib.parse import quote

import pytest
from playwright.sync_api import Page

from ..integration.server_process import ServerProcess
from .desk import eventually
from .feed import request

SYMBOLS = ["AAPL", "IBM", "MSFT", "NVDA", "TSLA"]
IN_VIEW = 100  # the view's filter: /qty > IN_VIEW

STATE = """() => {
  const panel = [...dashboard.panels][0];
  const table = panel?.element.querySelector("regular-table");
  if (!panel?.established || !table) return null;
  const text = (td) => td.textContent;
  const rows = [...table.querySelectorAll("tbody tr")].map((tr) => ({
    group: tr.classList.contains("group-row"),
    label: tr.querySelector("th")?.textContent ?? "",
    order: text(tr.querySelector("[data-field=order]") ?? { textContent: "" }),
    qty: text(tr.querySelector("[data-field=qty]") ?? { textContent: "" }),
  }));
  return { rows, count: panel.element.querySelector(".rows").textContent };
}"""


def record(order: int, rng: random.Random) -> dict[str, Any]:
    return {"order": order, "sym": rng.choice(SYMBOLS), "qty": rng.randrange(1, 400), "px": rng.random()}


def stream(rng: random.Random, book: dict[int, dict[str, Any]], size: int) -> list[dict[str, Any]]:
    """``size`` random changes to ``book`` (applied to it, as the server will), as commands."""
    commands: list[dict[str, Any]] = []
    for _ in range(size):
        roll = rng.random()
        if roll < 0.1 or not book:
            order = max(book, default=0) + 1
            book[order] = record(order, rng)
        elif roll < 0.2:
            order = rng.choice(sorted(book))
            del book[order]
            commands.append({"c": "sow_delete", "t": "orders", "filter": f"/order = {order}"})
            continue
        else:
            order = rng.choice(sorted(book))
            book[order] = {**book[order], "qty": rng.randrange(1, 400)}  # may cross the edge
            if roll > 0.7:
                book[order]["sym"] = rng.choice(SYMBOLS)  # to another group
        commands.append({"c": "publish", "t": "orders", "data": book[order]})
    return commands


@pytest.mark.parametrize("group", ["", "/sym"])
def test_the_table_ends_as_the_servers_view(page: Page, server: ServerProcess, group: str) -> None:
    rng = random.Random(15)
    book: dict[int, dict[str, Any]] = {}
    for order in range(1, 301):
        book[order] = record(order, rng)
    request(server.url, [{"c": "publish", "t": "orders", "data": r} for r in book.values()])
    page.set_viewport_size({"width": 1400, "height": 900})
    view = f"?topic=orders&filter={quote(f'/qty > {IN_VIEW}')}&options=oof&orderby=/qty%20DESC&group={group}"
    page.goto(f"{server.http}/{view}")
    eventually(lambda: page.evaluate(STATE), lambda state: bool(state and state["rows"]))

    for wave in range(6):
        for _ in range(4):  # frames while the page draws, each a burst of changes
            request(server.url, stream(rng, book, 60))
        expected = {order: r for order, r in book.items() if r["qty"] > IN_VIEW}
        ranked = sorted(expected.values(), key=lambda r: -r["qty"])
        by_symbol: dict[str, list[int]] = {}
        for r in expected.values():
            by_symbol.setdefault(r["sym"], []).append(r["qty"])

        if group:
            want = sorted(([sym, len(q), sum(q)] for sym, q in by_symbol.items()), key=lambda g: -g[2])

            def groups(state: object) -> list[list[object]]:
                assert isinstance(state, dict)
                return [
                    [
                        row["label"].split(" ")[1],
                        int(row["label"].split(" · ")[1].split(" ")[0]),
                        int(row["qty"].replace(",", "")),
                    ]
                    for row in state["rows"]
                    if row["group"]
                ]

            eventually(lambda: page.evaluate(STATE), lambda s, w=want: groups(s) == w)
        else:

            def settled(state: object, ranked: list[dict[str, Any]] = ranked) -> bool:
                if not isinstance(state, dict) or state["count"] != f"{len(ranked):,}":
                    return False
                shown = [int(row["qty"].replace(",", "")) for row in state["rows"]]
                return bool(shown) and shown == [r["qty"] for r in ranked[: len(shown)]]

            state = eventually(lambda: page.evaluate(STATE), settled)
            assert isinstance(state, dict), f"wave {wave}"
    assert page.errors == []  # type: ignore[attr-defined]
