"""The dashboard's connection under repeated server crashes: a real server process on a fixed port,
killed with SIGKILL and restarted on the same port, short and ~5 s outages, three views open.

Through every cycle the page holds at most one open WebSocket (counted by wrapping
``window.WebSocket``, and on the server by ``push_connections``), no view is ever refused with
``subid in use``, the attempt counter climbs while the server is away, the views stay on screen
(dimmed, under a banner) with the URL unchanged, and after each return every view's records equal
the server's SOW as a plain Python client reads it."""

from __future__ import annotations

import json
import signal
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect

from ..integration.server_process import ServerProcess, write_config
from ..waiting import HANG_S, eventually
from .conftest import TOPICS
from .feed import request

SCREENSHOTS = Path(__file__).parent / "screenshots"
# With `oof`, so that a view learns of deletes too (without it a deleted record stays in the view).
VIEWS = [("orders", "", "oof"), ("orders", "/qty > 10", "oof"), ("ledger", "", "oof")]
OUTAGES = [0.3, 5.0, 1.0, 5.0]  # seconds with the server down, one per kill
# What the browser itself logs of a server that is killed and away: a connection refused, a
# socket that failed, and a request in flight at the kill, reset (whether one is depends on the
# instant of the kill: an idle run was red on one).
CONNECTIONS_ERRORS = ("ERR_CONNECTION_REFUSED", "ERR_CONNECTION_RESET", "WebSocket connection to")

# Runs before the page's own scripts: every WebSocket the page makes is counted, with the most
# that were open at once, and every frame is scanned for a `subid in use` refusal.
COUNT_SOCKETS = """
(() => {
  const Native = window.WebSocket;
  const sockets = { created: 0, maxOpen: 0, refusals: [], all: [] };
  sockets.open = () => sockets.all.filter((s) => s.readyState === Native.OPEN).length;
  window.__sockets = sockets;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      sockets.created += 1;
      sockets.all.push(this);
      this.addEventListener("open", () => { sockets.maxOpen = Math.max(sockets.maxOpen, sockets.open()); });
      this.addEventListener("message", (event) => {
        const text = typeof event.data === "string" ? event.data : new TextDecoder().decode(event.data);
        if (text.includes("subid in use")) sockets.refusals.push(text.slice(0, 300));
      });
    }
  };
})();
"""

RECORD_STATES = """() => {
  window.__states = [];
  dashboard.client.on("state", (event) => __states.push({ ...event, at: Date.now() }));
}"""

