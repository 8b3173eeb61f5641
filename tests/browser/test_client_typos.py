"""A typo'd topic in the JavaScript client, in real Chromium against a real server that keeps
``orders`` and ``ledger`` (docs/protocol.md, Topics the server does not keep): a view of it is
plain pub/sub and says so with the server's words (``view.warning``, its "warning" event, the
client's "warning" event and one console.warn per topic); a viewport of it is refused naming
the topic; a publish to it resolves and says so once per topic."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page

from ..integration.server_process import ServerProcess
from .client_page import open_client_page

HINT = "did you mean 'orders'? (configured: ledger, orders)"


def console_warnings(page: Page) -> list[str]:
    said: list[str] = []
    page.on("console", lambda message: said.append(message.text) if message.type == "warning" else None)
    return said


def test_a_view_of_a_typo_warns_with_the_servers_words_and_stays_pub_sub(
    page: Page, server: ServerProcess
) -> None:
    said = console_warnings(page)
    open_client_page(page, server)
    result: dict[str, Any] = page.evaluate(
        """async () => {
        const client = new push.PushClient(`ws://${location.host}/ws`);
        const clientWarnings = [];
        client.on("warning", (w) => clientWarnings.push(w.topic));
        await client.connect();
        const view = client.sowAndSubscribe("ordrs");
        const viewWarnings = [];
        view.on("warning", (w) => viewWarnings.push(w));
        await view.ready;
        const again = client.sowAndDeltaSubscribe("ordrs", { options: "oof" });
        await again.ready;
        const live = client.subscribe("Orders");
        await live.ready;
        await client.publish("ordrs", { order: 1, qty: 5 });
        await waitFor(() => view.records.size === 1);
        const kept = client.sowAndSubscribe("orders");
        await kept.ready;
        const result = {
            warning: view.warning, events: viewWarnings.length, sameObject: viewWarnings[0] === view.warning,
            again: again.warning?.reason, live: live.warning, kept: kept.warning,
            records: [...view.records.values()], clientWarnings,
        };
        client.close();
        return result;
    }"""
    )
    warning = result["warning"]
    assert warning["code"] == "unconfigured_topic" and warning["topic"] == "ordrs"
    assert warning["command"] == "sow_and_subscribe"
    assert warning["reason"].startswith(
        "unconfigured topic: 'ordrs' is not a configured topic of this server"
    )
    assert warning["reason"].endswith(HINT)
    assert warning["didYouMean"] == ["orders"] and warning["configuredTopics"] == ["ledger", "orders"]
    assert result["events"] == 1 and result["sameObject"]  # once per view: the ack, not group_end again
    assert result["again"] == warning["reason"]
    assert result["live"]["command"] == "subscribe" and result["live"]["didYouMean"] == ["orders"]
    assert result["kept"] is None
    assert result["records"] == [{"order": 1, "qty": 5}]  # plain pub/sub: the publish arrived
    # The publish to "ordrs" was said already (its view did): once per topic.
    assert result["clientWarnings"] == ["ordrs", "Orders"]
    assert [text for text in said if text.startswith("sowpush: ")] == [
        f"sowpush: {warning['reason']}",
        f"sowpush: {result['live']['reason']}",
    ]
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_viewport_of_a_typo_is_refused_naming_the_topic(page: Page, server: ServerProcess) -> None:
    open_client_page(page, server)
    result: dict[str, Any] = page.evaluate(
        """async () => {
        const client = new push.PushClient(`ws://${location.host}/ws`);
        await client.connect();
        const viewport = client.viewport("ordrs", { rows: [0, 9], orderby: "/qty DESC" });
        const groups = client.aggregate("ordrs", { grouping: ["/sym"] });
        const result = { viewport: await settle(viewport.ready), groups: await settle(groups.ready) };
        client.close();
        return result;
    }"""
    )
    for outcome in result.values():
        assert outcome["name"] == "CommandRefused" and outcome["code"] == "invalid_topic"
        assert outcome["reason"].startswith("invalid topic: 'ordrs' ") and outcome["reason"].endswith(HINT)
    assert "plain pub/sub and keeps no records: a viewport" in result["viewport"]["reason"]
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_publish_to_a_typo_resolves_and_says_so_once_per_topic(page: Page, server: ServerProcess) -> None:
    said = console_warnings(page)
    open_client_page(page, server)
    result: dict[str, Any] = page.evaluate(
        """async () => {
        const client = new push.PushClient(`ws://${location.host}/ws`, { clientName: "desk" });
        const warnings = [];
        client.on("warning", (w) => warnings.push([w.topic, w.command, w.didYouMean]));
        await client.connect();
        const first = await client.publish("ordrs", { order: 1 });
        await client.deltaPublish("ordrs", { order: 1, qty: 2 });
        await client.publish("ledgr", { id: 1 });
        const kept = await client.publish("orders", { order: 1 });
        client.close();
        return { first, kept, warnings };
    }"""
    )
    first = result["first"]
    assert first["status"] == "success" and first["pubsub"] is True and first["t"] == "ordrs"
    assert (
        first["warning"].endswith(HINT)
        and "the publish reached only its live subscribers" in first["warning"]
    )
    assert "warning" not in result["kept"]
    assert result["warnings"] == [["ordrs", "publish", ["orders"]], ["ledgr", "publish", ["ledger"]]]
    assert len([text for text in said if text.startswith("sowpush: ")]) == 2
    assert page.errors == []  # type: ignore[attr-defined]
