"""Hostile callers at the front door of the real server (issue 10, "Prove it"; docs/protocol.md, Who
may connect): half-open upgrades, cross-site origins, logon brute force, a client name taken by
another user, and anonymous callers under ``[auth]``."""

from __future__ import annotations

import asyncio
import time
import urllib.error
import urllib.request

import pytest
import websockets

from ..waiting import HANG_S
from .client import Client
from .conftest import StartServer
from .hostile import (
    VictimProbe,
    peak_rss_mb,
    rss_mb,
    stored,
)
from .hostile_arena import (
    AUTH,
    CAROL,
    GROWTH_MB,
    LATENCY_S,
    arena,
    assert_refused,
    closed_code,
)

# It measures a big server's time or memory: it runs in the quiet pass, apart from the first (scripts/test).
pytestmark = pytest.mark.quiet


@pytest.mark.slow
async def test_half_open_upgrade_requests_are_bounded(start_server: StartServer) -> None:
    with arena(start_server) as server:
        start_rss = rss_mb(server)
        with VictimProbe(server) as probe:
            partial = (
                f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            ).encode()
            streams: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
            for _ in range(1_000):
                try:
                    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
                except OSError:
                    break  # refused at the door: bounded
                writer.write(partial)
                streams.append((reader, writer))

            async def closed_by_server(reader: asyncio.StreamReader) -> bool:
                try:
                    async with asyncio.timeout(15):
                        await reader.read(65536)
                except TimeoutError:
                    return False
                except OSError:
                    return True
                return True  # EOF, or an error response before closing

            started = time.monotonic()
            closed = await asyncio.gather(*(closed_by_server(reader) for reader, _ in streams))
            waited = time.monotonic() - started
            for _, writer in streams:
                writer.close()
            # A real client can still connect once the half-open ones are gone.
            late = await Client.connect(server.url, open_timeout=HANG_S)
            assert (await late.request({"c": "heartbeat", "cid": "late"}))[-1]["status"] == "success"
            await late.close()
        probe.result.assert_healthy(LATENCY_S, "1,000 half-open upgrade requests")
        held = len(streams) - sum(closed)
        assert held <= len(streams) // 20, (
            f"{held} of {len(streams)} half-open requests still held after {waited:.0f} s"
        )
        assert peak_rss_mb(server) - start_rss < GROWTH_MB


async def test_a_cross_site_origin_is_refused_with_403(start_server: StartServer) -> None:
    with arena(start_server, {"allowed_origins": ["https://desk.example.com"]}) as server:
        with VictimProbe(server) as probe:
            for origin in ("http://evil.example.com", "null", f"https://127.0.0.1:{server.port}"):
                for _ in range(20):
                    with pytest.raises(websockets.InvalidStatus) as refused:
                        await Client.connect(server.url, origin=origin)
                    assert refused.value.response.status_code == 403, origin
            allowed: tuple[str | None, ...] = (
                None,
                f"http://127.0.0.1:{server.port}",
                "https://desk.example.com",
            )
            for allowed_origin in allowed:
                client = await Client.connect(server.url, origin=allowed_origin)
                assert (await client.request({"c": "heartbeat", "cid": "h"}))[-1]["status"] == "success"
                await client.close()
        probe.result.assert_healthy(LATENCY_S, "cross-site handshakes")


async def test_logon_brute_force_is_throttled(start_server: StartServer) -> None:
    with arena(start_server, extra=AUTH, logon=CAROL) as server:
        with VictimProbe(server, logon=CAROL) as probe:
            reasons: list[str] = []
            for attempt in range(12):
                client = await Client.connect(server.url)
                password = "secret" if attempt >= 5 else f"guess{attempt}"
                replies = await client.request({"c": "logon", "cid": "l", "user_id": "alice", "pw": password})
                assert_refused(replies[-1], "auth failure")
                reasons.append(replies[-1]["reason"])
                assert await closed_code(client) == 1008
            assert all(reason == "auth failure: too many attempts" for reason in reasons[5:]), reasons
            # A flood of wrong passwords costs the others nothing.
            clients = [await Client.connect(server.url) for _ in range(100)]
            for client in clients:
                await client.send({"c": "logon", "cid": "l", "user_id": "alice", "pw": "x"})
            for client in clients:
                assert_refused((await client.ack("l"))[-1], "auth failure")
                assert await closed_code(client) == 1008
        probe.result.assert_healthy(LATENCY_S, "logon brute force")


async def test_a_client_name_belongs_to_its_user(start_server: StartServer) -> None:
    with arena(start_server, extra=AUTH, logon=CAROL) as server:
        before = stored(server, "orders", CAROL)
        with VictimProbe(server, logon=CAROL) as probe:
            feed = await Client.connect(server.url)
            ack = (
                await feed.request(
                    {"c": "logon", "cid": "l", "user_id": "alice", "pw": "secret", "client_name": "feed"}
                )
            )[-1]
            assert ack["status"] == "success"
            for seq in (1, 2, 3):
                reply = await feed.request(
                    {"c": "publish", "t": "ledger", "cid": seq, "s": seq, "data": {"id": seq}}
                )
                assert reply[-1]["status"] == "success"
            await feed.request({"c": "flush", "cid": "f", "a": "persisted"}, "persisted")
            # While the feed is connected, and after it left: bob may not take its name.
            for connected in (True, False):
                if not connected:
                    await feed.close()
                thief = await Client.connect(server.url)
                replies = await thief.request(
                    {"c": "logon", "cid": "l", "user_id": "bob", "pw": "hunter2", "client_name": "feed"}
                )
                assert_refused(replies[-1], "name in use")
                assert "s" not in replies[-1], "another user's sequence is not shown"
                assert await closed_code(thief) == 1008
            owner = await Client.connect(server.url)
            logged_on = (
                await owner.request(
                    {"c": "logon", "cid": "l", "user_id": "alice", "pw": "secret", "client_name": "feed"}
                )
            )[-1]
            assert logged_on["status"] == "success" and logged_on.get("s") == 3
            published = (
                await owner.request({"c": "publish", "t": "ledger", "cid": "p", "s": 4, "data": {"id": 4}})
            )[-1]
            assert published["status"] == "success" and published.get("reason") != "duplicate"
        probe.result.assert_healthy(LATENCY_S, "client name theft")
        assert stored(server, "orders", CAROL) == before


def test_topics_are_not_shown_to_anonymous_callers_under_auth(start_server: StartServer) -> None:
    with arena(start_server, extra=AUTH, logon=CAROL) as server:
        try:
            with urllib.request.urlopen(server.http + "/topics", timeout=HANG_S) as response:
                status, body = response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            status, body = error.code, error.read().decode()
        assert status != 200 or "orders" not in body, "/topics shows topic names to anyone"
        assert "orders" not in body and "ledger" not in body
