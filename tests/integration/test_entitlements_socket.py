"""Entitlement filters over real sockets: the attacks of a curious colleague (docs/protocol.md,
Entitlements)."""

from __future__ import annotations

from typing import Any

from .client import Client
from .conftest import StartServer
from .server_process import auth_section

USERS = [
    {"user_id": name.lower(), "password": name[0].lower(), "read": ["orders"], "write": ["orders"]}
    | {"filter": {"orders": f"/customer = '{name}'"}}
    for name in ("Alice", "Bob")
]
AUTH = auth_section(*USERS)


async def logon(url: str, user_id: str, password: str) -> Client:
    client = await Client.connect(url)
    await client.request({"c": "logon", "cid": "l", "user_id": user_id, "pw": password})
    return client


def order(number: int, customer: str, **fields: Any) -> dict[str, Any]:
    return {"c": "publish", "t": "orders", "data": {"order": number, "customer": customer, **fields}}


async def test_alice_never_sees_or_touches_bobs_orders(start_server: StartServer) -> None:
    server = start_server(topics=[{"name": "orders", "key": ["/order"], "durable": True}], extra=AUTH)
    alice, bob = await logon(server.url, "alice", "a"), await logon(server.url, "bob", "b")
    await alice.send(order(3, "Alice", qty=5, secret="mine"))
    await bob.send(order(2, "Bob", qty=7, secret="bobs"), order(4, "Bob", qty=8, secret="bobs"))
    await alice.request({"c": "sow_and_subscribe", "t": "orders", "cid": "s", "o": "oof,select=[-/secret]"})
    await alice.until(lambda m: m["c"] == "group_end")

    # Order 3 moves to Bob (Alice may not do it; Bob may not either: it is Alice's row).
    refused = await bob.request({**order(3, "Bob", qty=99, secret="bobs"), "cid": "steal"})
    assert refused[-1]["status"] == "failure" and refused[-1]["reason"].startswith("not entitled")
    moved = await alice.request({**order(3, "Bob", qty=99), "cid": "give"})
    assert moved[-1]["reason"].startswith("not entitled")

    # She cannot delete, overwrite or pull in Bob's rows.
    deleted = await alice.request(
        {"c": "sow_delete", "t": "orders", "cid": "d", "a": "stats", "filter": "/customer = 'Bob'"}, "stats"
    )
    assert deleted[-1]["matches"] == 0
    pulled = await alice.request(
        {"c": "delta_publish", "t": "orders", "cid": "p", "data": {"order": 2, "customer": "Alice"}}
    )
    assert pulled[-1]["reason"].startswith("not entitled")
    assert await alice.settled() == []
    await bob.send({"c": "sow", "t": "orders", "cid": "q"})
    bobs = await bob.until(lambda m: m["c"] == "group_end")
    assert sorted(m["data"]["order"] for m in bobs if m["c"] == "sow") == [2, 4]
    for client in (alice, bob):
        await client.close()


async def test_a_row_handed_over_leaves_with_reason_entitlement_live_and_on_replay(
    start_server: StartServer,
) -> None:
    config = auth_section(*USERS, {"user_id": "desk", "password": "d", "read": ["*"], "write": ["*"]})
    server = start_server(topics=[{"name": "orders", "key": ["/order"], "durable": True}], extra=config)
    desk, alice = await logon(server.url, "desk", "d"), await logon(server.url, "alice", "a")
    await desk.request({**order(3, "Alice", qty=5, secret="a3"), "cid": "1", "a": "persisted"}, "persisted")
    await alice.request({"c": "sow_and_subscribe", "t": "orders", "cid": "s", "o": "oof,select=[-/secret]"})
    await alice.until(lambda m: m["c"] == "group_end")
    await desk.request({**order(3, "Bob", qty=99, secret="b3"), "cid": "2", "a": "persisted"}, "persisted")
    live = await alice.until(lambda m: m["c"] == "oof")
    assert live[-1]["reason"] == "entitlement"
    assert live[-1]["data"] == {"order": 3, "customer": "Alice", "qty": 5}

    replayer = await logon(server.url, "alice", "a")
    await replayer.send(
        {"c": "subscribe", "t": "orders", "cid": "r", "bm": "0", "o": "oof", "a": "completed"}
    )
    replayed = await replayer.ack("r", "completed")
    messages = [m for m in replayed if m["c"] in ("p", "oof")]
    assert [(m["c"], m["data"]["customer"]) for m in messages] == [("p", "Alice"), ("oof", "Alice")]
    assert messages[1]["reason"] == "entitlement" and messages[1]["data"]["secret"] == "a3"
    for client in (desk, alice, replayer):
        await client.close()
