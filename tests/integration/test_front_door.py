"""The front door against the real server: client names belong to users across restarts, logon
throttling, constant-time passwords, the Origin check, /topics and /metrics under [auth], and
half-open upgrade requests (docs/protocol.md, Messages from the server and Who may connect;
docs/protocol.md "Who may connect")."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import websockets

from server.asgi.uvicorn_protocol import REQUEST_HEAD_TIMEOUT_S, STALL_GRACE_S, max_pending

from ..waiting import HANG_S
from ..work import Stopwatch
from .client import Client
from .conftest import StartServer
from .server_process import ServerProcess, auth_section, outside_address, write_config

AUTH = auth_section(
    {
        "user_id": "alice",
        "password": "secret",
        "read": ["orders"],
        "write": ["orders"],
        "filter": {"orders": "/customer = 'Alice'"},
    },
    {"user_id": "bob", "password": "hunter2", "read": ["*"], "write": ["*"]},
)
DURABLE: list[dict[str, Any]] = [
    {"name": "orders", "key": ["/order"], "durable": True},
    {"name": "trades", "key": ["/id"]},
]


def http(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    """Status, headers (names in lower case) and body of a GET."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=HANG_S) as response:
            status, got, body = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, got, body = error.code, error.headers, error.read()
    return status, {name.lower(): value for name, value in got.items()}, body.decode()


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


async def logon(url: str, user: str, password: str, **fields: Any) -> tuple[Client, dict[str, Any]]:
    client = await Client.connect(url)
    replies = await client.request({"c": "logon", "cid": "l", "user_id": user, "pw": password, **fields})
    return client, replies[-1]


async def closed_with(client: Client) -> int | None:
    with pytest.raises(websockets.ConnectionClosed):
        await client.recv(HANG_S)
    return client.ws.close_code


# -- client names --------------------------------------------------------------------------


async def test_a_client_name_belongs_to_its_first_user_across_a_restart(start_server: StartServer) -> None:
    server = start_server({}, DURABLE, AUTH)
    feed, ack = await logon(server.url, "bob", "hunter2", client_name="feed")
    assert ack["status"] == "success" and ack["s"] == 0
    for seq in (1, 2, 3):
        await feed.send({"c": "publish", "t": "orders", "s": seq, "data": {"order": seq, "customer": "Bob"}})
    await feed.request({"c": "flush", "cid": "f", "a": "persisted"}, "persisted")
    await feed.close()

    for attempt in range(2):
        thief, refused = await logon(server.url, "alice", "secret", client_name="feed")
        assert refused["status"] == "failure" and refused["reason"].startswith("name in use")
        assert "s" not in refused, "the owner's sequence is not shown to another user"
        assert await closed_with(thief) == 1008
        if attempt == 0:
            server.stop()
            server = start_server({}, DURABLE, AUTH)

    owner, ack = await logon(server.url, "bob", "hunter2", client_name="feed")
    assert ack["status"] == "success" and ack["s"] == 3
    replacement, again = await logon(server.url, "bob", "hunter2", client_name="feed")
    assert again["status"] == "success"
    assert await closed_with(owner) == 4002, "the same user's newer logon replaces the older socket"
    await replacement.close()


# -- throttling ----------------------------------------------------------------------------


async def test_five_failed_logons_block_the_address(start_server: StartServer) -> None:
    server = start_server({}, DURABLE, AUTH)
    for _ in range(5):
        client, ack = await logon(server.url, "alice", "guess")
        assert ack["reason"] == "auth failure: unknown user or wrong password"
        assert await closed_with(client) == 1008
    client, ack = await logon(server.url, "alice", "secret")
    assert ack["status"] == "failure" and ack["reason"] == "auth failure: too many attempts"
    assert await closed_with(client) == 1008
    status, headers, _ = http(server.http + "/topics", basic("alice", "secret"))
    assert status == 429 and headers["retry-after"] == "60", "/topics shares the logon throttle"
    assert await server.logged("failed logons from 127.0.0.1") == 1


# -- origins -------------------------------------------------------------------------------


async def test_cross_site_websocket_handshakes_are_refused_with_403(start_server: StartServer) -> None:
    server = start_server({"allowed_origins": ["https://desk.example.com/"]})
    own = f"http://127.0.0.1:{server.port}"
    for origin in (None, own, own.upper().replace("HTTP", "http"), "https://desk.example.com"):
        client = await Client.connect(server.url, origin=origin)
        replies = await client.request({"c": "heartbeat", "cid": "h"})
        assert replies[-1]["status"] == "success", origin
        await client.close()
    for origin in ("http://evil.example.com", f"https://127.0.0.1:{server.port}", "null"):
        with pytest.raises(websockets.InvalidStatus) as refused:
            await Client.connect(server.url, origin=origin)
        assert refused.value.response.status_code == 403, origin
    assert await server.logged("evil.example.com", "refused")


# -- /topics and /metrics ------------------------------------------------------------------


