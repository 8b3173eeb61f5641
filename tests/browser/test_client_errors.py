"""The JavaScript client's errors, in real Chromium against a real server: every rejection is a
PushError with a stable code (from the failure ack's reason, or from the close code), and the
rule for commands made before connect() (they wait for it) and after the client is closed for
good (they fail at once with its code)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

from ..integration.server_process import ServerProcess, auth_section, write_config
from .client_page import open_client_page
from .conftest import TOPICS

LOOP = """(view) => (async () => {
  try { for await (const change of view) {} return "ended"; } catch (error) { return error.code; }
})()"""


def test_refusals_have_the_code_of_their_reason(page: Page, server: ServerProcess) -> None:
    open_client_page(page, server)
    result = page.evaluate(
        """async () => {
        const client = new push.PushClient(`ws://${location.host}/ws`);
        await client.connect();
        const view = client.sowAndSubscribe("orders", { filter: "/qty >" });
        const events = [];
        view.on("error", (e) => events.push([e.code, e.error instanceof push.CommandRefused]));
        const outcomes = {
          view: await settle(view.ready),
          publish: await settle(client.publish("orders", { qty: 1 })),
          sow: await settle(client.sow("nowhere")),
          options: await settle(client.subscribe("orders", { options: "no_such_option" }).ready),
          tx: await settle(client.transaction([
            { c: "publish", t: "orders", data: { order: 1 } },
            { c: "publish", t: "orders", data: { qty: 2 } },
          ])),
          sowDelete: await settle(client.sowDelete("nowhere", { filter: "/qty > 1" })),
        };
        const stillWorks = await settle(client.publish("orders", { order: 1, qty: 1 }));
        client.close();
        return { outcomes, events, failure: view.failure?.code, error: view.error, closed: view.closed,
                 views: client.views.size, stillWorks: stillWorks.ok };
    }"""
    )
    outcomes = result["outcomes"]
    assert {name: o["code"] for name, o in outcomes.items()} == {
        "view": "bad_filter",
        "publish": "bad_message",
        "sow": "invalid_topic",
        "options": "invalid_options",
        "tx": "bad_message",
        "sowDelete": "invalid_topic",
    }
    assert all(o["name"] == "CommandRefused" and o["isPushError"] for o in outcomes.values())
    assert outcomes["view"]["reason"].startswith("bad filter")
    assert outcomes["view"]["command"] == "sow_and_subscribe"
    assert outcomes["tx"]["reason"].startswith("bad message: cmds[1]")
    assert [outcomes[name]["command"] for name in ("publish", "sow", "tx")] == ["publish", "sow", "tx"]
    assert result["events"] == [["bad_filter", True]]
    assert result["failure"] == "bad_filter" and result["error"].startswith("bad filter") and result["closed"]
    assert result["views"] == 0 and result["stillWorks"]
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.fixture
def auth_server(tmp_path: Path) -> Iterator[ServerProcess]:
    users = auth_section({"user_id": "alice", "password": "secret", "read": ["*"], "write": ["*"]})
    process = ServerProcess(write_config(tmp_path / "server.toml", {}, TOPICS, users), tmp_path / "data")
    yield process
    process.stop()


def test_bad_credentials_close_the_client_with_their_code(page: Page, auth_server: ServerProcess) -> None:
    open_client_page(page, auth_server)
    result = page.evaluate(
        f"""async () => {{
        const loop = {LOOP};
        const credentials = {{ userId: "alice", password: "wrong" }};
        const client = new push.PushClient(`ws://${{location.host}}/ws`, credentials);
        const states = [];
        client.on("state", ({{ state, code }}) => states.push([state, code ?? null]));
        const queried = settle(client.sow("orders"));        // made before connect(): waits for it
        const view = client.sowAndSubscribe("orders");
        const viewLoop = loop(view);
        const connected = await settle(client.connect());
        const after = await settle(client.publish("orders", {{ order: 1 }}));
        const lateView = client.subscribe("orders");
        return {{ connected, queried: await queried, ready: await settle(view.ready), loop: await viewLoop,
                 after, late: await settle(lateView.ready), lateClosed: lateView.closed, states }};
    }}"""
    )
    connected = result["connected"]
    assert connected["name"] == "ConnectionClosed" and connected["code"] == "bad_credentials"
    assert connected["closeCode"] == 1008 and connected["command"] == "connect"
    assert connected["cause"] == {"name": "CommandRefused", "code": "auth_failure"}
    assert connected["reason"].startswith("auth failure")
    # Everything waiting, and everything asked afterwards, fails with the same code.
    for outcome in (result["queried"], result["ready"], result["after"], result["late"]):
        assert (outcome["name"], outcome["code"]) == ("ConnectionClosed", "bad_credentials")
        assert outcome["closeCode"] == 1008
    assert (result["queried"]["command"], result["after"]["command"]) == ("sow", "publish")
    assert result["loop"] == "bad_credentials" and result["lateClosed"]
    assert result["states"][-1] == ["closed", 1008]


def test_a_replaced_client_ends_its_views_with_code_replaced(page: Page, server: ServerProcess) -> None:
    open_client_page(page, server)
    result = page.evaluate(
        f"""async () => {{
        const loop = {LOOP};
        const url = `ws://${{location.host}}/ws`;
        const first = new push.PushClient(url, {{ clientName: "desk-9" }});
        await first.connect();
        const view = first.sowAndSubscribe("orders");
        await view.ready;
        const viewLoop = loop(view);
        const second = new push.PushClient(url, {{ clientName: "desk-9" }});
        await second.connect();
        await waitFor(() => first.state === "closed");
        const outcome = {{ loop: await viewLoop, failure: view.failure?.code,
                          after: await settle(first.sow("orders")),
                          secondWorks: (await settle(second.publish("orders", {{ order: 3 }}))).ok }};
        second.close();
        return outcome;
    }}"""
    )
    assert result["loop"] == "replaced" and result["failure"] == "replaced"
    assert (result["after"]["code"], result["after"]["closeCode"]) == ("replaced", 4002)
    assert result["secondWorks"]
    assert page.errors == []  # type: ignore[attr-defined]


def test_commands_made_before_connect_wait_for_it(page: Page, server: ServerProcess) -> None:
    open_client_page(page, server)
    result = page.evaluate(
        """async () => {
        const client = new push.PushClient(`ws://${location.host}/ws`, { clientName: "early" });
        const published = settle(client.publish("orders", { order: 1, qty: 5 }));
        const queried = client.sow("orders");
        const view = client.sowAndSubscribe("orders");
        const stateBefore = client.state;
        await sleep(200);
        await client.connect();
        const outcome = { stateBefore, published: await published, rows: await queried };
        await view.ready;
        await waitFor(() => view.records.size === 1);
        outcome.records = [...view.records.values()];
        client.close();
        return outcome;
    }"""
    )
    assert result["stateBefore"] == "idle"
    assert result["published"] == {"ok": True}
    assert result["rows"] == [{"order": 1, "qty": 5}]  # sent in order, after the publish
    assert result["records"] == [{"order": 1, "qty": 5}]
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_client_never_connected_times_out_or_closes_what_waits(page: Page, server: ServerProcess) -> None:
    open_client_page(page, server)
    result: dict[str, Any] = page.evaluate(
        """async () => {
        const idle = new push.PushClient(`ws://${location.host}/ws`, { requestTimeoutMs: 150 });
        const outcome = { timedOut: await settle(idle.sow("orders")),
                          ownTimeout: await settle(idle.publish("orders", { order: 1 }, { timeoutMs: 50 })) };
        const view = idle.sowAndSubscribe("orders");
        const closed = view.close().then(() => "resolved");
        outcome.closeAtOnce = await Promise.race([closed, sleep(100).then(() => "waiting")]);

        const closing = new push.PushClient(`ws://${location.host}/ws`, { requestTimeoutMs: 0 });
        const waiting = [settle(closing.publish("orders", { order: 1 })), settle(closing.sow("orders")),
                         settle(closing.flush())];
        const doomed = closing.sowAndSubscribe("orders");
        const loop = (async () => { for await (const change of doomed) {} return "ended"; })();
        closing.close();
        outcome.closed = await Promise.all(waiting);
        outcome.doomed = await settle(doomed.ready);
        outcome.loop = await loop;
        outcome.after = await settle(closing.sow("orders"));
        return outcome;
    }"""
    )
    assert result["timedOut"]["name"] == "RequestTimeout" and result["timedOut"]["code"] == "timeout"
    assert "call connect()" in result["timedOut"]["message"]
    assert result["ownTimeout"]["code"] == "timeout" and "within 50 ms" in result["ownTimeout"]["message"]
    assert result["closeAtOnce"] == "resolved"
    assert [o["code"] for o in result["closed"]] == ["closed", "closed", "closed"]
    assert [o["command"] for o in result["closed"]] == ["publish", "sow", "flush"]
    assert result["doomed"]["code"] == "closed" and result["loop"] == "ended"
    assert result["after"]["code"] == "closed" and result["after"]["closeCode"] == 1000
    assert page.errors == []  # type: ignore[attr-defined]
