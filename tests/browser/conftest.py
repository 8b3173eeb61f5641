"""Real Chromium (Debian's package) through Playwright's sync API, against a real server process."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Playwright, expect, sync_playwright

from ..integration.server_process import ServerProcess, running
from ..waiting import HANG_S

# Playwright's waits are hang guards too (tests/waiting.py): its defaults (5 s for an assertion,
# 30 s for an action) are time limits a page on two busy cores can outrun.
expect.set_options(timeout=HANG_S * 1000)

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOPICS = [
    {"name": "orders", "key": ["/order"]},
    {"name": "ledger", "key": ["/id"], "durable": True},
]


def chromium_path() -> str:
    found = shutil.which(os.environ.get("CHROMIUM", "chromium"))
    if found is None:
        pytest.fail("Chromium is not installed: the README's test command installs Debian's chromium")
    return found


# Package scope, not session: Playwright's sync API keeps an event loop running while it is open,
# and the asyncio tests of other packages must not run beside it (this package has none). The
# scheduler hands a worker its browser modules together (tests/conftest.py, BROWSER_UNITS), so
# they share one driver and one Chromium; each test's page has a context of its own.
@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as instance:
        yield instance


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
    yield browser
    browser.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    with running(tmp_path, TOPICS) as process:
        yield process


# A record row of a dashboard table (a <regular-table>): not a group row.
ROW = "regular-table tbody tr:not(.group-row)"


class Errors(list[str]):
    """Every uncaught page error and console error of a page, except the browser's own note that a
    WebSocket could not connect (expected while a test has the server down)."""

    def console(self, kind: str, text: str) -> None:
        if kind == "error" and not text.startswith("WebSocket connection to"):
            self.append(f"console: {text}")


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    context.set_default_timeout(HANG_S * 1000)
    page = context.new_page()
    errors = Errors()
    page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    page.on("console", lambda message: errors.console(message.type, message.text))
    page.errors = errors  # type: ignore[attr-defined]
    yield page
    context.close()
