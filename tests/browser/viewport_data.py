"""What the viewport tests share: records with a total order, publishing many of them, the window
the server itself answers for a range, the marks of the tests that wait for server work, and a page
with a viewport open on it, its rows, and the wait for them to equal the server's window."""

from __future__ import annotations

from typing import Any

import orjson
from playwright.sync_api import Page
from websockets.sync.client import connect

from ..integration.server_process import ServerProcess
from ..waiting import HANG_S, eventually
from .client_page import open_client_page
from .feed import request

# The viewport asks the server to count the view (the option `count`) unless told not to: some
# tests say `count: false`, so that a viewport without a count is tested too.
NO_COUNT = "count: false"

ORDER = "/qty DESC, /order"  # total: no two rows tie


def record(n: int) -> dict[str, Any]:
    return {"order": n, "qty": n * 7919 % 1000, "desk": "ABC"[n % 3]}


def publish_many(server: ServerProcess, records: list[dict[str, Any]], topic: str = "orders") -> None:
    """Publish in frames of 1,000 over one socket, then wait for a flush."""
    with connect(server.url, open_timeout=HANG_S, max_size=None, ping_interval=None) as ws:
        for start in range(0, len(records), 1000):
            batch = [{"c": "publish", "t": topic, "data": r} for r in records[start : start + 1000]]
            ws.send(orjson.dumps(batch).decode())
        ws.send(orjson.dumps({"c": "flush", "cid": "done"}).decode())
        while True:
            got = orjson.loads(ws.recv(timeout=HANG_S))
            if any(m.get("cid") == "done" for m in (got if isinstance(got, list) else [got])):
                return


def window(
    server: ServerProcess, first: int, last: int, orderby: str = ORDER, filter_text: str = ""
) -> list[Any]:
    """The rows first..last (inclusive) as the server answers a one-off query."""
    command: dict[str, Any] = {"c": "sow", "t": "orders", "query_id": "w", "orderby": orderby}
    command |= {"skip_n": first, "top_n": last - first + 1}
    if filter_text:
        command["filter"] = filter_text
    return [m["data"] for m in request(server.url, [command]) if m.get("c") == "sow"]


def rows_of(page: Page, name: str = "vp") -> list[Any]:
    return page.evaluate(f"() => {name}.rows")  # type: ignore[no-any-return]


def wait_for_window(page: Page, server: ServerProcess, first: int, last: int, **query: str) -> list[Any]:
    """Wait until the page's viewport holds the server's window (rows, keys unique, not stale)."""
    seen: dict[str, Any] = {}

    def held() -> list[Any] | None:
        expected = window(server, first, last, **query)
        got = page.evaluate(
            "() => ({ rows: vp.rows, stale: vp.stale, held: vp.records.size,"
            " unique: new Set(vp.keys).size === vp.keys.length && vp.keys.length === vp.rows.length })"
        )
        seen.update(got=got, expected=expected)
        whole = got["unique"] and not got["stale"] and got["held"] == len(expected)
        return expected if got["rows"] == expected and whole else None

    return eventually(
        held, lambda: f"the viewport holds {seen.get('got')}, the server {seen.get('expected')}"
    )


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
