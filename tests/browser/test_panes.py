"""Panes that show data, in real Chromium: eight views at 1600 x 1000 each show ten rows and more,
inside their own pane, under one title (the tab) and one toolbar row; the rest is behind the ⋯
menu, inside the pane too. What a pane says while the page connects, and its latency's label."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Locator, Page, expect

from ..integration.server_process import ServerProcess
from .desk import open_desk, shot, view_menu
from .feed import publish

# (The link gives every view each parameter, in order: an empty one where a view has none.)
VIEWS = [
    ("topic=orders&filter=&orderby=&options=", "orders"),
    ("topic=orders&filter=%2Fdesk%20%3D%20'FX'&orderby=&options=oof", "orders · /desk = 'FX' · oof"),
    ("topic=orders&filter=%2Fqty%20%3E%205000&orderby=&options=", "orders · /qty > 5000"),
    ("topic=orders&filter=%2Fsym%20%3D%20'MSFT'&orderby=%2Fqty%20DESC&options=", "orders · /sym = 'MSFT'"),
]

# Each view in its pane: the pane's box (its tab bar and its content), the boxes of the other panes,
# the box the table shows rows in (its client area: no scrollbar), and every drawn row's box.
PANES = """() => {
  const box = (r) => ({ top: r.top, bottom: r.bottom, left: r.left, right: r.right });
  const groups = [...document.querySelectorAll('.dv-groupview')].map((g) => box(g.getBoundingClientRect()));
  return [...document.querySelectorAll('.view')].map((view) => {
    const v = view.getBoundingClientRect();
    const x = (v.left + v.right) / 2, y = (v.top + v.bottom) / 2;
    const own = groups.findIndex((g) => g.left <= x && x <= g.right && g.top <= y && y <= g.bottom);
    const table = view.querySelector('regular-table');
    const t = table.getBoundingClientRect();
    const top = t.top + table.clientTop, left = t.left + table.clientLeft;
    const shows = { top, left, bottom: top + table.clientHeight, right: left + table.clientWidth };
    const rows = [...table.querySelectorAll('tbody tr')]
      .filter((tr) => tr.textContent.trim() !== '')
      .map((tr) => box(tr.getBoundingClientRect()));
    const toolbar = view.querySelector('.toolbar');
    const parts = [...toolbar.children].filter((c) => c.checkVisibility())
      .map((c) => c.getBoundingClientRect()).filter((r) => r.width > 0 && r.height > 0).map(box);
    const headings = [...view.querySelectorAll('h1, h2, h3, h4, h5, h6, header')]
      .filter((h) => h.checkVisibility()).length;
    const tab = document.querySelectorAll('.dv-groupview')[own]?.querySelector('.dv-tab');
    return { pane: groups[own], others: groups.filter((_, i) => i !== own), shows, rows, headings,
      tab: tab?.textContent.trim() ?? null, tabTitle: tab?.querySelector('[title]')?.title ?? null,
      topicShown: view.querySelector('.topic').checkVisibility(),
      toolbar: box(toolbar.getBoundingClientRect()), parts,
      toolbars: [...view.querySelectorAll('.toolbar')].filter((t) => t.checkVisibility()).length };
  });
}"""
# Ready to be measured: every pane shows at least ten whole rows inside the area its table shows.
TEN_ROWS_EACH = f"""() => {{
  const panes = ({PANES})();
  return panes.length === 8 && panes.every((p) => p.rows.filter((r) =>
    r.top >= p.shows.top - 0.5 && r.bottom <= p.shows.bottom + 0.5).length >= 10);
}}"""


def edges(element: Locator) -> dict[str, float]:
    """Where ``element`` is drawn on the page: its top, bottom, left and right."""
    box = element.bounding_box()
    assert box is not None, "not drawn"
    return {
        "top": box["y"],
        "bottom": box["y"] + box["height"],
        "left": box["x"],
        "right": box["x"] + box["width"],
    }


def inside(inner: dict[str, float], outer: dict[str, float]) -> bool:
    return (
        inner["top"] >= outer["top"] - 0.5
        and inner["bottom"] <= outer["bottom"] + 0.5
        and inner["left"] >= outer["left"] - 0.5
        and inner["right"] <= outer["right"] + 0.5
    )


def drawn(row: dict[str, float], shows: dict[str, float]) -> dict[str, float] | None:
    """The part of a row the table draws: the rest is cut off by the table's own box."""
    part = {
        "top": max(row["top"], shows["top"]),
        "bottom": min(row["bottom"], shows["bottom"]),
        "left": max(row["left"], shows["left"]),
        "right": min(row["right"], shows["right"]),
    }
    return part if part["bottom"] - part["top"] > 0.5 and part["right"] - part["left"] > 0.5 else None


