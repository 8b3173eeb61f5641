"""``unconfigured_topics = "refuse"`` on a real server, as a user writes it in the file: a typo'd
topic fails with ``invalid topic`` and nothing reaches a configured topic's subscribers by it."""

from __future__ import annotations

from .client import Client
from .conftest import StartServer


async def test_a_server_that_refuses_unconfigured_topics_says_so_for_a_typo(
    start_server: StartServer,
) -> None:
    server = start_server({"unconfigured_topics": "refuse"})
    reader, feed = await Client.connect(server.url), await Client.connect(server.url)
    try:
        await reader.request({"c": "subscribe", "t": "orders", "sub_id": "s", "cid": "s"})
        refused = await feed.request({"c": "publish", "t": "ordrs", "cid": "p", "data": {"order": 1}})
        assert refused[-1]["status"] == "failure"
        assert refused[-1]["reason"].startswith("invalid topic: 'ordrs' is not a configured topic")
        subscribed = await reader.request({"c": "subscribe", "t": "ordrs", "sub_id": "t", "cid": "t"})
        assert subscribed[-1]["status"] == "failure" and subscribed[-1]["reason"].startswith("invalid topic")
        await feed.request({"c": "publish", "t": "orders", "cid": "q", "data": {"order": 2}})
        got = await reader.until(lambda m: m.get("c") == "p")
        assert got[-1]["data"]["order"] == 2
        assert await reader.silence() == []
    finally:
        await reader.close()
        await feed.close()
