"""A typo'd topic on a cluster node (docs/protocol.md, Topics the server does not keep): a publish
to it goes through the shared log as plain pub/sub, and its acks, sent when the log brings it
back, say so as a server alone's do."""

from __future__ import annotations

import pytest

from ..integration.client import Client
from .conftest import StartNode

pytestmark = pytest.mark.slow


async def test_a_publish_to_a_typo_is_acked_with_the_warning_through_the_shared_log(
    start_node: StartNode,
) -> None:
    nodes = [start_node() for _ in range(2)]
    reader, feed = await Client.connect(nodes[1].url), await Client.connect(nodes[0].url)
    try:
        subscribed = await reader.request({"c": "subscribe", "t": "ordrs", "sub_id": "s", "cid": "s"})
        assert subscribed[-1]["status"] == "success" and subscribed[-1]["did_you_mean"] == ["orders"]
        await feed.request({"c": "logon", "client_name": "feed", "cid": "l"})
        command = {
            "c": "publish",
            "t": "ordrs",
            "cid": "p",
            "s": 1,
            "a": "processed,persisted",
            "data": {"id": 1},
        }
        acks = [m for m in await feed.request(command, "persisted") if m["c"] == "ack"]
        assert [ack["a"] for ack in acks] == ["processed", "persisted"]
        for ack in acks:
            assert ack["status"] == "success" and ack["pubsub"] is True and ack["t"] == "ordrs"
            assert ack["warning"].endswith("did you mean 'orders'? (configured: orders, quotes)")
        live = await reader.until(lambda m: m["c"] == "p")
        assert live[-1]["data"] == {"id": 1}
    finally:
        await reader.close()
        await feed.close()