def meets(a: dict[str, float], b: dict[str, float]) -> bool:
    # A pixel of shared border is not an overlap.
    return (
        a["right"] > b["left"] + 1
        and b["right"] > a["left"] + 1
        and a["bottom"] > b["top"] + 1
        and b["bottom"] > a["top"] + 1
    )


def test_eight_views_at_1600_by_1000_each_show_ten_rows_inside_their_own_pane(
    page: Page, server: ServerProcess
) -> None:
    page.set_viewport_size({"width": 1600, "height": 1000})
    query = "&".join(VIEWS[n % len(VIEWS)][0] for n in range(8))
    open_desk(page, server, query, size=2000)
    expect(page.locator(".view")).to_have_count(8)
    page.wait_for_function(TEN_ROWS_EACH)
    panes: list[dict[str, Any]] = page.evaluate(PANES)
    titles = [VIEWS[n % len(VIEWS)][1] for n in range(8)]
    for n, pane in enumerate(panes):
        assert pane["pane"] is not None, f"view {n} is in no pane"
        # No heading of its own: the tab is the one title, the whole of it on the tab's tooltip.
        assert pane["headings"] == 0 and not pane["topicShown"], pane
        assert pane["tab"] in titles and pane["tabTitle"] == pane["tab"], pane
        # One toolbar row: every control and figure on one line, the table right under it.
        parts = pane["parts"]
        assert pane["toolbars"] == 1 and len(parts) >= 4, parts
        assert max(p["top"] for p in parts) < min(p["bottom"] for p in parts), f"not one row: {parts}"
        assert all(inside(p, pane["toolbar"]) for p in parts), parts
        assert pane["toolbar"]["bottom"] - pane["toolbar"]["top"] <= 32, pane["toolbar"]
        assert abs(pane["shows"]["top"] - pane["toolbar"]["bottom"]) <= 1, "the table follows the toolbar"
        # The table fills the pane and stays in it; no row is drawn over another pane.
        assert inside(pane["shows"], pane["pane"]), (pane["shows"], pane["pane"])
        assert pane["pane"]["bottom"] - pane["shows"]["bottom"] <= 2, "the table takes the height left"
        # Whole: its full height shown (a row wider than the pane scrolls sideways in it).
        shows = pane["shows"]
        whole = [
            row
            for row in pane["rows"]
            if shows["top"] - 0.5 <= row["top"] and row["bottom"] <= shows["bottom"] + 0.5
        ]
        assert len(whole) >= 10, f"view {n} shows {len(whole)} whole rows"
        for row in pane["rows"]:
            part = drawn(row, pane["shows"])
            if part is None:
                continue
            assert inside(part, pane["pane"]), (n, part, pane["pane"])
            assert not any(meets(part, other) for other in pane["others"]), (n, part)
    assert sorted(pane["tab"] for pane in panes) == sorted(titles)
    shot(page, "panes-8-at-1600x1000.png")

    # What is rarely used is behind the ⋯ menu, every control there, and the menu inside its pane.
    first = page.locator(".view").first
    items = view_menu(first)
    for control in (".columns-menu summary", "select.link", ".details", ".export-csv", ".close"):
        expect(items.locator(control)).to_be_visible()
    expect(items.locator(".view-name")).to_contain_text("orders")
    pane = panes[0]["pane"]
    assert inside(edges(items), pane)
    shot(page, "panes-menu.png")
    page.locator(".view").nth(1).locator("regular-table tbody td").first.click()
    expect(first.locator(".view-menu")).not_to_have_attribute("open", "")  # a click elsewhere closes it
    view_menu(first).locator("select.link").focus()
    page.keyboard.press("Escape")  # and Escape, the keyboard back on the ⋯ that opened it
    expect(first.locator(".view-menu")).not_to_have_attribute("open", "")
    expect(first.locator(".view-menu > summary")).to_be_focused()

    # A column's menu, longer than a short pane, stays in its pane and scrolls to its last item.
    first.locator("regular-table thead th[data-field='qty'] .column-menu-button").click()
    popup = first.locator(".column-popup")
    expect(popup).to_be_visible()
    assert inside(edges(popup), pane)
    shot(page, "panes-column-menu.png")
    last = popup.get_by_role("button").last
    last.scroll_into_view_if_needed()
    expect(last).to_be_in_viewport()
    page.keyboard.press("Escape")
    expect(popup).to_be_hidden()
    assert page.errors == []  # type: ignore[attr-defined]


