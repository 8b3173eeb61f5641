"""Client names are cluster-wide (docs/protocol.md, Cluster, rules of 6.4): one name, one connection."""

from __future__ import annotations

import signal

import pytest
import websockets

from ..integration.client import Client
from ..integration.server_process import auth_section
from ..waiting import HANG_S
from .conftest import StartNode

pytestmark = pytest.mark.slow


async def closed_with(client: Client) -> int | None:
    with pytest.raises(websockets.ConnectionClosed) as closed:
        while True:
            await client.recv(HANG_S)
    return closed.value.rcvd.code if closed.value.rcvd is not None else None


async def test_a_second_logon_on_another_node_replaces_the_first(start_node: StartNode) -> None:
    nodes = [start_node() for _ in range(2)]
    first = await Client.connect(nodes[0].url)
    await first.request({"c": "logon", "client_name": "feed", "user_id": "ops", "cid": "l"})
    second = await Client.connect(nodes[1].url)
    acks = await second.request({"c": "logon", "client_name": "feed", "user_id": "ops", "cid": "l"})
    assert acks[-1]["status"] == "success"
    assert await closed_with(first) == 4002
    # The name is held once: a third logon, back on the first node, replaces the second.
    third = await Client.connect(nodes[0].url)
    await third.request({"c": "logon", "client_name": "feed", "user_id": "ops", "cid": "l"})
    assert await closed_with(second) == 4002


async def test_a_name_held_by_another_user_elsewhere_is_refused_until_it_is_let_go(
    start_node: StartNode,
) -> None:
    nodes = [start_node() for _ in range(2)]
    holder = await Client.connect(nodes[0].url)
    await holder.request({"c": "logon", "client_name": "feed", "user_id": "alice", "cid": "l"})
    other = await Client.connect(nodes[1].url)
    refused = await other.request({"c": "logon", "client_name": "feed", "user_id": "bob", "cid": "l"})
    assert refused[-1]["status"] == "failure" and refused[-1]["reason"].startswith("name in use")
    await holder.close()
    retry = await Client.connect(nodes[1].url)
    for _ in range(50):  # the release reaches Redis just after the socket closes
        acks = await retry.request({"c": "logon", "client_name": "feed", "user_id": "bob", "cid": "l"})
        if acks[-1]["status"] == "success":
            break
        retry = await Client.connect(nodes[1].url)
    assert acks[-1]["status"] == "success"


async def test_with_auth_a_name_belongs_to_its_first_user_on_every_node(start_node: StartNode) -> None:
    users = auth_section(
        {"user_id": "alice", "password": "a", "read": ["*"], "write": ["*"]},
        {"user_id": "bob", "password": "b", "read": ["*"], "write": ["*"]},
    )
    nodes = [start_node(extra=users) for _ in range(2)]
    alice = await Client.connect(nodes[0].url)
    logon = {"c": "logon", "client_name": "desk", "user_id": "alice", "pw": "a", "cid": "l"}
    answer = await alice.request(logon)
    assert answer[-1]["status"] == "success", str(answer)
    await alice.close()
    bob = await Client.connect(nodes[1].url)
    refused = await bob.request({**logon, "user_id": "bob", "pw": "b"})
    assert refused[-1]["reason"].startswith("name in use")


async def test_a_node_killed_holding_a_name_does_not_keep_it_from_its_user(start_node: StartNode) -> None:
    nodes = [start_node() for _ in range(2)]
    first = await Client.connect(nodes[0].url)
    await first.request({"c": "logon", "client_name": "feed", "user_id": "ops", "cid": "l"})
    nodes[0].stop(signal.SIGKILL)
    again = await Client.connect(nodes[1].url)
    acks = await again.request({"c": "logon", "client_name": "feed", "user_id": "ops", "cid": "l"})
    assert acks[-1]["status"] == "success"
