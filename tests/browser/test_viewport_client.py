"""The JavaScript client's viewports (client.viewport(): web/viewport.js) in real Chromium against a
real server: the first screen, moves over 20,000 records, sorting and filtering in place, live
changes moving rows, moves that supersede others, the count, the rows a move sends, and each time
the rows equal to the window the server itself answers for the same range. A refused move,
deadlines, a dropped socket and client.aggregate() are in test_viewport_recovery.py."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import Page

from ..integration.server_process import ServerProcess
from .client_page import open_client_page
from .feed import request
from .viewport_data import (
    NO_COUNT,
    ORDER,
    open_viewport,
    publish_many,
    record,
    rows_of,
    wait_for_window,
    window,
)


def test_first_screen_then_moves_sorts_and_filters_20000_records(page: Page, server: ServerProcess) -> None:
    publish_many(server, [record(n) for n in range(1, 20001)])
    open_viewport(page, server, f"orderby: '{ORDER}', rows: [0, 49]")
    first = page.evaluate("() => ({ rows: vp.rows, keys: vp.keys, first: vp.first, last: vp.last, events })")
    assert first["rows"] == window(server, 0, 49)
    assert len(set(first["keys"])) == 50
    assert (first["first"], first["last"]) == (0, 49)
    assert first["events"] == [{"first": 0, "last": 49, "n": 50, "keys": 50, "count": 20000}]

    moved = page.evaluate(
        "async () => { events.length = 0; return { result: await vp.moveTo(10000, 10049), events }; }"
    )
    assert moved["result"] == {"superseded": False, "first": 10000, "last": 10049, "count": 20000}
    one_event = [{"first": 10000, "last": 10049, "n": 50, "keys": 50, "count": 20000}]
    assert moved["events"] == one_event, "one event per move"
    assert rows_of(page) == window(server, 10000, 10049)
    assert page.evaluate("() => vp.records.size") == 50, "the records that left the window are let go"

    # The end of the view inside the window: fewer rows than the range.
    page.evaluate("() => vp.moveTo(19990, 20009)")
    assert rows_of(page) == window(server, 19990, 19999)
    assert page.evaluate("() => [vp.first, vp.last, vp.rows.length]") == [19990, 20009, 10]

    page.evaluate("() => vp.moveTo(100, 119)")
    result = page.evaluate("async () => (await vp.sortBy('/order')).first")
    assert result == 100
    assert rows_of(page) == [record(n) for n in range(101, 121)]
    assert page.evaluate("() => vp.orderby") == "/order"

    page.evaluate("() => vp.filterBy(\"/desk = 'B'\")")
    assert rows_of(page) == window(server, 100, 119, orderby="/order", filter_text="/desk = 'B'")
    assert page.evaluate("() => [vp.filter, vp.count]") == ["/desk = 'B'", 6667]
    page.evaluate("() => Promise.all([vp.filterBy(''), vp.sortBy(undefined), vp.moveTo(0, 4)])")
    assert page.evaluate("() => [vp.filter, vp.orderby, vp.rows.length]") == [None, None, 5]
    assert page.errors == []  # type: ignore[attr-defined]


def test_live_changes_move_rows_as_the_servers_window_does(page: Page, server: ServerProcess) -> None:
    publish_many(server, [record(n) for n in range(1, 101)])
    open_viewport(page, server, f"orderby: '{ORDER}', rows: [5, 14], {NO_COUNT}")
    wait_for_window(page, server, 5, 14)
    held = window(server, 0, 20)
    inside, above, below = held[8], held[2], held[17]
    steps: list[list[dict[str, Any]]] = [
        [{"c": "publish", "t": "orders", "data": {**below, "qty": 2000}}],  # from below to the top: all shift
        [{"c": "publish", "t": "orders", "data": {**inside, "qty": -1}}],  # leaves at the bottom
        # a new row inside
        [{"c": "publish", "t": "orders", "data": {**held[12], "qty": held[6]["qty"], "order": 0}}],
        [{"c": "sow_delete", "t": "orders", "data": {"order": held[10]["order"]}}],  # deleted inside
        # from above into the window
        [{"c": "publish", "t": "orders", "data": {**above, "qty": held[9]["qty"] - 1}}],
        [{"c": "publish", "t": "orders", "data": {**held[7], "desk": "Z"}}],  # changed in place
    ]
    for step in steps:
        request(server.url, step)
        wait_for_window(page, server, 5, 14)

    # A transaction that moves several rows arrives in one frame: one "rows" event.
    page.evaluate("() => { events.length = 0; }")
    current = window(server, 5, 14)
    tx = [{"c": "publish", "t": "orders", "data": {**current[i], "qty": 1500 + i}} for i in (1, 4, 7)]
    request(server.url, [{"c": "tx", "cmds": tx}])
    wait_for_window(page, server, 5, 14)
    time.sleep(0.2)
    assert len(page.evaluate("() => events")) == 1
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_newer_move_supersedes_one_still_waiting(page: Page, server: ServerProcess) -> None:
    publish_many(server, [record(n) for n in range(1, 1001)])
    open_viewport(page, server, f"orderby: '{ORDER}', rows: [0, 9]")
    result = page.evaluate(
        """async () => {
        const replaces = [];
        const send = client.connection.send.bind(client.connection);
        client.connection.send = (message) => {
          if (message.o && message.o.split(",").includes("replace")) replaces.push(message);
          return send(message);
        };
        const order = [];
        const track = (name, promise) => promise.then((result) => { order.push(name); return result; });
        const a = track("a", vp.moveTo(100, 109));  // sent at once
        const b = track("b", vp.moveTo(200, 209));  // waits for a's answer...
        const c = track("c", vp.moveTo(300, 309));  // ...and is superseded by this one
        const d = track("d", vp.sortBy("/order"));  // goes with c: another part of the subscription
        const results = { a: await a, b: await b, c: await c, d: await d };
        // Asking for the window it holds sends nothing.
        results.same = await vp.moveTo(300, 309);
        return { results, order, replaces: replaces.map((m) => [m.skip_n, m.top_n, m.orderby]) };
    }"""
    )
    assert result["order"][0] == "b", "a superseded move resolves at once"
    assert result["results"]["b"]["superseded"] is True
    assert result["results"]["a"] == {"superseded": False, "first": 100, "last": 109, "count": 1000}
    assert result["results"]["c"] == {"superseded": False, "first": 300, "last": 309, "count": 1000}
    assert result["results"]["d"]["superseded"] is False
    assert result["results"]["same"] == {"superseded": False, "first": 300, "last": 309, "count": 1000}
    assert result["replaces"] == [[100, 10, ORDER], [300, 10, "/order"]], "one request in flight at a time"
    assert rows_of(page) == [record(n) for n in range(301, 311)]
    assert page.errors == []  # type: ignore[attr-defined]


def test_count_follows_the_view(page: Page, server: ServerProcess) -> None:
    publish_many(server, [record(n) for n in range(1, 301)])
    open_viewport(page, server, f"orderby: '{ORDER}', rows: [0, 9], filter: \"/desk = 'A'\"")
    assert page.evaluate("() => [vp.count, events.at(-1).count]") == [100, 100]
    page.evaluate("() => { window.counts = []; vp.on('count', ({ count }) => counts.push(count)); }")
    added = [{"order": 1000 + n, "qty": n, "desk": "A"} for n in range(3)]
    request(server.url, [{"c": "publish", "t": "orders", "data": data} for data in added])
    page.wait_for_function("() => vp.count === 103")
    request(server.url, [{"c": "sow_delete", "t": "orders", "filter": "/order > 1000"}])
    page.wait_for_function("() => vp.count === 101")
    assert page.evaluate("() => [events.at(-1).count, counts.at(-1)]") == [101, 101]
    moved = page.evaluate("() => vp.moveTo(50, 59)")
    assert moved["count"] == 101
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_move_sends_only_the_rows_that_enter(page: Page, server: ServerProcess) -> None:
    publish_many(server, [record(n) for n in range(1, 1001)])
    open_viewport(page, server, f"orderby: '{ORDER}', rows: [0, 49]")
    result = page.evaluate(
        """async () => {
        const sent = { full: 0, keys: 0 };
        client.connection.on("frame", ({ messages }) => {
          for (const m of messages) if (m.c === "sow") sent[("data" in m) ? "full" : "keys"] += 1;
        });
        const before = new Map(vp.keys.map((key, i) => [key, vp.rows[i]]));
        await vp.moveTo(10, 59);
        const reused = vp.keys.filter((key, i) => before.get(key) === vp.rows[i]).length;
        return { sent, reused };
    }"""
    )
    assert result["sent"] == {"full": 10, "keys": 40}
    assert result["reused"] == 40, "a keys-only row is the record the viewport held"
    assert rows_of(page) == window(server, 10, 59)
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_oofs_a_move_sends_are_not_counted_as_latency(page: Page, server: ServerProcess) -> None:
    publish_many(server, [record(n) for n in range(1, 101)])
    time.sleep(1.5)  # the records' last changes are old by the time the window moves
    open_viewport(page, server, f"orderby: '{ORDER}', rows: [0, 49], options: 'oof,timestamp'")
    result = page.evaluate(
        """async () => {
        let oofs = 0;
        client.connection.on("frame", ({ messages }) => {
          oofs += messages.filter((m) => m.c === "oof").length;
        });
        await vp.filterBy("/desk = 'A'");
        return { oofs, latency: vp.latency.percentiles() };
    }"""
    )
    assert result["oofs"] > 0, "the move sent OOFs for the rows that left"
    assert result["latency"]["p50"] is None, "none of them is a latency: no change happened"
    # A live change that takes a record out is one.
    request(server.url, [{"c": "publish", "t": "orders", "data": {**record(3), "desk": "B"}, "cid": "p"}])
    page.wait_for_function("() => vp.latency.percentiles().p50 !== null")
    assert page.evaluate("() => vp.latency.percentiles().p99") < 1000
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_row_a_change_elsewhere_pulls_into_the_window_is_not_counted_as_latency(
    page: Page, server: ServerProcess
) -> None:
    publish_many(server, [record(n) for n in range(1, 101)])
    open_viewport(page, server, f"orderby: '{ORDER}', rows: [0, 49], options: 'timestamp'")
    top, below = page.evaluate("() => vp.rows[0]"), window(server, 50, 50)[0]
    page.evaluate(
        """() => {
        window.seen = [];
        client.connection.on("frame", ({ messages }) => seen.push(...messages));
    }"""
    )
    # A live change takes the window's first row to the end of the order: it leaves, and the row
    # below the window is pulled in, sent as it is, with the ts of its own last change.
    request(server.url, [{"c": "publish", "t": "orders", "data": {**top, "qty": -1}, "cid": "p"}])
    page.wait_for_function(
        "([gone, pulled]) => !vp.rows.some((r) => r.order === gone)"
        " && vp.rows.some((r) => r.order === pulled)",
        arg=[top["order"], below["order"]],
    )
    result = page.evaluate("() => ({ seen, latency: vp.latency.percentiles() })")
    pulled = [m for m in result["seen"] if m["c"] == "p" and m.get("data", {}).get("order") == below["order"]]
    assert len(pulled) == 1 and pulled[0]["pos"] == 50, result["seen"]
    live = [m for m in result["seen"] if m.get("data", {}).get("order") == top["order"]]
    assert len(live) == 1 and pulled[0]["ts"] < live[0]["ts"], result["seen"]
    assert result["latency"]["count"] == 1, "only the change itself is a latency"
    assert page.errors == []  # type: ignore[attr-defined]


# The page hidden or shown, as the browser says it when its tab is left or come back to.
SHOW = """(state) => {
  Object.defineProperty(document, "visibilityState", { configurable: true, get: () => state });
  document.dispatchEvent(new Event("visibilitychange"));
}"""


def test_a_change_made_while_the_page_is_hidden_is_no_latency(page: Page, server: ServerProcess) -> None:
    publish_many(server, [record(n) for n in range(1, 11)])
    open_viewport(page, server, f"orderby: '{ORDER}', rows: [0, 49], options: 'timestamp'")
    qty = "(order) => vp.rows.find((r) => r.order === order)?.qty"
    page.evaluate(SHOW, "hidden")
    # Held by the server (Hidden views) and sent when the page is shown again: late on purpose.
    request(server.url, [{"c": "publish", "t": "orders", "data": {**record(1), "qty": 5000}, "cid": "p"}])
    page.evaluate(SHOW, "visible")
    page.wait_for_function(f"() => ({qty})(1) === 5000")
    assert page.evaluate("() => vp.latency.percentiles().count") == 0
    request(server.url, [{"c": "publish", "t": "orders", "data": {**record(2), "qty": 5001}, "cid": "p"}])
    page.wait_for_function(f"() => ({qty})(2) === 5001")
    assert page.evaluate("() => vp.latency.percentiles().count") == 1, "a change made while it is seen is one"
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_readme_viewport_example_works(page: Page, server: ServerProcess) -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme.split("### Viewports and aggregates", 1)[1]
    match = re.search(r"```js\n(const viewport = client\.viewport.*?)```", section, re.DOTALL)
    assert match, "the README's Viewports and aggregates section has no viewport example"
    records = [{**record(n), "px": n} for n in range(1, 2001)]
    publish_many(server, records)
    open_client_page(page, server)
    result = page.evaluate(
        """async (example) => {
        window.client = new push.PushClient(`ws://${location.host}/ws`);
        await client.connect();
        const drawn = [];
        const draw = (first, rows, count) => drawn.push([first, rows.length, count]);
        const run = new Function("client", "draw", `return (async () => { ${example}; return viewport; })()`);
        window.vp = await run(client, draw);
        return { drawn, closed: vp.closed };
    }""",
        match.group(1).replace("await viewport.close();", ""),
    )
    assert result["drawn"][0] == [0, 50, sum(r["qty"] > 10 for r in records)]
    assert result["closed"] is False
    assert rows_of(page) == window(server, 1000, 1049, orderby="/px DESC", filter_text="/qty > 100")
    assert page.errors == []  # type: ignore[attr-defined]


def test_moves_asked_before_the_first_window_go_with_the_subscribe(page: Page, server: ServerProcess) -> None:
    publish_many(server, [record(n) for n in range(1, 201)])
    open_client_page(page, server)
    result = page.evaluate(
        f"""async () => {{
        window.client = new push.PushClient(`ws://${{location.host}}/ws`);
        const subscribes = [];
        const send = client.connection.send.bind(client.connection);
        client.connection.send = (message) => {{
          if (message.c === "sow_and_subscribe") subscribes.push([message.skip_n, message.top_n, message.o]);
          return send(message);
        }};
        window.vp = client.viewport("orders", {{ orderby: "{ORDER}", options: "oof,timestamp" }});
        const moved = vp.moveTo(40, 59);   // before connect(): the subscribe states it
        await client.connect();
        await vp.ready;
        return {{ moved: await moved, subscribes, first: vp.first }};
    }}"""
    )
    assert result["subscribes"] == [[40, 20, "positions,count,oof,timestamp"]], (
        "one subscribe, options not doubled"
    )
    assert result["moved"] == {"superseded": False, "first": 40, "last": 59, "count": 200}
    assert rows_of(page) == window(server, 40, 59)
    assert page.errors == []  # type: ignore[attr-defined]