# Every text a view's empty state has shown, with what the bar said at that moment.
WATCH_EMPTY_STATES = """() => {
  window.said = [];
  new MutationObserver(() => {
    const bar = document.querySelector('#connection span')?.textContent ?? '';
    for (const empty of document.querySelectorAll('.view .empty-state')) {
      const last = said.at(-1);
      const text = empty.textContent;
      if (!last || last.text !== text || last.bar !== bar) said.push({ bar, text });
    }
  }).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
}"""


def test_a_view_says_it_connects_never_not_connected_while_the_bar_says_connected(
    page: Page, server: ServerProcess
) -> None:
    page.add_init_script(f"({WATCH_EMPTY_STATES})()")  # before the page's own scripts run
    page.goto(f"{server.http}/?topic=ledger&topic=orders")
    expect(page.locator(".view").nth(0).locator(".empty-state")).to_have_text("ledger has no records yet.")
    expect(page.locator(".view").nth(1).locator(".empty-state")).to_have_text("orders has no records yet.")
    said: list[dict[str, str]] = page.evaluate("() => said")
    assert said[0]["text"] == "Connecting to the server…", said
    assert not any("attempt 0" in entry["text"] for entry in said), said
    assert not any(entry["bar"] == "connected" and "Not connected" in entry["text"] for entry in said), said
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_latency_says_what_it_measures(page: Page, server: ServerProcess) -> None:
    publish(server, *[{"order": n, "qty": n} for n in range(5)])
    page.goto(f"{server.http}/?topic=orders")
    expect(page.locator(".view .rows")).to_have_text("5")
    figure = page.locator(".view .latency-figure")
    expect(figure.locator(".latency-label")).to_have_text("publish→screen")
    expect(figure.locator(".latency-label")).to_be_visible()
    expect(figure).to_have_attribute(
        "title", re.compile(r"^Publish to screen, p50 / p99 over the last minute")
    )
    expect(figure).to_have_attribute("title", re.compile(r"Now: no live change yet in the last minute\.$"))
    publish(server, *[{"order": n, "qty": n + 10} for n in range(5)])
    expect(figure).to_have_attribute("title", re.compile(r"Now: 5 live changes in the last minute\.$"))
    expect(figure.locator(".latency")).to_have_text(re.compile(r"^\d+(\.\d)? ms / \d+(\.\d)? ms$"))
    assert page.errors == []  # type: ignore[attr-defined]
