"""The JavaScript client (web/) in real Chromium against a real server."""

from __future__ import annotations

import signal
import time
from typing import Any

from playwright.sync_api import Page

from ..integration.server_process import ServerProcess, sow_records
from .client_page import open_client_page


def test_snapshot_insert_update_oof_and_delta_publish(page: Page, server: ServerProcess) -> None:
    open_client_page(page, server)
    result = page.evaluate(
        """async () => {
        const client = new push.PushClient(`ws://${location.host}/ws`, { clientName: "desk-1" });
        await client.connect();
        await client.publish("orders", { order: 1, qty: 50, side: "B" });
        await client.publish("orders", { order: 9, qty: 1, side: "S" });
        const view = client.sowAndDeltaSubscribe("orders", { filter: "/qty > 10", options: "oof" });
        const changes = [];
        view.on("change", ({ key, record, kind }) => changes.push([kind, record.order, record.qty]));
        await view.ready;
        await client.publish("orders", { order: 2, qty: 20, side: "S" });
        await client.deltaPublish("orders", { order: 1, qty: 60 });
        await client.publish("orders", { order: 2, qty: 5, side: "S" });
        await waitFor(() => changes.length >= 4);
        const queried = await client.sow("orders", { orderby: "/order" });
        client.close();
        return { changes, records: [...view.records.values()], queried, state: client.state };
    }"""
    )
    assert result["changes"] == [["snapshot", 1, 50], ["insert", 2, 20], ["update", 1, 60], ["oof", 2, 5]]
    assert result["records"] == [{"order": 1, "qty": 60, "side": "B"}]
    assert [r["order"] for r in result["queried"]] == [1, 2, 9]
    assert result["state"] == "closed"
    assert page.errors == []  # type: ignore[attr-defined]


def test_merge_deltas_plain_subscribe_and_refused_view(page: Page, server: ServerProcess) -> None:
    open_client_page(page, server)
    result = page.evaluate(
        """async () => {
        const client = new push.PushClient(`ws://${location.host}/ws`);
        await client.connect();
        await client.publish("orders", { order: 1, qty: 1, px: { bid: 1, ask: 2 } });
        const merged = client.sowAndDeltaSubscribe("orders", { options: "delta=merge" });
        const plain = client.subscribe("orders");
        const bad = client.subscribe("orders", { filter: "/qty >" });
        const refusal = await bad.ready.then(() => "ready", (error) => error.message);
        await Promise.all([merged.ready, plain.ready]);
        await client.deltaPublish("orders", { order: 1, px: { ask: 3 } });
        await waitFor(() => plain.records.size === 1);
        const failed = await client.publish("orders", { qty: 1 }).then(() => "ok", (error) => error.message);
        client.close();
        return { merged: [...merged.records.values()], plain: [...plain.records.values()], refusal,
                 viewError: bad.error, failed, savedBytes: merged.stats.bytesSaved };
    }"""
    )
    assert result["merged"] == [{"order": 1, "qty": 1, "px": {"bid": 1, "ask": 3}}]
    assert result["plain"] == result["merged"]
    assert result["refusal"].startswith("bad filter") and result["viewError"].startswith("bad filter")
    assert result["failed"].startswith("bad message")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_server_restart_in_the_middle(page: Page, server: ServerProcess, tmp_path: Any) -> None:
    open_client_page(page, server)
    page.evaluate(
        """async () => {
        const options = { clientName: "desk-2", heartbeatMs: 500 };
        const client = new push.PushClient(`ws://${location.host}/ws`, options);
        window.client = client;
        window.states = [];
        client.on("state", ({ state }) => states.push(state));
        await client.connect();
        for (let id = 1; id <= 5; id++) await client.publish("ledger", { id, v: 1 });
        window.view = client.sowAndSubscribe("ledger");
        await view.ready;
    }"""
    )
    port = server.port
    server.stop(signal.SIGTERM)
    page.evaluate("() => waitFor(() => client.state === 'waiting')")
    # Published while the server is down: kept and re-sent after the reconnect, once.
    page.evaluate(
        "() => { window.late = Promise.all([client.publish('ledger', {id: 6, v: 1}), "
        "client.publish('ledger', {id: 1, v: 2})]); }"
    )
    # A query asked while the server is down is sent once the client is back.
    page.evaluate("() => { window.asked = client.sow('ledger', { orderby: '/id' }); }")
    time.sleep(0.5)
    restarted = ServerProcess(
        server.process.args[server.process.args.index("--config") + 1], tmp_path / "data", port=port
    )
    server.process = restarted.process  # the fixture stops whichever process runs now
    try:
        page.evaluate("async () => { await late; await waitFor(() => view.records.size === 6); }")
        records = page.evaluate("() => [...view.records.values()].sort((a, b) => a.id - b.id)")
        assert records == [{"id": 1, "v": 2}, *({"id": n, "v": 1} for n in range(2, 7))]
        assert [r["id"] for r in page.evaluate("() => asked")] == [1, 2, 3, 4, 5, 6]
        assert sorted(sow_records(restarted.url, "ledger"), key=lambda r: r["id"]) == records
        states = page.evaluate("() => states")
        assert states[-1] == "open" and "waiting" in states
        assert page.errors == []  # type: ignore[attr-defined]
    finally:
        restarted.stop()


def test_sow_delete_and_flush(page: Page, server: ServerProcess) -> None:
    open_client_page(page, server)
    result = page.evaluate(
        """async () => {
        const client = new push.PushClient(`ws://${location.host}/ws`, { clientName: "cleaner" });
        await client.connect();
        for (let order = 1; order <= 5; order++) client.publish("orders", { order, qty: order });
        const flushed = await client.flush();
        const counted = (await client.sow("orders")).length;
        const byFilter = await client.sowDelete("orders", { filter: "/qty >= 4" });
        const byData = await client.sowDelete("orders", { data: { order: 1 } });
        const left = await client.sow("orders", { orderby: "/order" });
        client.close();
        return { flushed: flushed.status, counted, byFilter: byFilter.records_deleted,
                 byData: byData.records_deleted, left: left.map((r) => r.order) };
    }"""
    )
    assert result == {"flushed": "success", "counted": 5, "byFilter": 2, "byData": 1, "left": [2, 3]}