def test_topics_under_auth_needs_credentials_and_shows_what_the_user_may_read(
    start_server: StartServer,
) -> None:
    server = start_server({}, DURABLE, AUTH)
    status, headers, _ = http(server.http + "/topics")
    assert status == 401 and headers["www-authenticate"].startswith("Basic")
    assert http(server.http + "/topics", basic("alice", "wrong"))[0] == 401
    assert http(server.http + "/topics", {"Authorization": "Basic !!!"})[0] == 401
    status, _, body = http(server.http + "/topics", basic("alice", "secret"))
    assert status == 200
    assert json.loads(body) == [{"name": "orders", "key": ["/order"], "durable": True}]
    status, _, body = http(server.http + "/topics", basic("bob", "hunter2"))
    assert [(t["name"], t["records"]) for t in json.loads(body)] == [("orders", 0), ("trades", 0)]


def test_metrics_under_auth_answer_this_host_only(tmp_path: Path) -> None:
    config = write_config(tmp_path / "server.toml", {}, DURABLE, AUTH)
    server = ServerProcess(config, tmp_path / "data", args=["--host", "0.0.0.0"])
    try:
        assert http(server.http + "/metrics")[0] == 200, "a scraper on this host"
        outside = outside_address()
        if outside is None:
            pytest.skip("this machine has no address but loopback")
        status, _, body = http(f"http://{outside}:{server.port}/metrics")
        assert status == 403 and "metrics_token" in body
        assert http(f"http://{outside}:{server.port}/healthz")[0] == 200
    finally:
        server.stop()


@pytest.mark.parametrize("auth", ["", AUTH])
def test_a_metrics_token_is_required_when_set(start_server: StartServer, auth: str) -> None:
    server = start_server({"metrics_token": "s3cret-token"}, DURABLE, auth)
    status, headers, _ = http(server.http + "/metrics")
    assert status == 401 and headers["www-authenticate"].startswith("Bearer")
    assert http(server.http + "/metrics", {"Authorization": "Bearer wrong"})[0] == 401
    status, _, body = http(server.http + "/metrics", {"Authorization": "Bearer s3cret-token"})
    assert status == 200 and "push_connections" in body


def test_without_auth_topics_and_metrics_stay_open(server: ServerProcess) -> None:
    assert http(server.http + "/metrics")[0] == 200
    status, _, body = http(server.http + "/topics")
    assert status == 200 and {t["name"] for t in json.loads(body)} == {"orders", "trades"}
    assert all("records" in t for t in json.loads(body))


# -- half-open upgrade requests ------------------------------------------------------------

HALF_OPEN = 1000


@pytest.mark.slow
async def test_half_open_upgrades_are_bounded_and_others_still_get_in(server: ServerProcess) -> None:
    partial = b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    # What other work on the machine takes from the server over the whole test: a connection's
    # deadline is a timer of the server's, which fires that much later on a busy machine.
    started, whole = time.monotonic(), Stopwatch(server.process.pid)
    streams = []
    # Each waits from its own opening, which the server saw between the two readings: the
    # deadline is checked against the first (the server cannot have accepted it sooner: on a busy
    # machine this process resumed half a second after a connection the server had accepted), the
    # cut against the second.
    for _ in range(HALF_OPEN):
        connecting = time.monotonic()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(partial)
        streams.append((reader, writer, connecting, time.monotonic()))

    waited = Stopwatch(server.process.pid)  # (what other work on the machine takes is not counted)
    client = await Client.connect(server.url, open_timeout=HANG_S)
    await client.send({"c": "publish", "t": "orders", "data": {"order": 1}})
    replies = await client.request({"c": "sow", "t": "orders", "cid": "q"})
    assert replies[-1]["status"] == "success"
    assert waited.elapsed() < 2, "a normal client is served while the flood is pending"

    async def closed_by_server(reader: asyncio.StreamReader) -> float:
        """When the server closed it."""
        with contextlib.suppress(ConnectionError):
            while await reader.read(1024):
                pass
        return time.monotonic()

    async with asyncio.timeout(REQUEST_HEAD_TIMEOUT_S + HANG_S):
        closed = await asyncio.gather(*(closed_by_server(reader) for reader, *_ in streams))
    lost = time.monotonic() - started - whole.elapsed()
    held_at_least = [at - connecting for at, (_, _, connecting, _) in zip(closed, streams, strict=True)]
    held_at_most = [at - opened for at, (*_, opened) in zip(closed, streams, strict=True)]
    early = sum(1 for seconds in held_at_least if seconds < REQUEST_HEAD_TIMEOUT_S - 0.5)
    assert min(held_at_least) >= STALL_GRACE_S - 0.2, "none was cut before it had stalled"
    if max_pending() > HALF_OPEN:  # the cap (half the process's descriptors, at most 10,000)
        assert early == 0, "under the cap every one is held to its deadline, not cut early"
    assert max(held_at_most) < REQUEST_HEAD_TIMEOUT_S + 3 + lost, "and cut at its deadline"
    for _, writer, *_ in streams:
        writer.close()
    replies = await client.request({"c": "heartbeat", "cid": "h"})
    assert replies[-1]["status"] == "success", "the normal client's connection was never touched"
    await client.close()