# Each view is a viewport whose window holds the whole of these small views.
PANELS = """() => [...dashboard.panels].map((panel) => ({
  records: panel.tree ? panel.tree.root.view.rows : [],
  stale: panel.stale,
  shownRows: panel.element.querySelector(".rows").textContent,
}))"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def sow(url: str, topic: str, filter_text: str) -> list[Any]:
    command: dict[str, Any] = {"c": "sow", "t": topic, "query_id": "q"}
    if filter_text:
        command["filter"] = filter_text
    return [m["data"] for m in request(url, [command]) if m.get("c") == "sow"]


def canonical(records: list[Any]) -> list[str]:
    return sorted(json.dumps(record, sort_keys=True) for record in records)


def metrics(server: ServerProcess) -> dict[str, float]:
    with urllib.request.urlopen(server.http + "/metrics", timeout=HANG_S) as response:
        text = response.read().decode()
    values: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("push_connections ") or line.startswith("push_subscriptions{"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


def publish_cycle(server: ServerProcess, cycle: int) -> None:
    """New values each cycle, records entering and leaving the filtered view, and a delete."""
    orders = [{"order": n, "qty": (n * 7 + cycle * 5) % 20, "cycle": cycle} for n in range(1, 9)]
    ledger = [{"id": cycle * 10 + n, "ref": f"c{cycle}-{n}"} for n in range(3)]
    commands: list[dict[str, Any]] = [{"c": "publish", "t": "orders", "data": r} for r in orders]
    commands += [{"c": "publish", "t": "ledger", "data": r} for r in ledger]
    commands.append({"c": "sow_delete", "t": "orders", "filter": f"/order = {cycle % 8 + 1}"})
    request(server.url, commands)


def wait_until_views_equal_the_sow(page: Page, server: ServerProcess, timeout: float = HANG_S) -> None:
    expected = [canonical(sow(server.url, topic, filter_text)) for topic, filter_text, _ in VIEWS]
    deadline = time.monotonic() + timeout
    while True:
        panels = page.evaluate(PANELS)
        got = [canonical(panel["records"]) for panel in panels]
        settled = all(not p["stale"] and p["shownRows"] == str(len(p["records"])) for p in panels)
        if got == expected and settled:
            return
        if time.monotonic() > deadline:
            assert got == expected, "a view differs from the server's SOW"
            assert settled, f"views still stale or not drawn: {panels}"
        time.sleep(0.1)


def assert_one_socket(page: Page) -> None:
    sockets = page.evaluate(
        "() => ({ created: __sockets.created, maxOpen: __sockets.maxOpen, open: __sockets.open(),"
        " refusals: __sockets.refusals, made: dashboard.client.connection.sockets })"
    )
    assert sockets["maxOpen"] == 1, f"{sockets['maxOpen']} WebSockets were open at once"
    assert sockets["open"] <= 1
    assert sockets["refusals"] == [], "a view was subscribed twice on one socket"
    assert sockets["created"] == sockets["made"], "every socket belongs to one attempt of the state machine"


def wait_for_server_side(server: ServerProcess) -> None:
    """The server sees exactly one socket (the page's) holding each view once."""
    want = {
        "push_connections": 1.0,
        'push_subscriptions{topic="orders"}': 2.0,
        'push_subscriptions{topic="ledger"}': 1.0,
    }
    got: dict[str, float] = {}

    def as_wanted() -> bool:
        got.clear()
        got.update({k: v for k, v in metrics(server).items() if k in want})
        return got == want

    eventually(as_wanted, lambda: f"server side: {got}, want {want}")


class Restartable:
    """A server on one fixed port, so the page reconnects to the same URL after each restart."""

    def __init__(self, tmp_path: Path) -> None:
        self.config = write_config(tmp_path / "server.toml", {}, TOPICS)
        self.data = tmp_path / "data"
        self.port = free_port()
        self.server = self.start()

    def start(self) -> ServerProcess:
        self.server = ServerProcess(self.config, self.data, port=self.port)
        return self.server


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[Restartable]:
    process = Restartable(tmp_path)
    yield process
    process.server.stop(signal.SIGKILL)


@pytest.mark.slow
def test_one_socket_and_exact_views_through_repeated_kills(page: Page, restartable: Restartable) -> None:
    server = restartable.server
    SCREENSHOTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 720})
    page.add_init_script(COUNT_SOCKETS)
    query = "&".join(f"topic={t}&filter={quote(f)}&options={quote(o)}" for t, f, o in VIEWS)
    publish_cycle(server, 0)
    page.goto(f"{server.http}/?{query}")
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")
    page.evaluate(RECORD_STATES)
    address = page.url
    wait_until_views_equal_the_sow(page, server)

    for cycle, outage in enumerate(OUTAGES, start=1):
        assert_one_socket(page)
        wait_for_server_side(server)
        # Open for longer than the client's stableMs: the next outage's backoff starts afresh.
        page.wait_for_function(
            "() => Date.now() - dashboard.client.connection.openedAt > dashboard.client.connection.stableMs"
        )
        killed_at = page.evaluate("() => Date.now()")
        server.stop(signal.SIGKILL)
        expect(page.locator("#offline")).to_be_visible()
        expect(page.locator(".view.stale")).to_have_count(len(VIEWS))
        if outage >= 5:
            page.wait_for_timeout(outage * 1000 / 2)
            if cycle == 2:
                page.screenshot(path=str(SCREENSHOTS / "dashboard-disconnected.png"))
            page.wait_for_timeout(outage * 1000 / 2)
        else:
            time.sleep(outage)
        # The rows stay while the server is away, and so do the views and the link.
        assert page.url == address
        assert page.locator(".view").count() == len(VIEWS)
        states = page.evaluate("(since) => __states.filter((s) => s.at >= since)", killed_at)
        attempts = [s["attempt"] for s in states if s["state"] == "waiting"]
        assert attempts == list(range(1, len(attempts) + 1)), f"attempts during the outage: {attempts}"
        if outage >= 5:
            assert len(attempts) >= 4, f"only {len(attempts)} attempts in {outage} s"
            banner = page.locator("#offline").inner_text()
            assert f"attempt {attempts[-1]}" in banner or f"attempt {attempts[-1] + 1}" in banner, banner
        assert_one_socket(page)

        server = restartable.start()
        expect(page.locator("#connection")).to_have_attribute("data-state", "open")
        expect(page.locator("#offline")).to_be_hidden()
        publish_cycle(server, cycle)
        wait_until_views_equal_the_sow(page, server)
        assert page.url == address
        opens = page.evaluate(
            "(since) => __states.filter((s) => s.at >= since && s.state === 'open').length", killed_at
        )
        assert opens == 1, f"{opens} connections were opened after one restart"

    assert_one_socket(page)
    wait_for_server_side(server)
    page.wait_for_timeout(1000)  # rows that left the views have faded out
    page.screenshot(path=str(SCREENSHOTS / "dashboard-reconnected.png"))
    errors = [e for e in page.errors if not any(s in e for s in CONNECTIONS_ERRORS)]  # type: ignore[attr-defined]
    assert errors == []
