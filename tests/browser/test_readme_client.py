"""The README's JavaScript client example ("From the page the server serves, without npm"), run
as printed in Chromium against the demo configuration (only the server's address is the test's):
it logs on, follows a view, writes into the demo's `examples` topic, and leaves the demo's own
topics alone."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from ..integration.server_process import ServerProcess, sow_records
from .feed import publish

ROOT = Path(__file__).resolve().parents[2]
ADDRESS = "ws://127.0.0.1:8000/ws"


def example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("From the page the server serves, without npm:", 1)[1]
    match = re.search(r"```js\n(.*?)```", section, re.DOTALL)
    assert match, "the README's JavaScript client section has no example"
    return match.group(1)


@pytest.fixture
def demo_server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(None, tmp_path / "data")  # the demo configuration, as ./scripts/run serves it
    yield process
    process.stop()


def test_the_client_example_runs_as_printed(page: Page, demo_server: ServerProcess) -> None:
    code = example()
    assert ADDRESS in code, "the example names the server ./scripts/run starts"
    publish(demo_server, *[{"order": n, "qty": 10 * n} for n in range(1, 4)])
    page.goto(demo_server.http + "/healthz")  # the page's origin, for the example's absolute imports
    page.add_script_tag(
        type="module", content=code.replace(ADDRESS, demo_server.url) + "\nwindow.ran = true;\n"
    )
    page.wait_for_function("window.ran === true")
    assert page.errors == []  # type: ignore[attr-defined]
    assert sorted((r["id"], r["qty"]) for r in sow_records(demo_server.url, "examples")) == [(1, 6), (2, 5)]
    assert sorted(r["qty"] for r in sow_records(demo_server.url, "orders")) == [10, 20, 30], "left alone"
