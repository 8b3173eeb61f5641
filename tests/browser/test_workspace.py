"""The dashboard's workspace (static/workspace.js) as a desk uses it: views open as panes that share
the screen and never overlap, however many; a pane is closed from its tab, maximised and restored,
and resized by the edge between two panes; a layout is kept under a name in the browser and
travels as a file (static/layouts.js)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from ..integration.server_process import ServerProcess
from .desk import eventually, open_desk, shot, view_menu

VIEWS = [
    "topic=orders&filter=&options=",
    "topic=orders&filter=%2Fdesk%20%3D%20'FX'&options=oof",
    "topic=orders&filter=%2Fqty%20%3E%205000&options=",
]
# The views on screen: a hidden one (behind a maximised pane, say) keeps its box, so it is asked.
BOXES = """() => [...document.querySelectorAll('.view')]
  .filter((view) => view.checkVisibility({ checkOpacity: true, visibilityProperty: true }))
  .map((view) => {
  const box = view.getBoundingClientRect();
  return { x: box.x, y: box.y, width: box.width, height: box.height };
})"""
WORKSPACE = """() => {
  const box = document.getElementById('views').getBoundingClientRect();
  return [box.x, box.y, box.width, box.height];
}"""


def query(count: int) -> str:
    return "&".join(VIEWS[n % len(VIEWS)] for n in range(count))


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    # A pixel of shared border is not an overlap.
    return (
        a["x"] + a["width"] > b["x"] + 1
        and b["x"] + b["width"] > a["x"] + 1
        and a["y"] + a["height"] > b["y"] + 1
        and b["y"] + b["height"] > a["y"] + 1
    )


def shown(page: Page) -> list[dict[str, Any]]:
    boxes: list[dict[str, Any]] = page.evaluate(BOXES)
    # Behind a maximised pane the others are collapsed to their borders: 2 pixels.
    return [box for box in boxes if box["width"] > 4 and box["height"] > 4]


@pytest.mark.parametrize(("count", "theme"), [(5, "light"), (10, "dark")])
def test_views_share_the_screen_and_never_overlap(
    page: Page, server: ServerProcess, count: int, theme: str
) -> None:
    page.emulate_media(color_scheme=theme)  # type: ignore[arg-type]
    page.set_viewport_size({"width": 1600, "height": 1000})
    open_desk(page, server, query(count), size=400)
    expect(page.locator(".view")).to_have_count(count)
    for index in range(count):
        expect(page.locator(".view").nth(index).locator("regular-table tbody tr").first).to_be_visible()
    boxes = shown(page)
    assert len(boxes) == count, "every view is on screen"
    left, top, width, height = page.evaluate(WORKSPACE)
    for n, box in enumerate(boxes):
        assert left - 1 <= box["x"] and box["x"] + box["width"] <= left + width + 1, box
        assert top - 1 <= box["y"] and box["y"] + box["height"] <= top + height + 1, box
        assert not any(overlap(box, other) for other in boxes[n + 1 :]), boxes
    # The screen is shared out evenly: no view gets less than half the share of a grid of them.
    assert min(box["width"] * box["height"] for box in boxes) >= 0.5 * width * height / (count + 2)
    shot(page, f"workspace-{count}-{theme}.png")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_pane_closes_from_its_tab_and_the_link_follows(page: Page, server: ServerProcess) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    open_desk(page, server, query(3), size=100)
    expect(page.locator(".view")).to_have_count(3)
    page.locator(".dv-tab", has_text="orders · /desk = 'FX'").locator(".dv-default-tab-action").click()
    expect(page.locator(".view")).to_have_count(2)
    page.wait_for_function("() => location.search.split('topic=orders').length - 1 === 2")
    assert "FX" not in page.evaluate("() => decodeURIComponent(location.search)")
    # And the view's own close button closes its pane.
    view_menu(page.locator(".view").nth(1)).locator(".close").click()
    expect(page.locator(".dv-tab")).to_have_count(1)
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_pane_maximises_and_restores(page: Page, server: ServerProcess) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    open_desk(page, server, query(3), size=100)
    expect(page.locator(".view")).to_have_count(3)
    before = shown(page)
    page.locator(".pane-actions .maximise").nth(1).click()
    _, _, width, height = page.evaluate(WORKSPACE)

    def maximised(boxes: Any) -> bool:
        """Only the maximised view shows, and it fills the workspace (once the layout has run:
        read at once after the click, a busy machine showed it at its old size)."""
        return len(boxes) == 1 and boxes[0]["width"] >= width - 4 and boxes[0]["height"] >= height - 40

    eventually(lambda: shown(page), maximised)
    expect(page.locator(".pane-actions .maximise[aria-pressed='true']")).to_have_count(1)
    shot(page, "workspace-maximised.png")
    page.locator(".pane-actions .maximise[aria-pressed='true']").click()
    eventually(lambda: shown(page), lambda boxes: boxes == before)  # the layout comes back as it was
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_edge_between_two_panes_resizes_them(page: Page, server: ServerProcess) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    open_desk(page, server, query(2), size=100)
    expect(page.locator(".view")).to_have_count(2)
    first, second = shown(page)
    # Side by side or one above the other (whichever keeps them nearer a table's shape): halves.
    side_by_side = first["y"] == second["y"]
    size = "width" if side_by_side else "height"
    assert abs(first[size] - second[size]) < 4, (first, second)
    box = page.locator(".dv-sash.dv-enabled").first.bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x - 200 if side_by_side else x, y if side_by_side else y - 150, steps=8)
    page.mouse.up()
    first, second = eventually(  # type: ignore[misc]
        lambda: shown(page), lambda boxes: len(boxes) == 2 and boxes[1][size] - boxes[0][size] > 250
    )
    assert not overlap(first, second)
    expect(page.locator(".view").nth(0).locator("regular-table tbody tr").first).to_be_visible()
    assert page.errors == []  # type: ignore[attr-defined]


def drag_first_edge(page: Page, by: float) -> None:
    box = page.locator(".dv-sash.dv-enabled").first.bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(
        x - by if box["height"] > box["width"] else x, y - by if box["width"] > box["height"] else y, steps=8
    )
    page.mouse.up()


def near(boxes: list[dict[str, Any]], others: list[dict[str, Any]]) -> bool:
    return len(boxes) == len(others) and all(
        abs(a[side] - b[side]) <= 3
        for a, b in zip(boxes, others, strict=True)
        for side in ("x", "y", "width", "height")
    )


def test_a_layout_is_kept_under_a_name_and_travels_as_a_file(
    page: Page, server: ServerProcess, browser: Browser, tmp_path: Path
) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    open_desk(page, server, query(3), size=100)
    expect(page.locator(".view")).to_have_count(3)
    drag_first_edge(page, 120)  # arranged by hand: the layout keeps the sizes too
    arranged = shown(page)

    page.locator("#layouts > summary").click()
    page.locator(".save-layout input").fill("morning")
    page.locator(".save-layout button").click()
    expect(page.locator(".layout-message")).to_have_text('saved "morning" in this browser')
    with page.expect_download() as download:
        page.locator(".export-layout").click()
    exported = tmp_path / "morning.json"
    download.value.save_as(exported)
    shot(page, "workspace-layouts.png")

    # Another day: the dashboard opens empty, and the layout comes back with its sizes.
    page.goto(server.http)
    expect(page.locator(".view")).to_have_count(0)
    page.locator("#layouts > summary").click()
    page.locator(".open-layout", has_text="morning").click()
    expect(page.locator(".view")).to_have_count(3)
    eventually(lambda: shown(page), lambda boxes: near(boxes, arranged))  # type: ignore[arg-type]
    page.wait_for_function("() => location.search.split('topic=orders').length - 1 === 3")  # the link too
    expect(page.locator(".view").nth(2).locator("regular-table tbody tr").first).to_be_visible()

    # Another browser: the file opens the same screen.
    other = browser.new_context().new_page()
    other.set_viewport_size({"width": 1400, "height": 900})
    other.goto(server.http)
    other.locator("#layouts > summary").click()
    expect(other.locator(".no-layouts")).to_be_visible()
    other.locator(".import-layout input").set_input_files(exported)
    expect(other.locator(".view")).to_have_count(3)
    eventually(lambda: shown(other), lambda boxes: near(boxes, arranged))  # type: ignore[arg-type]
    # A file that is not a layout says so, and leaves the screen as it was.
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"views": []}')
    other.locator("#layouts > summary").click()
    other.locator(".import-layout input").set_input_files(wrong)
    expect(other.locator(".layout-message")).to_contain_text(
        'not a sowpush layout (no "format": "sowpush layout")'
    )
    expect(other.locator(".view")).to_have_count(3)
    # Nor does one whose arrangement cannot be laid out: the views stay as they were.
    broken = tmp_path / "broken.json"
    layout = json.loads(exported.read_text())
    layout["arrangement"]["grid"] = {"root": "no grid at all"}
    broken.write_text(json.dumps(layout))
    other.locator(".import-layout input").set_input_files(broken)
    expect(other.locator(".layout-message")).to_contain_text("cannot open broken.json")
    expect(other.locator(".view")).to_have_count(3)
    eventually(lambda: shown(other), lambda boxes: near(boxes, arranged))  # type: ignore[arg-type]
    other.context.close()

    # Deleted, it is gone from this browser.
    page.locator("#layouts > summary").click()
    page.locator(".delete-layout").click()
    expect(page.locator(".open-layout")).to_have_count(0)
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_layout_may_have_any_name(page: Page, server: ServerProcess) -> None:
    open_desk(page, server, query(1), size=10)
    expect(page.locator(".view")).to_have_count(1)
    page.locator("#layouts > summary").click()
    for name in ("__proto__", "constructor"):
        page.locator(".save-layout input").fill(name)
        page.locator(".save-layout input").press("Enter")
        expect(page.locator(".layout-message")).to_have_text(f'saved "{name}" in this browser')
    page.reload()
    page.locator("#layouts > summary").click()
    expect(page.locator(".open-layout")).to_have_text(["__proto__", "constructor"])
    page.locator(".open-layout", has_text="__proto__").click()
    expect(page.locator(".view")).to_have_count(1)
    assert page.errors == []  # type: ignore[attr-defined]
