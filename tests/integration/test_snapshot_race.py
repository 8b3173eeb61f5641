"""A subscriber joins while a publisher hammers 200 records: snapshot plus deltas end equal to the SOW."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

import jsonpatch
import pytest

from server.core.records.merge import merge_record

from .client import Client

Connect = Callable[..., Any]
RECORDS = 200


def apply(view: dict[str, Any], message: dict[str, Any]) -> None:
    key = message["k"]
    if message["c"] == "oof":
        view.pop(key, None)
    elif "data" in message:
        view[key] = message["data"]
    elif "patch" in message:
        view[key] = jsonpatch.apply_patch(view[key], message["patch"])
    else:
        view[key] = merge_record(view[key], message["delta"])


async def hammer(publisher: Client, rounds: int, seed: int) -> None:
    rng = random.Random(seed)
    for round_number in range(rounds):
        batch = []
        for _ in range(100):
            order = rng.randrange(RECORDS)
            if rng.random() < 0.5:
                data = {"order": order, "qty": rng.randrange(100), "px": rng.random(), "round": round_number}
                batch.append({"c": "publish", "t": "orders", "data": data})
            else:
                batch.append(
                    {"c": "delta_publish", "t": "orders", "data": {"order": order, "qty": rng.randrange(100)}}
                )
        await publisher.send(*batch)
        await asyncio.sleep(0)
    await publisher.request({"c": "flush", "cid": "done"})


@pytest.mark.parametrize("options", ["", "delta=merge", "oof"])
async def test_snapshot_plus_deltas_equals_the_sow(connect: Connect, options: str) -> None:
    publisher, subscriber, checker = await connect(), await connect(), await connect()
    command = "sow_and_subscribe" if options == "oof" else "sow_and_delta_subscribe"
    view_filter = "/qty >= 30" if options == "oof" else None
    await publisher.send(
        *[{"c": "publish", "t": "orders", "data": {"order": n, "qty": 0}} for n in range(RECORDS)]
    )
    hammering = asyncio.create_task(hammer(publisher, 40, seed=len(options)))
    await asyncio.sleep(0.05)  # join in the middle of the stream
    subscribe = {"c": command, "t": "orders", "sub_id": "s", "o": options}
    if view_filter:
        subscribe["filter"] = view_filter
    await subscriber.send(subscribe)
    await hammering
    await publisher.request({"c": "flush", "cid": "hammered"})
    sow = await checker.request({"c": "sow", "t": "orders", "cid": "q", "filter": view_filter or "1 = 1"})
    sow += await checker.until(lambda m: m["c"] == "group_end")
    expected = {m["k"]: m["data"] for m in sow if m["c"] == "sow"}

    view: dict[str, Any] = {}
    seen_group_end = False
    for message in await subscriber.settled():
        if message["c"] == "group_end":
            seen_group_end = True
        elif message["c"] in ("sow", "p", "oof"):
            assert seen_group_end or message["c"] == "sow", "live messages come after group_end"
            apply(view, message)
    assert seen_group_end
    assert view == expected
