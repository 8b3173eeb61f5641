"""The table ends as the server's view, whatever the stream did: a seeded stream of inserts,
updates that cross the filter's edge (out of the view and back), updates that move a row to
another group, and deletes, sent in frames while the dashboard draws; once drawn, the table's rows
are exactly the records the server's filter selects, each group holds exactly its records, and
the totals are their sums. Grouped and plain, because the binding draws the two differently."""

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
  const table = panel?.table;
  if (!table || !panel.established) return null;
  const calcs = table.getCalcResults();
  const bottom = (c) => (c && c.bottom ? c.bottom.qty : null);
  return {
    quiet: panel.binding.waiting === 0 && panel.binding.leaving.size === 0,
    rows: table.getData().map((r) => [r.order, r.sym, r.qty]),
    groups: table.getGroups().map((g) => [g.getKey(), g.getRows().length, bottom(calcs[g.getKey()])]),
    total: table.options.groupBy ? null : bottom(calcs),
  };
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


@pytest.mark.parametrize("group", ["", "sym"])
def test_the_table_ends_as_the_servers_view(page: Page, server: ServerProcess, group: str) -> None:
    rng = random.Random(15)
    book: dict[int, dict[str, Any]] = {}
    for order in range(1, 301):
        book[order] = record(order, rng)
    request(server.url, [{"c": "publish", "t": "orders", "data": r} for r in book.values()])
    view = f"?topic=orders&filter={quote(f'/qty > {IN_VIEW}')}&options=oof&group={group}"
    page.goto(f"{server.http}/{view}")
    eventually(lambda: page.evaluate(STATE), lambda state: bool(state and state["quiet"] and state["rows"]))

    for wave in range(6):
        for _ in range(4):  # frames while the page draws, each a burst of changes
            request(server.url, stream(rng, book, 60))
        expected = {order: r for order, r in book.items() if r["qty"] > IN_VIEW}
        want_rows = sorted([order, r["sym"], r["qty"]] for order, r in expected.items())
        by_symbol: dict[str, list[int]] = {}
        for r in expected.values():
            by_symbol.setdefault(r["sym"], []).append(r["qty"])
        want_groups = sorted([sym, len(qtys), sum(qtys)] for sym, qtys in by_symbol.items())

        def settled(state: object, want_rows: object = want_rows) -> bool:
            return isinstance(state, dict) and state["quiet"] and sorted(state["rows"]) == want_rows

        state = eventually(lambda: page.evaluate(STATE), settled, timeout=15)
        assert isinstance(state, dict)
        if group:
            # Totals follow within half a second of the last change.
            state = eventually(
                lambda: page.evaluate(STATE),
                lambda s, want=want_groups: isinstance(s, dict) and sorted(s["groups"]) == want,
            )
        else:
            total = sum(sum(qtys) for qtys in by_symbol.values())
            eventually(lambda: page.evaluate(STATE), lambda s, t=total: bool(s) and s["total"] == t)
        assert sorted(state["rows"]) == want_rows, f"wave {wave}"
    assert page.errors == []  # type: ignore[attr-defined]
