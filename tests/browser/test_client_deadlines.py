"""AbortSignal and timeoutMs on the JavaScript client's requests, and view.close()'s promise, in
real Chromium against a real server that is made to stop answering (SIGSTOP) while they wait."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page

from ..integration.server_process import ServerProcess
from .client_page import frozen, open_client_page


def test_aborts_and_timeouts_on_queries_and_views(page: Page, server: ServerProcess) -> None:
    open_client_page(page, server)
    page.evaluate(
        """async () => {
        window.client = new push.PushClient(`ws://${location.host}/ws`, { heartbeatMs: 0 });
        await client.connect();
        await client.publish("orders", { order: 1, qty: 5 });
        window.kept = client.sowAndSubscribe("orders");
        await kept.ready;
        // Aborted before it is asked: rejected at once, nothing is sent.
        const gone = new AbortController();
        gone.abort("not wanted");
        window.early = { sow: await settle(client.sow("orders", { signal: gone.signal })),
                         view: client.subscribe("orders", { signal: gone.signal }).closed };
    }"""
    )
    with frozen(server):
        result: dict[str, Any] = page.evaluate(
            """async () => {
            const controller = new AbortController();
            const loop = (view) => (async () => {
              try { for await (const change of view) {} return "ended"; } catch (error) { return error.code; }
            })();
            const timedView = client.sowAndSubscribe("orders", { timeoutMs: 300 });
            const timedErrors = [];
            timedView.on("error", ({ code }) => timedErrors.push(code));
            const abortedView = client.sowAndSubscribe("orders", { signal: controller.signal });
            const waiting = {
              timedSow: settle(client.sow("orders", { timeoutMs: 300 })),
              abortedSow: settle(client.sow("orders", { signal: controller.signal })),
              timedView: settle(timedView.ready),
              abortedView: settle(abortedView.ready),
              timedLoop: loop(timedView),
              abortedLoop: loop(abortedView),
            };
            setTimeout(() => controller.abort(new Error("the user went elsewhere")), 100);
            const outcome = {};
            for (const [name, promise] of Object.entries(waiting)) outcome[name] = await promise;
            outcome.timedErrors = timedErrors;
            outcome.ended = [timedView.closed, abortedView.closed];
            outcome.views = [...client.views.values()].map((view) => view === kept);
            // close() resolves when the server has acknowledged the unsubscribe: not while it sleeps.
            window.closing = "waiting";
            kept.close().then(() => { window.closing = "acknowledged"; });
            await sleep(300);
            outcome.closingWhileFrozen = window.closing;
            return outcome;
        }"""
        )
    after = page.evaluate(
        """async () => {
        await waitFor(() => window.closing === "acknowledged");
        const rows = await client.sow("orders");
        client.close();
        return { closing, rows, early };
    }"""
    )
    for name in ("timedSow", "timedView"):
        assert (result[name]["name"], result[name]["code"]) == ("RequestTimeout", "timeout"), name
    for name in ("abortedSow", "abortedView"):
        assert (result[name]["name"], result[name]["code"]) == ("RequestAborted", "aborted"), name
        assert result[name]["cause"]["name"] == "Error"
    assert result["timedView"]["command"] == "sow_and_subscribe"
    assert (result["timedLoop"], result["abortedLoop"]) == ("timeout", "aborted")
    assert result["timedErrors"] == ["timeout"]
    assert result["ended"] == [True, True]
    assert result["views"] == [True]  # the failed views are forgotten, the other one stays
    assert result["closingWhileFrozen"] == "waiting"
    assert after["closing"] == "acknowledged"
    assert after["rows"] == [{"order": 1, "qty": 5}]
    assert after["early"]["sow"]["code"] == "aborted" and after["early"]["view"] is True
    assert page.errors == []  # type: ignore[attr-defined]


def test_connect_gives_up_on_its_timeout_or_signal(page: Page, server: ServerProcess) -> None:
    open_client_page(page, server)
    with frozen(server):  # the socket connects, the logon is never answered
        result: dict[str, Any] = page.evaluate(
            """async () => {
            const url = `ws://${location.host}/ws`;
            const timed = new push.PushClient(url);
            const queued = settle(timed.sow("orders"));
            const outcome = { timed: await settle(timed.connect({ timeoutMs: 300 })), timedState: timed.state,
                              queued: await queued };
            const aborted = new push.PushClient(url);
            const controller = new AbortController();
            setTimeout(() => controller.abort(), 100);
            outcome.aborted = await settle(aborted.connect({ signal: controller.signal }));
            outcome.abortedState = aborted.state;
            return outcome;
        }"""
        )
    assert (result["timed"]["code"], result["timed"]["command"]) == ("timeout", "connect")
    assert result["timedState"] == "closed"
    queued = result["queued"]
    assert (queued["code"], queued["command"], queued["cause"]["code"]) == ("closed", "sow", "timeout")
    assert result["aborted"]["code"] == "aborted" and result["abortedState"] == "closed"
    assert page.errors == []  # type: ignore[attr-defined]
