"""A view read with `for await`, in real Chromium against a real server: the same changes as the
"change" event, the net change per record for a reader slower than the stream, the end of the
loop when the view closes, and the view's error thrown when it is refused."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page

from ..integration.server_process import ServerProcess
from .client_page import open_client_page


def test_for_await_reads_the_changes_and_ends_when_the_view_closes(page: Page, server: ServerProcess) -> None:
    open_client_page(page, server)
    result: dict[str, Any] = page.evaluate(
        """async () => {
        const client = new push.PushClient(`ws://${location.host}/ws`);
        await client.connect();
        await client.publish("orders", { order: 1, qty: 50 });
        const view = client.sowAndDeltaSubscribe("orders", { filter: "/qty > 10", options: "oof" });
        const events = [];
        view.on("change", ({ kind, record }) => events.push([kind, record.order, record.qty]));
        const read = [];
        const loop = (async () => {
          for await (const { kind, record } of view) read.push([kind, record.order, record.qty]);
          return "ended";
        })();
        const other = (async () => { let n = 0; for await (const change of view) n += 1; return n; })();
        await view.ready;
        await client.publish("orders", { order: 2, qty: 20 });
        await client.deltaPublish("orders", { order: 1, qty: 60 });
        await client.publish("orders", { order: 2, qty: 5 });
        await waitFor(() => read.length >= 4);
        const closing = view.close();
        const ended = await loop;
        await closing;
        return { read, events, ended, other: await other };
    }"""
    )
    expected = [["snapshot", 1, 50], ["insert", 2, 20], ["update", 1, 60], ["oof", 2, 5]]
    assert result["read"] == expected and result["events"] == expected
    assert result["ended"] == "ended" and result["other"] == 4
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_slow_reader_gets_the_net_change_of_each_record(page: Page, server: ServerProcess) -> None:
    open_client_page(page, server)
    result: dict[str, Any] = page.evaluate(
        """async () => {
        const client = new push.PushClient(`ws://${location.host}/ws`);
        await client.connect();
        await client.publish("orders", { order: 1, qty: 1 });
        await client.publish("orders", { order: 2, qty: 1 });
        const view = client.sowAndSubscribe("orders", { options: "oof" });
        await view.ready;
        // Made after the snapshot: it starts from the records the view holds.
        const reader = view[Symbol.asyncIterator]();
        const first = [(await reader.next()).value, (await reader.next()).value]
          .map(({ kind, record }) => [kind, record.order]);
        // The reader holds 1 and 2 now; it takes nothing while all this happens.
        for (let qty = 2; qty <= 5; qty++) await client.publish("orders", { order: 1, qty });
        await client.sowDelete("orders", { data: { order: 2 } });
        for (let qty = 1; qty <= 3; qty++) await client.publish("orders", { order: 3, qty });
        await client.publish("orders", { order: 4, qty: 1 });
        await client.sowDelete("orders", { keys: [[...view.records].find(([, r]) => r.order === 4)[0]] });
        await waitFor(() => view.records.size === 2 && [...view.records.values()].some((r) => r.qty === 3));
        await view.close();
        const rest = [];
        for await (const { kind, record, reason } of reader) {
          rest.push([kind, record.order, record.qty, reason ?? null]);
        }
        return { first, rest, updates: view.stats.updates };
    }"""
    )
    assert result["first"] == [["snapshot", 1], ["snapshot", 2]]
    # 1: four updates, one waiting; 2: its oof; 3: an insert and two updates, one insert;
    # 4: in and out before the reader looked, nothing.
    assert result["rest"] == [["update", 1, 5, None], ["oof", 2, 1, "deleted"], ["insert", 3, 3, None]]
    assert result["updates"] == 10
    assert page.errors == []  # type: ignore[attr-defined]


def test_for_await_throws_the_refusal_and_close_ends_the_loops(page: Page, server: ServerProcess) -> None:
    open_client_page(page, server)
    result: dict[str, Any] = page.evaluate(
        """async () => {
        const client = new push.PushClient(`ws://${location.host}/ws`);
        await client.connect();
        const read = async (view) => {
          try { for await (const change of view) {} return "ended"; }
          catch (error) { return [error.name, error.code, error.reason.slice(0, 10)]; }
        };
        const refused = client.subscribe("orders", { filter: "/qty >" });
        const during = await read(refused);
        const afterwards = await read(refused); // a loop begun on a refused view throws too
        const open = client.sowAndSubscribe("orders");
        await open.ready;
        const loop = read(open);
        client.close();
        return { during, afterwards, closed: await loop, ready: await settle(open.ready) };
    }"""
    )
    assert result["during"] == result["afterwards"] == ["CommandRefused", "bad_filter", "bad filter"]
    assert result["closed"] == "ended"
    assert result["ready"] == {"ok": True}
    assert page.errors == []  # type: ignore[attr-defined]
