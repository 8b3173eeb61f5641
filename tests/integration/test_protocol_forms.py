"""The remaining forms of each command and option, and the auth and client-name close codes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import websockets

from ..waiting import HANG_S
from .client import Client
from .conftest import StartServer
from .server_process import auth_section

Connect = Callable[..., Any]


async def fill(client: Client, count: int) -> None:
    await client.send(
        *[{"c": "publish", "t": "orders", "data": {"order": n, "qty": n}} for n in range(count)]
    )
    await client.request({"c": "flush", "cid": "filled"})


async def sow_orders(client: Client, **fields: Any) -> list[int]:
    got = await client.request({"c": "sow", "t": "orders", "cid": "q", **fields})
    got += await client.until(lambda m: m["c"] == "group_end")
    return [m["data"]["order"] for m in got if m["c"] == "sow"]


async def test_sow_delete_by_filter_and_by_sow_keys(connect: Connect) -> None:
    client: Client = await connect()
    await fill(client, 6)
    deleted = await client.request(
        {"c": "sow_delete", "t": "orders", "cid": "d1", "filter": "/qty >= 4", "a": "stats"}, "stats"
    )
    assert (deleted[-1]["matches"], deleted[-1]["records_deleted"]) == (2, 2)
    got = await client.request({"c": "sow", "t": "orders", "cid": "keys", "filter": "/order < 2"})
    got += await client.until(lambda m: m["c"] == "group_end")
    keys = ",".join(m["k"] for m in got if m["c"] == "sow")
    await client.request({"c": "sow_delete", "t": "orders", "cid": "d2", "sow_keys": keys})
    assert sorted(await sow_orders(client)) == [2, 3]


async def test_top_n_and_skip_n_as_options_and_bs_batches(connect: Connect) -> None:
    client: Client = await connect()
    await fill(client, 10)
    assert await sow_orders(client, orderby="/qty", o="top_n=3,skip_n=2") == [2, 3, 4]
    frames_before = client.frames
    assert len(await sow_orders(client, bs=3)) == 10
    assert client.frames - frames_before >= 4, "ten records in batches of three take at least four frames"


async def test_delta_subscribe_live_and_send_keys_false(connect: Connect) -> None:
    publisher, watcher = await connect(), await connect()
    await watcher.request(
        {"c": "delta_subscribe", "t": "orders", "cid": "d", "o": "delta=merge,send_keys=false"}
    )
    await publisher.send({"c": "publish", "t": "orders", "data": {"order": 1, "qty": 1, "px": 5}})
    assert (await watcher.recv())["data"] == {"order": 1, "qty": 1, "px": 5}
    await publisher.send({"c": "publish", "t": "orders", "data": {"order": 1, "qty": 2, "px": 5}})
    assert (await watcher.recv())["delta"] == {"qty": 2}


async def test_unsubscribe_a_list_and_all(connect: Connect) -> None:
    publisher, watcher = await connect(), await connect()
    for sub_id in ("a", "b", "c"):
        await watcher.request(
            {"c": "subscribe", "t": "orders", "cid": sub_id, "filter": f"/order != '{sub_id}'"}
        )
    await watcher.request({"c": "unsubscribe", "sub_id": "a,b", "cid": "u1"})
    await publisher.request({"c": "publish", "t": "orders", "data": {"order": 1}, "cid": 1})
    assert [m["sids"] for m in await watcher.settled()] == [["c"]]
    await watcher.request({"c": "unsubscribe", "sub_id": "all", "cid": "u2"})
    await publisher.request({"c": "publish", "t": "orders", "data": {"order": 2}, "cid": 2})
    assert await watcher.settled() == []


AUTH = auth_section({"user_id": "alice", "password": "secret", "read": ["*"], "write": ["*"]})


async def test_bad_logon_is_closed_1008_and_good_logon_works(start_server: StartServer) -> None:
    server = start_server(extra=AUTH)
    intruder = await Client.connect(server.url)
    await intruder.send({"c": "logon", "cid": "l", "user_id": "alice", "pw": "nope"})
    assert (await intruder.recv())["reason"].startswith("auth failure")
    with pytest.raises(websockets.ConnectionClosed):
        await intruder.recv(HANG_S)
    assert intruder.ws.close_code == 1008
    user = await Client.connect(server.url)
    assert (await user.request({"c": "sow", "t": "orders", "cid": 0}))[-1]["reason"].startswith(
        "logon required"
    )
    assert (await user.request({"c": "logon", "cid": 1, "user_id": "alice", "pw": "secret"}))[-1][
        "status"
    ] == "success"


async def test_same_client_name_closes_the_older_connection_with_4002(connect: Connect) -> None:
    first, second, stranger = await connect(), await connect(), await connect()
    await first.request({"c": "logon", "cid": 1, "client_name": "desk", "user_id": "u"})
    await second.request({"c": "logon", "cid": 2, "client_name": "desk", "user_id": "u"})
    with pytest.raises(websockets.ConnectionClosed):
        await first.recv(HANG_S)
    assert first.ws.close_code == 4002
    refused = (await stranger.request({"c": "logon", "cid": 3, "client_name": "desk", "user_id": "v"}))[-1]
    assert refused["reason"].startswith("name in use")
