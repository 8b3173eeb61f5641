"""docs/protocol.md, Resuming a view in real Chromium: a view resumes after a dropped socket with
only the net change, a hidden page is held to one message per record per interval, and a transaction
is applied to the views in one step and drawn by the dashboard in one frame."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from ..integration.server_process import ServerProcess
from .feed import publish
from .test_client import open_client_page


def test_a_view_resumes_after_a_dropped_socket_with_only_the_net_change(
    page: Page, server: ServerProcess
) -> None:
    open_client_page(page, server)
    result: dict[str, Any] = page.evaluate(
        """async () => {
        const client = new push.PushClient(`ws://${location.host}/ws`, { clientName: "desk-r" });
        await client.connect();
        for (let n = 0; n < 300; n++) client.publish("orders", { order: n, qty: n });
        await client.publish("orders", { order: 300, qty: 300 });
        const view = client.sowAndSubscribe("orders", { filter: "/qty < 100", options: "oof" });
        await view.ready;
        const staleSeen = [];
        view.on("stale", ({ stale }) => staleSeen.push(stale));
        let sowBytes = 0;
        client.connection.on("frame", ({ messages, bytes }) => {
          if (messages.some((m) => m.c === "sow" || m.c === "group_end")) sowBytes += bytes;
        });
        const feed = new push.PushClient(`ws://${location.host}/ws`);
        await feed.connect();
        client.connection.transport.socket.close(4000, "dropped");  // as a network blip would
        await waitFor(() => view.stale);
        const rowsWhileStale = view.records.size;
        await feed.publish("orders", { order: 5, qty: 6 });
        await feed.publish("orders", { order: 6, qty: 600 });
        await feed.publish("orders", { order: 400, qty: 1 });
        await waitFor(() => !view.stale);
        const records = [...view.records.values()].sort((a, b) => a.order - b.order);
        return { staleSeen, rowsWhileStale, resumed: view.resumed, records, sowBytes };
    }"""
    )
    assert result["staleSeen"] == [True, False]
    assert result["rowsWhileStale"] == 100, "the rows stay on screen while the view is stale"
    assert result["resumed"] is True
    expected = sorted([n for n in range(100) if n != 6] + [400])
    assert [r["order"] for r in result["records"]] == expected
    assert next(r for r in result["records"] if r["order"] == 5)["qty"] == 6
    assert result["sowBytes"] < 2000, "a resume sends the net change, not the 100 records"


def test_what_a_resume_brings_is_no_latency(page: Page, server: ServerProcess) -> None:
    open_client_page(page, server)
    result: dict[str, Any] = page.evaluate(
        """async () => {
        const client = new push.PushClient(`ws://${location.host}/ws`, { clientName: "desk-l" });
        await client.connect();
        for (let n = 0; n < 10; n++) await client.publish("orders", { order: n, qty: n });
        const view = client.sowAndSubscribe("orders", { filter: "/qty < 100", options: "oof,timestamp" });
        await view.ready;
        const feed = new push.PushClient(`ws://${location.host}/ws`);
        await feed.connect();
        const backlog = [];
        client.connection.transport.socket.close(4000, "dropped");  // as a network blip would
        await waitFor(() => view.stale);
        await feed.publish("orders", { order: 5, qty: 6 });
        await feed.publish("orders", { order: 6, qty: 600 });  // leaves the view while it is away
        client.connection.on("frame", ({ messages }) => backlog.push(...messages.map((m) => m.c)));
        await waitFor(() => !view.stale);
        const away = view.latency.percentiles().count;
        await feed.publish("orders", { order: 7, qty: 8 });
        await waitFor(() => [...view.records.values()].some((r) => r.order === 7 && r.qty === 8));
        return { resumed: view.resumed, backlog, away, live: view.latency.percentiles().count };
    }"""
    )
    assert result["resumed"] is True and "oof" in result["backlog"], result
    assert result["away"] == 0, "the changes made while the socket was away are a backlog, not a latency"
    assert result["live"] == 1
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_hidden_page_gets_one_message_per_record_per_interval(page: Page, server: ServerProcess) -> None:
    open_client_page(page, server)
    page.evaluate(
        """async () => {
        window.client = new push.PushClient(`ws://${location.host}/ws`);
        await client.connect();
        window.view = client.sowAndSubscribe("orders", {});
        await view.ready;
        window.updates = 0;
        view.on("change", () => { updates += 1; });
        window.feed = new push.PushClient(`ws://${location.host}/ws`);
        await feed.connect();
    }"""
    )
    # Playwright has no switch for it: the page's visibility is what the browser reports, so the
    # test reports it as a hidden tab would, and fires the event the client listens to.
    page.evaluate(
        """() => {
        Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "hidden" });
        document.dispatchEvent(new Event("visibilitychange"));
    }"""
    )
    counts: dict[str, Any] = page.evaluate(
        """async () => {
        await new Promise((r) => setTimeout(r, 100));
        for (let n = 0; n < 50; n++) feed.publish("orders", { order: 1, qty: n });
        await feed.publish("orders", { order: 1, qty: 50 });
        await new Promise((r) => setTimeout(r, 300));
        const whileHidden = updates;
        Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "visible" });
        document.dispatchEvent(new Event("visibilitychange"));
        await waitFor(() => view.records.size === 1 && [...view.records.values()][0].qty === 50);
        return { whileHidden, shown: updates };
    }"""
    )
    assert counts["whileHidden"] == 0, "held for the interval"
    assert counts["shown"] == 1, "one message for the record when shown again"


def test_a_transaction_is_applied_to_the_views_in_one_step(page: Page, server: ServerProcess) -> None:
    open_client_page(page, server)
    result: dict[str, Any] = page.evaluate(
        """async () => {
        const client = new push.PushClient(`ws://${location.host}/ws`, { clientName: "desk-t" });
        await client.connect();
        const view = client.sowAndSubscribe("orders", {});
        await view.ready;
        const sums = [];
        let changes = 0;
        // After every change the grid could draw: a rebalance keeps the sum at 100 when whole.
        view.on("change", () => {
          changes += 1;
          sums.push([...view.records.values()].reduce((total, r) => total + r.weight, 0));
        });
        const done = [];
        client.on("transaction", ({ tx, views }) => done.push([tx, views.size]));
        const put = (order, weight) => ({ c: "publish", t: "orders", data: { order, weight } });
        await client.transaction([1, 2, 3, 4].map((n) => put(n, 25)));
        for (let round = 0; round < 20; round++) {
          const weights = [10, 20, 30, 40].map((w) => (w + round * 10) % 100);
          const total = weights.reduce((a, b) => a + b, 0);
          weights[3] += 100 - total;
          await client.transaction(weights.map((weight, i) => put(i + 1, weight)));
        }
        await waitFor(() => done.length === 21);
        return { sums, done, changes };
    }"""
    )
    whole = result["sums"]
    assert result["changes"] == 84 and len(result["done"]) == 21
    # Between transactions (after every fourth change) the grid shows a whole rebalance.
    assert all(total == 100 for total in whole[3::4]), whole
    assert all(views == 1 for _, views in result["done"])


def test_the_dashboard_draws_a_transaction_whole_under_load(page: Page, server: ServerProcess) -> None:
    """Each round, while the page is hidden, one transaction changes a record, 1,000 others
    change, and a second transaction moves weight from that record to a new one. Shown again, the
    page gets it all in one frame. After every animation frame the weights the table shows for the
    transactions' records (the first rows, by order) must still add up to 100."""
    publish(server, {"order": 1, "weight": 100, "tick": 0})
    page.goto(f"{server.http}/?topic=orders&orderby=/order")
    expect(page.locator(".figures .rows")).to_have_text("1")
    result: dict[str, object] = page.evaluate(
        """async () => {
        const { PushClient } = await import("/web/index.js");
        const panel = [...window.dashboard.panels][0];
        const sums = new Set();
        let frames = 0, checking = true;
        const check = () => {
          let sum = 0;
          for (const tr of panel.element.querySelectorAll("regular-table tbody tr")) {
            const order = Number(tr.querySelector("[data-field=order]")?.textContent.replace(/,/g, ""));
            const weight = Number(tr.querySelector("[data-field=weight]")?.textContent.replace(/,/g, ""));
            if (order < 1000) sum += weight;
          }
          sums.add(sum);
          frames += 1;
          if (checking) requestAnimationFrame(check);
        };
        requestAnimationFrame(check);
        const feed = new PushClient(`ws://${location.host}/ws`);
        await feed.connect();
        const put = (data) => ({ c: "publish", t: "orders", data });
        let weight = 100;
        // Hidden, the page is held to one message per record per hidden_interval; shown, it gets
        // everything pending at once (Playwright has no switch: the test reports it as a tab would).
        const setVisibility = (state) => {
          Object.defineProperty(document, "visibilityState", { configurable: true, get: () => state });
          document.dispatchEvent(new Event("visibilitychange"));
        };
        setVisibility("hidden");
        await new Promise((resolve) => setTimeout(resolve, 100));
        const LOAD = 1000;
        for (let round = 1; round <= 4; round++) {
          feed.transaction([put({ order: 1, weight, tick: round })]);
          for (let n = 0; n < LOAD; n++) feed.publish("orders", { order: 1000 + n, weight: round });
          weight -= 5;
          const moved = [put({ order: 1, weight, tick: round }), put({ order: 1 + round, weight: 5 })];
          await feed.transaction(moved);
          await new Promise((resolve) => setTimeout(resolve, 50));
          setVisibility("visible");  // the catch-up comes in one frame
          await new Promise((resolve) => setTimeout(resolve, 300));
          setVisibility("hidden");
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        setVisibility("visible");
        await new Promise((resolve) => setTimeout(resolve, 500));
        checking = false;
        return { sums: [...sums], frames, rows: panel.tree.count };
    }"""
    )
    assert result["rows"] == 1005
    assert result["sums"] == [100], f"a frame showed part of a transaction: sums {result['sums']}"
