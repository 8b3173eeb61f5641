"""A typo'd topic on a real server, over a real socket (docs/protocol.md, Topics the server does
not keep): by default the subscription and the publish succeed as plain pub/sub and their acks
and ``group_end`` say so, with the configured names close to it; with ``unconfigured_topics =
"refuse"`` it fails with ``invalid topic`` and the same did-you-mean, and nothing reaches a
configured topic's subscribers by it."""

from __future__ import annotations

from typing import Any

from .client import Client
from .conftest import StartServer

NEAR = {"did_you_mean": ["orders"], "configured_topics": ["orders", "trades"]}
HINT = "did you mean 'orders'? (configured: orders, trades)"


def says_plain(message: dict[str, Any]) -> None:
    assert message["pubsub"] is True and message["t"] == "ordrs"
    assert {name: message[name] for name in NEAR} == NEAR
    assert message["warning"].startswith("unconfigured topic: 'ordrs' is not a configured topic")
    assert message["warning"].endswith(HINT)


async def test_a_typo_is_plain_pub_sub_and_its_acks_and_group_end_say_so(start_server: StartServer) -> None:
    server = start_server()
    reader, feed = await Client.connect(server.url), await Client.connect(server.url)
    try:
        got = await reader.request({"c": "sow_and_subscribe", "t": "ordrs", "sub_id": "s", "cid": "s"})
        assert got[-1]["status"] == "success"
        says_plain(got[-1])
        end = await reader.until(lambda m: m["c"] == "group_end")
        assert end[-1]["records"] == 0
        says_plain(end[-1])
        await feed.send({"c": "logon", "client_name": "feed", "cid": "l"})
        await feed.ack("l")
        acks = await feed.request(
            {
                "c": "publish",
                "t": "ordrs",
                "cid": "p",
                "s": 1,
                "a": "processed,persisted",
                "data": {"order": 1},
            },
            "persisted",
        )
        assert [m["a"] for m in acks if m["c"] == "ack"] == ["processed", "persisted"]
        for ack in acks:
            assert ack["status"] == "success" and ack["s"] == 1
            says_plain(ack)
        live = await reader.until(lambda m: m["c"] == "p")
        assert live[-1]["data"] == {"order": 1} and "k" not in live[-1]  # passed through, as before
        kept = await reader.request({"c": "subscribe", "t": "orders", "sub_id": "o", "cid": "o"})
        assert kept[-1] == {"c": "ack", "a": "processed", "cid": "o", "status": "success"}
        viewport = await reader.request(
            {
                "c": "sow_and_subscribe",
                "t": "ordrs",
                "sub_id": "v",
                "cid": "v",
                "o": "positions,count",
                "top_n": 5,
            }
        )
        assert viewport[-1]["status"] == "failure"
        assert viewport[-1]["reason"].startswith("invalid topic: 'ordrs' is not a configured topic")
        assert viewport[-1]["reason"].endswith(HINT)
    finally:
        await reader.close()
        await feed.close()


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
        assert refused[-1]["reason"].endswith(HINT) and refused[-1]["did_you_mean"] == ["orders"]
        subscribed = await reader.request({"c": "subscribe", "t": "ordrs", "sub_id": "t", "cid": "t"})
        assert subscribed[-1]["status"] == "failure" and subscribed[-1]["reason"].startswith("invalid topic")
        await feed.request({"c": "publish", "t": "orders", "cid": "q", "data": {"order": 2}})
        got = await reader.until(lambda m: m.get("c") == "p")
        assert got[-1]["data"]["order"] == 2
        assert await reader.settled() == []
    finally:
        await reader.close()
        await feed.close()
