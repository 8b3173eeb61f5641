"""The JavaScript client's viewports (client.viewport(), client.aggregate(): web/viewport.js) in real
Chromium against a real server: the first screen, moves over 20,000 records, sorting and filtering
in place, live changes moving rows, moves that supersede others, deadlines, a dropped socket, and
each time the rows equal to the window the server itself answers for the same range."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import Page

from ..integration.server_process import ServerProcess
from .client_page import frozen, open_client_page
from .feed import request
from .viewport_data import (
    NO_COUNT,
    ORDER,
    publish_many,
    record,
    window,
)


def rows_of(page: Page, name: str = "vp") -> list[Any]:
    return page.evaluate(f"() => {name}.rows")  # type: ignore[no-any-return]


def wait_for_window(page: Page, server: ServerProcess, first: int, last: int, **query: str) -> list[Any]:
    """Wait until the page's viewport holds the server's window (rows, keys unique, not stale)."""
    deadline = time.monotonic() + 10
    while True:
        expected = window(server, first, last, **query)
        got = page.evaluate(
            "() => ({ rows: vp.rows, stale: vp.stale, held: vp.records.size,"
            " unique: new Set(vp.keys).size === vp.keys.length && vp.keys.length === vp.rows.length })"
        )
        if got["rows"] == expected and got["unique"] and not got["stale"] and got["held"] == len(expected):
            return expected
        if time.monotonic() > deadline:
            assert got["rows"] == expected
            assert got["unique"] and not got["stale"] and got["held"] == len(expected), got
        time.sleep(0.05)


def open_viewport(page: Page, server: ServerProcess, settings: str, client_options: str = "{}") -> None:
    open_client_page(page, server)
    page.evaluate(
        f"""async () => {{
        window.client = new push.PushClient(`ws://${{location.host}}/ws`, {client_options});
        await client.connect();
        window.vp = client.viewport("orders", {{ {settings} }});
        window.events = [];
        vp.on("rows", (event) => events.push({{ first: event.first, last: event.last, n: event.rows.length,
                                                keys: event.keys.length, count: event.count }}));
        await vp.ready;
    }}"""
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


def test_a_refused_move_leaves_the_window_and_later_moves_work(page: Page, server: ServerProcess) -> None:
    publish_many(server, [record(n) for n in range(1, 101)])
    open_viewport(page, server, f"orderby: '{ORDER}', rows: [0, 9], filter: '/qty > 100', {NO_COUNT}")
    result = page.evaluate(
        """async () => {
        const errors = [];
        vp.on("error", ({ code }) => errors.push(code));
        const refused = await settle(vp.filterBy("/qty >"));
        const range = await vp.moveTo(0, 99).then(() => "ok", (error) => error.name);
        const moved = await vp.moveTo(5, 9);
        return { refused, range, errors, filter: vp.filter, moved, open: !vp.closed };
    }"""
    )
    assert result["refused"]["code"] == "bad_filter" and result["refused"]["isPushError"]
    assert result["range"] == "ok"
    assert result["errors"] == ["bad_filter"]
    assert result["filter"] == "/qty > 100", "the filter the server kept"
    assert result["moved"]["first"] == 5 and result["open"]
    assert rows_of(page) == window(server, 5, 9, filter_text="/qty > 100")
    bad = page.evaluate(
        """async () => ({
        made: (() => {
          try { client.viewport("orders", { rows: [5, 2] }); return "made"; } catch (e) { return e.name; }
        })(),
        tooMany: await vp.moveTo(0, 10000).then(() => "ok", (error) => error.name),
        fraction: await vp.moveTo(0.5, 3).then(() => "ok", (error) => error.name),
    })"""
    )
    assert bad == {"made": "RangeError", "tooMany": "RangeError", "fraction": "RangeError"}
    assert page.errors == []  # type: ignore[attr-defined]


def test_timeout_abort_and_close_settle_the_viewport_and_its_moves(page: Page, server: ServerProcess) -> None:
    publish_many(server, [record(n) for n in range(1, 101)])
    open_viewport(page, server, f"orderby: '{ORDER}', rows: [0, 9], {NO_COUNT}", "{ heartbeatMs: 0 }")
    page.evaluate(
        """async () => {
        window.controller = new AbortController();
        window.aborted = client.viewport("orders", { rows: [0, 9], signal: controller.signal, count: false });
        await aborted.ready;
    }"""
    )
    with frozen(server):
        result = page.evaluate(
            """async () => {
            const timed = client.viewport("orders", { rows: [0, 9], timeoutMs: 300, count: false });
            const timedErrors = [];
            timed.on("error", ({ code }) => timedErrors.push(code));
            const pendingMove = settle(aborted.moveTo(50, 59));
            const closedMove = settle(vp.moveTo(20, 29));
            setTimeout(() => controller.abort(new Error("gone")), 100);
            const outcome = { timed: await settle(timed.ready), timedErrors, timedClosed: timed.closed,
                              pendingMove: await pendingMove, abortedClosed: aborted.closed };
            vp.close();
            outcome.closedMove = await closedMove;
            outcome.afterClose = await settle(vp.moveTo(0, 1));
            return outcome;
        }"""
        )
    assert result["timed"]["code"] == "timeout" and result["timedClosed"]
    assert result["timedErrors"] == ["timeout"]
    assert result["pendingMove"]["code"] == "aborted" and result["abortedClosed"]
    assert result["closedMove"]["code"] == "closed"
    assert result["afterClose"]["code"] == "closed"
    assert page.errors == []  # type: ignore[attr-defined]


def test_after_a_dropped_socket_the_viewport_is_the_servers_window(page: Page, server: ServerProcess) -> None:
    publish_many(server, [record(n) for n in range(1, 201)])
    options = "{ heartbeatMs: 0, backoff: { initialMs: 1500, jitter: 0 } }"
    open_viewport(page, server, f"orderby: '{ORDER}', rows: [10, 29]", options)
    page.evaluate(
        """() => {
        window.stales = [];
        vp.on("stale", ({ stale }) => stales.push(stale));
        window.oofs = [];
        vp.on("change", ({ kind, reason }) => { if (kind === "oof") oofs.push(reason); });
        client.connection.transport.close(4000, "dropped by the test");
    }"""
    )
    page.wait_for_function("() => vp.stale && client.state === 'waiting'")
    held = window(server, 0, 40)
    request(
        server.url,
        [
            {"c": "publish", "t": "orders", "data": {**held[35], "qty": 5000}},  # enters: everything shifts
            {"c": "sow_delete", "t": "orders", "data": {"order": held[15]["order"]}},
            {"c": "publish", "t": "orders", "data": {**held[20], "qty": held[20]["qty"], "desk": "Q"}},
        ],
    )
    # A move asked while disconnected is where the viewport comes back.
    page.evaluate("() => { window.late = vp.moveTo(12, 31); }")
    page.wait_for_function("() => client.state === 'open' && !vp.stale", timeout=10000)
    assert page.evaluate("async () => (await late).first") == 12
    wait_for_window(page, server, 12, 31)
    assert page.evaluate("() => stales") == [True, False]
    assert page.evaluate("() => vp.count") == 199, "a record was deleted while away"
    assert "stale" in page.evaluate("() => oofs"), "rows the new window lacks leave"
    # Live again: a change moves rows as before.
    request(server.url, [{"c": "publish", "t": "orders", "data": {**held[38], "qty": 4000}}])
    wait_for_window(page, server, 12, 31)
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


def test_aggregate_rows_are_groups_kept_live(page: Page, server: ServerProcess) -> None:
    publish_many(server, [record(n) for n in range(1, 301)])
    open_client_page(page, server)
    desks = {
        "grouping": ["/desk"],
        "projection": ["/desk", "SUM(/qty) AS /qty", "COUNT(/order) AS /orders"],
        "orderby": "/desk",
    }
    result = page.evaluate(
        """async (settings) => {
        window.client = new push.PushClient(`ws://${location.host}/ws`);
        await client.connect();
        window.groups = client.aggregate("orders", settings);
        await groups.ready;
        const refused = (() => {
          try { client.aggregate("orders", { orderby: "/qty" }); return "made"; }
          catch (e) { return e.name; }
        })();
        const { rows, keys, first, last, count } = groups;
        return { rows, keys: keys.length, first, last, refused, count };
    }""",
        desks,
    )
    records = [record(n) for n in range(1, 301)]
    expected = [
        {"desk": d, "qty": sum(r["qty"] for r in records if r["desk"] == d), "orders": 100} for d in "ABC"
    ]
    assert result == {
        "rows": expected,
        "keys": 3,
        "first": 0,
        "last": 9999,
        "refused": "TypeError",
        "count": 3,
    }
    # A new group arrives in its place in the order; a record moving between groups changes both.
    request(server.url, [{"c": "publish", "t": "orders", "data": {"order": 5000, "qty": 7, "desk": "AA"}}])
    page.wait_for_function("() => groups.rows.length === 4 && groups.count === 4")
    assert page.evaluate("() => groups.rows.map((row) => row.desk)") == ["A", "AA", "B", "C"]
    request(server.url, [{"c": "publish", "t": "orders", "data": {**records[0], "desk": "C"}}])  # from B
    page.wait_for_function("() => groups.rows[2].orders === 99")
    assert page.evaluate("() => [groups.rows[2].orders, groups.rows[3].orders]") == [99, 101]
    # Sorted by a projected field, and moved: a window over groups.
    page.evaluate("() => groups.sortBy('/qty DESC, /desk')")
    totals = page.evaluate("() => groups.rows.map((row) => row.qty)")
    assert totals == sorted(totals, reverse=True) and totals[-1] == 7
    page.evaluate("() => groups.moveTo(1, 2)")
    assert page.evaluate("() => groups.rows.map((row) => row.qty)") == totals[1:3]
    # The group's last record leaves: the group leaves with it.
    request(server.url, [{"c": "sow_delete", "t": "orders", "filter": "/order = 5000"}])
    page.evaluate("() => groups.moveTo(0, 9)")
    page.wait_for_function("() => groups.rows.length === 3 && groups.count === 3")
    assert page.errors == []  # type: ignore[attr-defined]


def test_aggregate_count_is_the_number_of_groups(page: Page, server: ServerProcess) -> None:
    publish_many(server, [record(n) for n in range(1, 301)])
    open_client_page(page, server)
    page.evaluate(
        """async () => {
        window.client = new push.PushClient(`ws://${location.host}/ws`);
        await client.connect();
        window.groups = client.aggregate("orders", { grouping: ["/desk"], orderby: "/desk", rows: [0, 1] });
        await groups.ready;
    }"""
    )
    assert page.evaluate("() => [groups.count, groups.rows.length, groups.rows[0]]") == [
        3,
        2,
        {"desk": "A", "count": 100},
    ]
    request(server.url, [{"c": "publish", "t": "orders", "data": {"order": 5000, "qty": 7, "desk": "D"}}])
    page.wait_for_function("() => groups.count === 4")
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
