"""Aggregated views (docs/protocol.md, Aggregated views) in a cluster: every node derives the same
groups, with the same keys, from the shared log, whichever node the changes came through."""

from __future__ import annotations

from typing import Any

import pytest

from ..integration.client import Client
from .conftest import StartNode

pytestmark = pytest.mark.slow

VIEW = {
    "c": "sow_and_subscribe",
    "t": "orders",
    "o": "oof,grouping=[/desk],projection=[/desk,SUM(/qty) AS /qty,COUNT(*) AS /n]",
}


def pub(record: int, **fields: Any) -> dict[str, Any]:
    return {"c": "publish", "t": "orders", "data": {"id": record, **fields}}


async def _groups(client: Client, cid: str) -> dict[str, Any]:
    await client.send({**VIEW, "cid": cid})
    got = await client.until(lambda m: m["c"] == "group_end")
    return {m["k"]: m["data"] for m in got if m["c"] == "sow"}


async def test_every_node_derives_the_same_groups_with_the_same_keys(start_node: StartNode) -> None:
    nodes = [start_node() for _ in range(2)]
    first, second = [await Client.connect(node.url) for node in nodes]
    await first.request({**pub(1, desk="a", qty=1), "cid": "p1"})
    await second.request({**pub(2, desk="a", qty=2), "cid": "p2"})
    await first.request({"c": "flush", "cid": "f"})
    await second.request({"c": "flush", "cid": "f"})
    watchers = [await Client.connect(node.url) for node in nodes]
    views = [await _groups(watcher, "v") for watcher in watchers]
    # (A node may not have applied the other's publish yet: wait for the totals to agree.)
    for watcher, view in zip(watchers, views, strict=True):
        while list(view.values()) != [{"desk": "a", "qty": 3, "n": 2}]:
            message = await watcher.recv()
            view[message["k"]] = message["data"]
    assert views[0].keys() == views[1].keys()
    # A move through one node reaches the views on both: the group it left goes, the new one comes.
    await second.request({**pub(1, desk="b", qty=1), "cid": "p3"})
    for watcher in watchers:
        got = await watcher.until(lambda m: m["c"] == "p" and m["data"]["desk"] == "b")
        assert [m["data"] for m in got if m["c"] == "p"][-1] == {"desk": "b", "qty": 1, "n": 1}
    for client in (first, second, *watchers):
        await client.close()
