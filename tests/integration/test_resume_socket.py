"""Resuming a view (docs/protocol.md, Resuming a view) against real server processes: after a
dropped socket, after a restart (a durable topic resumes; a topic kept in memory starts again with
the whole snapshot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .client import Client
from .server_process import ServerProcess, write_config

TOPICS = [
    {"name": "orders", "key": ["/id"], "durable": True},
    {"name": "prices", "key": ["/id"]},
]
VIEW = {"c": "sow_and_subscribe", "sub_id": "v", "o": "resume,oof", "filter": "/qty < 100"}


async def subscribe(client: Client, topic: str, bm: str | None = None) -> list[dict[str, Any]]:
    command = {**VIEW, "t": topic, "cid": "v"}
    if bm is not None:
        command["bm"] = bm
    await client.send(command)
    return await client.until(lambda m: m["c"] == "group_end")


async def publish(client: Client, topic: str, *records: dict[str, Any]) -> None:
    await client.send(*[{"c": "publish", "t": topic, "data": r} for r in records])
    await client.request({"c": "flush", "cid": "f"})


async def resumed(url: str, topic: str, bm: str) -> tuple[dict[str, Any], list[tuple[str, int]]]:
    client = await Client.connect(url)
    try:
        got = await subscribe(client, topic, bm)
    finally:
        await client.close()
    sent = sorted((m["c"], m["data"]["id"]) for m in got if m["c"] in ("sow", "oof"))
    return got[-1], sent


async def test_a_dropped_socket_resumes_with_the_net_change(tmp_path: Path) -> None:
    server = ServerProcess(write_config(tmp_path / "s.toml", {}, TOPICS), tmp_path / "data")
    try:
        feed = await Client.connect(server.url)
        await publish(feed, "prices", *[{"id": n, "qty": n} for n in range(1000)])
        watcher = await Client.connect(server.url)
        got = await subscribe(watcher, "prices")
        assert got[-1]["records"] == 100
        bm = got[-1]["bm"]
        watcher.ws.transport.abort()  # dropped, without a close
        await publish(feed, "prices", {"id": 5, "qty": 6}, {"id": 6, "qty": 600}, {"id": 700, "qty": 1})
        end, sent = await resumed(server.url, "prices", bm)
        assert end["resumed"] is True and sent == [("oof", 6), ("sow", 5), ("sow", 700)]
        await feed.close()
    finally:
        server.stop()


async def test_a_durable_view_resumes_after_a_restart_and_a_memory_one_does_not(tmp_path: Path) -> None:
    config = write_config(tmp_path / "s.toml", {}, TOPICS)
    server = ServerProcess(config, tmp_path / "data")
    bms: dict[str, str] = {}
    try:
        feed = await Client.connect(server.url)
        for topic in ("orders", "prices"):
            await publish(feed, topic, *[{"id": n, "qty": n} for n in range(200)])
            watcher = await Client.connect(server.url)
            bms[topic] = (await subscribe(watcher, topic))[-1]["bm"]
            await watcher.close()
            await publish(feed, topic, {"id": 1, "qty": 2})
        await feed.close()
    finally:
        server.stop()
    server = ServerProcess(config, tmp_path / "data", port=server.port)
    try:
        feed = await Client.connect(server.url)
        await publish(feed, "orders", {"id": 2, "qty": 500})
        await feed.close()
        end, sent = await resumed(server.url, "orders", bms["orders"])
        assert end["resumed"] is True and sent == [("oof", 2), ("sow", 1)]
        end, sent = await resumed(server.url, "prices", bms["prices"])
        assert end["resumed"] is False and sent == [], "the memory topic's records did not survive"
    finally:
        server.stop()
