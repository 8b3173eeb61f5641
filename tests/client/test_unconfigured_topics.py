"""A typo'd topic in the Python clients, against a real server that keeps ``orders``: the server's
words reach the user (docs/protocol.md, Topics the server does not keep). A view of it warns
from ``ready()`` with an ``UnconfiguredTopicWarning``; a viewport or an aggregated view of it
fails naming the topic; a publish to it logs a warning once per topic."""

from __future__ import annotations

import asyncio
import logging
import warnings
from typing import Any

import pytest

from server.client import Publisher, Subscriber, SubscriptionError, UnconfiguredTopicWarning

from ..browser.feed import publish
from ..integration.server_process import ServerProcess
from ..waiting import HANG_S

TOPICS = [{"name": "orders", "key": ["/order"]}, {"name": "ledger", "key": ["/id"], "durable": True}]
HINT = "did you mean 'orders'? (configured: ledger, orders)"


@pytest.fixture
def topics() -> list[dict[str, Any]]:
    return TOPICS


async def test_a_view_of_a_typo_warns_with_the_servers_words_and_stays_pub_sub(
    server: ServerProcess, subscriber: Subscriber
) -> None:
    view = subscriber.subscribe("ordrs")
    with pytest.warns(UnconfiguredTopicWarning) as caught:
        await view.ready()
    (warning,) = caught
    text = str(warning.message)
    assert text.startswith("unconfigured topic: 'ordrs' is not a configured topic of this server")
    assert text.endswith(HINT) and warning.filename == __file__  # the line that awaited ready()
    assert view.warning == text and view.did_you_mean == ["orders"] and view.records == {}
    with warnings.catch_warnings():
        warnings.simplefilter(
            "error", UnconfiguredTopicWarning
        )  # (not another's warning the collector meets)
        await view.ready()  # once per view
        reader = view.__aiter__()
        await asyncio.to_thread(publish, server, {"order": 1}, topic="ordrs")
        async with asyncio.timeout(HANG_S):
            change = await anext(reader)  # plain pub/sub: live publishes still arrive
    assert change.kind == "insert" and change.record == {"order": 1}


async def test_a_typo_read_without_ready_warns_at_its_first_change(
    server: ServerProcess, subscriber: Subscriber
) -> None:
    view = subscriber.subscribe("Orders")
    reader = view.__aiter__()
    async with asyncio.timeout(HANG_S):
        await view._ready.wait()  # subscribed (its snapshot, empty, is in): not awaited by the user
    await asyncio.to_thread(publish, server, {"order": 1}, topic="Orders")
    with pytest.warns(
        UnconfiguredTopicWarning, match=r"'Orders' is not a configured topic.*did you mean 'orders'"
    ):
        async with asyncio.timeout(HANG_S):
            change = await anext(reader)
    assert change.record == {"order": 1}


async def test_an_error_filter_makes_ready_raise(subscriber: Subscriber) -> None:
    view = subscriber.subscribe("ordrs")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnconfiguredTopicWarning)
        with pytest.raises(UnconfiguredTopicWarning, match="did you mean 'orders'"):
            await view.ready()


async def test_a_viewport_of_a_typo_fails_naming_the_topic_not_positions(subscriber: Subscriber) -> None:
    view = subscriber.viewport("ordrs", rows=(0, 9), orderby="/qty DESC")
    with pytest.raises(SubscriptionError) as refused:
        await view.ready()
    reason = refused.value.reason
    assert reason.startswith("invalid topic: 'ordrs' is not a configured topic, so it is plain pub/sub")
    assert reason.endswith(HINT)


async def test_an_aggregated_view_of_a_typo_fails_naming_the_topic(subscriber: Subscriber) -> None:
    view = subscriber.aggregate("ordrs", grouping=["/sym"], projection=["/sym", "SUM(/qty) AS /qty"])
    with pytest.raises(SubscriptionError) as refused:
        await view.ready()
    assert refused.value.reason == f"invalid topic: 'ordrs' has no SOW: it is not a configured topic; {HINT}"


async def test_a_kept_topic_warns_nothing(subscriber: Subscriber) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter(
            "error", UnconfiguredTopicWarning
        )  # (not another's warning the collector meets)
        view = subscriber.subscribe("orders")
        await view.ready()
        viewport = subscriber.viewport("orders", rows=(0, 9))
        await viewport.ready()
    assert view.warning is None and viewport.warning is None


async def test_a_publish_to_a_typo_is_logged_once_per_topic(
    server: ServerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    publisher = Publisher(server.url, client_name="feed")
    await publisher.connect()
    try:
        with caplog.at_level(logging.WARNING, logger="server.client"):
            await publisher.publish_many("ordrs", [{"order": 1}, {"order": 2}])
            await publisher.publish("ledgr", {"id": 1})
            await publisher.publish("orders", {"order": 3})
            await publisher.wait_persisted(timeout=HANG_S)
            await publisher.publish("ordrs", {"order": 4})
            await publisher.wait_persisted(timeout=HANG_S)
    finally:
        await publisher.close()
    said = [record.getMessage() for record in caplog.records if record.name == "server.client"]
    assert len(said) == 2, said
    assert said[0].startswith("publisher feed: unconfigured topic: 'ordrs' is not a configured topic")
    assert said[0].endswith(HINT) and "the publish reached only its live subscribers" in said[0]
    assert "'ledgr'" in said[1] and said[1].endswith("did you mean 'ledger'? (configured: ledger, orders)")
    assert sorted(publisher.warnings) == ["ledgr", "ordrs"]
