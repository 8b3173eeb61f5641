"""The JavaScript client's viewports (client.viewport(), client.aggregate(): web/viewport.js) in real
Chromium against a real server, when things go wrong and over groups: a refused move, deadlines and
aborts, a dropped socket, and aggregated views kept live. Moves, sorting and filtering are in
test_viewport_client.py."""

from __future__ import annotations

from playwright.sync_api import Page

from ..integration.server_process import ServerProcess
from .client_page import frozen, open_client_page
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
    page.wait_for_function("() => client.state === 'open' && !vp.stale")
    assert page.evaluate("async () => (await late).first") == 12
    wait_for_window(page, server, 12, 31)
    assert page.evaluate("() => stales") == [True, False]
    assert page.evaluate("() => vp.count") == 199, "a record was deleted while away"
    assert "stale" in page.evaluate("() => oofs"), "rows the new window lacks leave"
    # Live again: a change moves rows as before.
    request(server.url, [{"c": "publish", "t": "orders", "data": {**held[38], "qty": 4000}}])
    wait_for_window(page, server, 12, 31)
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
