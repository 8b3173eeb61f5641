"""The dashboard against a server with [auth]: /topics refuses it, and it carries on without a
topic list, without an error and without making the browser ask for a password."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Response, expect

from ..integration.server_process import ServerProcess, auth_section, write_config

TOPICS: list[dict[str, Any]] = [{"name": "orders", "key": ["/order"]}]
AUTH = auth_section({"user_id": "alice", "password": "secret", "read": ["*"]})


@pytest.fixture
def auth_server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(write_config(tmp_path / "server.toml", {}, TOPICS, AUTH), tmp_path / "data")
    yield process
    process.stop()


def test_the_dashboard_degrades_without_a_topic_list(browser: Browser, auth_server: ServerProcess) -> None:
    # A browser that would answer a Basic challenge (what a password prompt does): the dashboard
    # must not raise one, so these credentials must never be used.
    context = browser.new_context(http_credentials={"username": "alice", "password": "secret"})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        with page.expect_response(lambda r: r.url.endswith("/topics")) as first:
            page.goto(auth_server.http + "/")
        response: Response = first.value
        assert response.status == 401
        page.wait_for_timeout(300)
        expect(page.locator("#topics li")).to_have_count(0)
        expect(page.locator("form#open-view")).to_be_visible()
        assert errors == []
    finally:
        context.close()
