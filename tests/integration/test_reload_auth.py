"""SIGHUP reloads ``[auth]`` from the configuration file without dropping sockets (docs/protocol.md,
Reloading entitlements), over the real server process and real sockets."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import websockets

from ..waiting import HANG_S, eventually_async
from .client import Client, Message
from .server_process import ServerProcess, auth_section, write_config

TOPICS = [{"name": "orders", "key": ["/order"]}, {"name": "trades", "key": ["/id"]}]


def person(name: str, read: list[str] | None = None, **fields: Any) -> dict[str, Any]:
    """A user who sees the orders of customer ``name`` (capitalised), password its first letter."""
    entry = {"user_id": name.lower(), "password": name[0].lower(), "read": read or ["*"], "write": ["*"]}
    return entry | {"filter": {"orders": f"/customer = '{name}'"}} | fields


DESK = {"user_id": "desk", "password": "d", "read": ["*"], "write": ["*"]}
BEFORE = auth_section(person("Alice"), person("Bob"), person("Carol"), DESK)


class Server:
    """The server process and the configuration file it reloads."""

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "server.toml"
        self.write(BEFORE)
        self.process = ServerProcess(self.path, tmp_path / "data")

    def write(self, auth: str, server: dict[str, Any] | None = None) -> None:
        write_config(self.path, server or {}, TOPICS, auth)

    async def reload(self, log_line: str) -> None:
        """Send SIGHUP and wait for the server to log ``log_line``."""
        lines = len(self.process.lines)
        self.process.process.send_signal(signal.SIGHUP)

        async def logged() -> bool:
            return any(log_line in line for line in self.process.lines[lines:])

        await eventually_async(logged, lambda: f"no {log_line!r} in:\n{self.process.output()}")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    started = Server(tmp_path)
    yield started
    assert started.process.stop() == 0, started.process.output()


async def logon(server: Server, user_id: str, password: str) -> Client:
    client = await Client.connect(server.process.url)
    replies = await client.request({"c": "logon", "cid": "l", "user_id": user_id, "pw": password})
    assert replies[-1]["status"] == "success", replies
    return client


def order(number: int, customer: str) -> Message:
    return {"c": "publish", "t": "orders", "cid": number, "data": {"order": number, "customer": customer}}


async def subscribe(client: Client, sub_id: str, topic: str = "orders", **fields: Any) -> list[int]:
    await client.send({"c": "sow_and_subscribe", "t": topic, "sub_id": sub_id, **fields})
    snapshot = await client.until(lambda m: m["c"] == "group_end")
    return sorted(m["data"]["order"] for m in snapshot if m["c"] == "sow")


def brief(messages: list[Message]) -> list[tuple[Any, ...]]:
    return [
        (m["c"], m["data"]["order"], m.get("reason")) if m["c"] in ("p", "oof") else (m["c"], m.get("reason"))
        for m in messages
    ]


async def closed_with(client: Client) -> int | None:
    with pytest.raises(websockets.ConnectionClosed):
        await client.recv(HANG_S)
    return client.ws.close_code


async def test_sighup_re_decides_every_socket_and_subscription(server: Server) -> None:
    desk = await logon(server, "desk", "d")
    for number, customer in enumerate(("Alice", "Bob", "Alice", "Bob"), 1):
        await desk.request(order(number, customer))
    alice, bob, carol = [await logon(server, *who) for who in (("alice", "a"), ("bob", "b"), ("carol", "c"))]
    assert await subscribe(alice, "s", o="oof") == [1, 3]
    assert await subscribe(bob, "s", o="oof") == [2, 4]
    await subscribe(carol, "s")
    await subscribe(carol, "t", "trades")

    # Alice now sees Bob's orders, Bob is gone, Carol may read trades only.
    server.write(
        auth_section(
            person("Alice", filter={"orders": "/customer = 'Bob'"}), person("Carol", ["trades"]), DESK
        )
    )
    await server.reload("SIGHUP: reloaded [auth]")
    got = await alice.until(lambda m: m["c"] == "p" and m["data"]["order"] == 4)
    assert brief(got) == [
        ("oof", 1, "entitlement"),
        ("oof", 3, "entitlement"),
        ("p", 2, None),
        ("p", 4, None),
    ]
    assert got[0]["data"] == {"order": 1, "customer": "Alice"}  # the last state she was allowed to see
    assert await closed_with(bob) == 1008
    assert await carol.recv() == {"c": "unsubscribed", "sub_id": "s", "reason": "entitlement"}

    # The sockets that stay go on under the new rules: later writes and publishes included.
    await desk.request(order(5, "Bob"))
    assert brief(await alice.until(lambda m: m["c"] == "p")) == [("p", 5, None)]
    refused = await alice.request(order(6, "Alice"))
    assert refused[-1]["reason"].startswith("not entitled")
    await desk.request({"c": "publish", "t": "trades", "cid": "t", "data": {"id": 1}})
    assert (await carol.recv())["t"] == "trades"
    assert await carol.settled() == []
    gone = await Client.connect(server.process.url)
    refused = await gone.request({"c": "logon", "cid": "l", "user_id": "bob", "pw": "b"})
    assert refused[-1]["reason"].startswith("auth failure")
    for client in (desk, alice, carol):
        await client.close()


@pytest.mark.parametrize(
    ("broken", "reason"),
    [
        ("[auth\n", "not valid TOML"),
        (
            auth_section(person("Alice", filter={"orders": "/customer = = 'Bob'"})),
            "auth.user[0].filter.orders",
        ),
        (auth_section(DESK) + "[nonsense]\n", "nonsense: unknown key"),
        ("", "it has no [auth] section"),
    ],
)
async def test_a_file_that_does_not_parse_keeps_the_settings_in_use(
    server: Server, broken: str, reason: str
) -> None:
    desk, alice = await logon(server, "desk", "d"), await logon(server, "alice", "a")
    await subscribe(alice, "s", o="oof")
    server.path.write_text(server.path.read_text().split("\n[auth]")[0] + "\n" + broken)
    await server.reload("not reloaded")
    line = next(line for line in server.process.lines if "not reloaded" in line)
    assert "ERROR" in line and str(server.path) in line and reason in line
    await desk.request(order(1, "Bob"))
    await desk.request(order(2, "Alice"))
    assert brief(await alice.until(lambda m: m["c"] == "p")) == [("p", 2, None)]
    await logon(server, "bob", "b")  # the old users are still there
    for client in (desk, alice):
        await client.close()


async def test_other_sections_need_a_restart_and_say_so(server: Server) -> None:
    alice = await logon(server, "alice", "a")
    server.write(BEFORE, {"heartbeat_s": 5})
    await server.reload("only [auth] is reloaded")
    assert await server.process.logged("[server] changed")
    assert (await alice.request({"c": "heartbeat", "cid": "h"}))[0] == {"c": "heartbeat"}
    await alice.close()
