"""A hostile-client suite against the real server (issue 10, "Prove it"; PROTOCOL 2, 6.5, 6.7).

Each test runs one attack from one or more hostile sockets while a ``VictimProbe`` (its own thread,
its own sockets) keeps a live subscription and measures how long a publish from a third socket
takes to reach it. Each asserts, with generous bounds (the bugs were 7-20 s stalls and hundreds
of megabytes), that the victim kept its latency and its connection, that the server's memory
stayed bounded (and came back down where the issue says it was held), that the hostile socket got
the refusal or close the protocol names, and that what was stored did not change.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import string
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import websockets
from websockets.sync.client import connect as sync_connect

from tests.fuzzing.engine_rig import REASONS  # the protocol's reason words, written once

from .client import Client
from .conftest import StartServer
from .hostile import (
    PROBE_TOPIC,
    VictimProbe,
    dir_bytes,
    peak_rss_mb,
    request,
    rss_mb,
    settled_rss_mb,
    stored,
)
from .server_process import ServerProcess

LATENCY_S = 1.5  # what a publish may take to reach the victim while an attack runs
GROWTH_MB = 150  # how much the server may grow during an attack
TOPICS: list[dict[str, Any]] = [
    {"name": "orders", "key": ["/order"]},
    {"name": PROBE_TOPIC, "key": ["/id"]},
    {"name": "scratch", "key": ["/id"]},
    {"name": "big", "key": ["/id"]},
    {"name": "ledger", "key": ["/id"], "durable": True},
]
AUTH = """
[auth]
[[auth.user]]
user_id = "alice"
password = "secret"
read = ["*"]
write = ["*"]

[[auth.user]]
user_id = "bob"
password = "hunter2"
read = ["*"]
write = ["*"]

[[auth.user]]
user_id = "carol"
password = "victim"
read = ["*"]
write = ["*"]
"""
CAROL = {"c": "logon", "user_id": "carol", "pw": "victim"}
ORDERS = [{"order": n, "customer": f"c{n % 3}", "qty": n * 10, "note": "n" * 100} for n in range(20)]


def publish_all(server: ServerProcess, topic: str, rows: list[dict[str, Any]], logon: Any = None) -> None:
    """Publish ``rows`` into ``topic`` over a synchronous socket, in frames under 900 KB."""
    with sync_connect(server.url, open_timeout=10, max_size=None) as ws:
        if logon is not None:
            assert all(m.get("status") != "failure" for m in request(ws, {**logon, "cid": "logon"}))
        batch: list[dict[str, Any]] = []
        size = 0
        for row in rows:
            command = {"c": "publish", "t": topic, "data": row}
            batch.append(command)
            size += len(orjson.dumps(command))
            if size > 900_000:
                ws.send(orjson.dumps(batch).decode())
                batch, size = [], 0
        if batch:
            ws.send(orjson.dumps(batch).decode())
        assert all(
            m.get("status") != "failure" for m in request(ws, {"c": "flush", "cid": "seeded"}, timeout=60)
        )


@contextlib.contextmanager
def arena(
    start_server: StartServer, settings: dict[str, Any] | None = None, extra: str = "", logon: Any = None
) -> Iterator[ServerProcess]:
    """A server with ``orders`` seeded; killed at the end (a stalled server need not stop cleanly)."""
    server = start_server(settings or {}, TOPICS, extra)
    try:
        publish_all(server, "orders", ORDERS, logon)
        yield server
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()


async def closed_code(client: Client, timeout: float = 10.0) -> int | None:
    """Read (and drop) whatever comes until the server closes ``client``; its close code."""
    deadline = time.monotonic() + timeout
    with contextlib.suppress(websockets.ConnectionClosed):
        while time.monotonic() < deadline:
            try:
                await client.recv(max(0.01, deadline - time.monotonic()))
            except TimeoutError:
                break
    if client.ws.close_code is None:
        raise AssertionError(f"the server did not close the socket within {timeout} s")
    return client.ws.close_code


async def acks_by_cid(client: Client, cids: set[Any], timeout: float) -> dict[Any, dict[str, Any]]:
    """The processed ack of every cid in ``cids`` (fails if one does not come within ``timeout``)."""
    got: dict[Any, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout
    while set(got) != cids:
        left = deadline - time.monotonic()
        assert left > 0, f"no processed ack for {sorted(map(str, cids - set(got)))[:5]} within {timeout} s"
        try:
            message = await client.recv(left)
        except websockets.ConnectionClosed as error:
            missing = sorted(map(str, cids - set(got)))[:5]
            raise AssertionError(f"the socket was closed ({error}) before the acks of {missing}") from error
        if message.get("c") == "ack" and message.get("a") == "processed" and message.get("cid") in cids:
            assert message["cid"] not in got, f"two processed acks for cid {message['cid']!r}"
            got[message["cid"]] = message
    return got


def assert_refused(ack: dict[str, Any], *reasons: str) -> None:
    assert ack["status"] == "failure", f"expected a refusal, got {ack!r:.300}"
    assert ack["reason"].startswith(reasons or REASONS), f"unexpected reason {ack['reason']!r:.200}"


# -- malformed frames -------------------------------------------------------------------------------


async def test_invalid_utf8_frames(start_server: StartServer) -> None:
    with arena(start_server) as server:
        before = stored(server, "orders")
        with VictimProbe(server) as probe:
            hostile = await Client.connect(server.url)
            # A binary frame holding bytes that are not UTF-8: not JSON, refused, the socket stays.
            await hostile.ws.send(b'{"c":"publish","t":"orders","cid":"x","data":{"order":1,"v":"\xff\xfe"}}')
            ack = await hostile.recv()
            assert ack["c"] == "ack"
            assert_refused(ack, "bad message")
            assert "cid" not in ack or ack["cid"] is None
            assert (await hostile.request({"c": "heartbeat", "cid": "alive"}))[-1]["status"] == "success"
            # A text frame that is not UTF-8 fails the WebSocket connection (RFC 6455 8.1): 1007.
            rude = [await Client.connect(server.url) for _ in range(20)]
            for client in rude:
                await client.ws.send(
                    b'{"c":"publish","t":"orders","data":{"order":2,"v":"\xed\xa0\x80"}}', text=True
                )
            codes = [await closed_code(client) for client in rude]
            assert set(codes) == {1007}, codes
            assert (await hostile.request({"c": "heartbeat", "cid": "still"}))[-1]["status"] == "success"
        probe.result.assert_healthy(LATENCY_S, "invalid UTF-8")
        assert stored(server, "orders") == before


async def test_deep_nesting_and_huge_numbers(start_server: StartServer) -> None:
    with arena(start_server) as server:
        before = stored(server, "orders")
        with VictimProbe(server) as probe:
            hostile = await Client.connect(server.url, max_size=None)
            # Each of these aims at a stored order and must be refused, leaving it as it was.
            refused: dict[str, bytes] = {
                "deep-data": b'{"c":"publish","t":"orders","cid":"deep-data","data":{"order":1,"x":'
                + b"[" * 1100
                + b"]" * 1100
                + b"}}",
                "infinite": b'{"c":"publish","t":"orders","cid":"infinite","data":{"order":1,"x":1e999}}',
                "huge-s": b'{"c":"publish","t":"orders","cid":"huge-s","s":18446744073709551616,'
                b'"data":{"order":1}}',
                "huge-top": b'{"c":"sow","t":"orders","cid":"huge-top","top_n":1' + b"0" * 40 + b"}",
                "huge-key": b'{"c":"delta_publish","t":"orders","cid":"huge-key","data":{"order":{"a":1}}}',
            }
            await hostile.ws.send(b"[" * 500_000 + b"]" * 500_000)  # 1 MB of nesting: not a command
            first = await hostile.recv(20)
            assert_refused(first, "bad message")
            for frame in refused.values():
                await hostile.ws.send(frame)
            await hostile.send({"c": "flush", "cid": "done"})
            seen = await hostile.until(lambda m: m.get("cid") == "done", 20)
            failures = [m for m in seen if m.get("c") == "ack" and m.get("status") == "failure"]
            assert len(failures) == len(refused), f"expected {len(refused)} refusals, got {failures!r:.600}"
            for ack in failures:
                assert_refused(ack, "bad message", "invalid options")
            # These go to a scratch topic: accepted or refused, but what is accepted is delivered to
            # a live subscriber and can be read back.
            watcher = await Client.connect(server.url, max_size=None)
            await watcher.request({"c": "subscribe", "t": "scratch", "cid": "watch"})
            accepted_or_not = [
                b'{"c":"publish","t":"scratch","cid":"d1000","data":{"id":1,"x":'
                + b"[" * 1000
                + b"]" * 1000
                + b"}}",
                b'{"c":"publish","t":"scratch","cid":"d300","data":{"id":2,"x":'
                + b'{"a":' * 300
                + b"1"
                + b"}" * 300
                + b"}}",
                b'{"c":"publish","t":"scratch","cid":"d253","data":{"id":5,"x":'
                + b"[" * 253
                + b"]" * 253
                + b"}}",
                b'{"c":"publish","t":"scratch","cid":"bigint","data":{"id":123456789012345678901234567890}}',
                b'{"c":"publish","t":"scratch","cid":"far","e":1e308,"data":{"id":3,"x":-1e308}}',
                b'{"c":"publish","t":"scratch","cid":"tiny","data":{"id":4.9e-324}}',
            ]
            for frame in accepted_or_not:
                await hostile.ws.send(frame)
            acks = await acks_by_cid(hostile, {"d1000", "d300", "d253", "bigint", "far", "tiny"}, 20)
            for ack in acks.values():
                if ack["status"] == "failure":
                    assert_refused(ack)
            accepted = sorted(cid for cid, ack in acks.items() if ack["status"] == "success")
            live = [m for m in await watcher.silence(1.0) if m.get("c") == "p"]
            assert len(live) == len(accepted), (
                f"accepted {accepted}, but the subscriber got {len(live)} of them"
            )
            reader = await Client.connect(server.url, max_size=None)
            await reader.send({"c": "sow", "t": "scratch", "cid": "read"})
            answer = await reader.until(
                lambda m: (
                    m.get("c") == "group_end" or (m.get("cid") == "read" and m.get("status") == "failure")
                ),
                20,
            )
            assert answer[-1]["c"] == "group_end", (
                f"a sow of what was accepted ({accepted}) failed: {answer[-1]!r:.200}"
            )
            records = [m for m in answer if m.get("c") == "sow"]
            assert len(records) == answer[-1]["records"], "group_end counts the records it sent"
            assert len(records) == len(accepted), f"accepted {accepted}, read back {len(records)}"
        probe.result.assert_healthy(LATENCY_S, "deep nesting and huge numbers")
        assert stored(server, "orders") == before


async def test_oversized_frames_are_closed_with_1009(start_server: StartServer) -> None:
    with arena(start_server) as server:
        before = stored(server, "orders")
        start_rss = rss_mb(server)
        with VictimProbe(server) as probe:
            hostile = [await Client.connect(server.url) for _ in range(10)]
            for index, client in enumerate(hostile):
                payload = {"c": "publish", "t": "orders", "data": {"order": 1, "x": "y" * (2 << 20)}}
                frame = orjson.dumps(payload)
                with contextlib.suppress(websockets.ConnectionClosed):  # closed while it still sends
                    await client.ws.send(frame if index % 2 else frame.decode())
            codes = [await closed_code(client) for client in hostile]
            assert set(codes) == {1009}, codes
        probe.result.assert_healthy(LATENCY_S, "oversized frames")
        assert peak_rss_mb(server) - start_rss < GROWTH_MB
        assert stored(server, "orders") == before


# -- floods ---------------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_a_frame_of_100000_commands_does_not_stall_the_others(start_server: StartServer) -> None:
    with arena(start_server, {"max_message_bytes": 8 << 20}) as server:
        before = stored(server, "orders")
        with VictimProbe(server) as probe:
            hostile = await Client.connect(server.url, max_size=None)
            # Publishes, and every tenth command a delete whose filter scans the topic and matches nothing.
            flood = [
                {"c": "sow_delete", "t": "scratch", "filter": "/n < 0"}
                if n % 10 == 9
                else {"c": "publish", "t": "scratch", "data": {"id": n % 2000, "n": n}}
                for n in range(100_000)
            ]
            await hostile.send(*flood)
            await hostile.send({"c": "flush", "cid": "after-publishes"})
            seen = await hostile.until(lambda m: m.get("cid") == "after-publishes", 60)
            assert seen[-1]["status"] == "success"
            # 100,000 commands that all fail: 100,000 failure acks for a socket that does read them.
            await hostile.ws.send("[" + ",".join(['{"c":"x"}'] * 100_000) + "]")
            await hostile.send({"c": "flush", "cid": "after-failures"})
            failures = 0
            with contextlib.suppress(websockets.ConnectionClosed):
                async with asyncio.timeout(60):
                    while True:
                        message = await hostile.recv(60)
                        if message.get("cid") == "after-failures":
                            break
                        failures += message.get("status") == "failure"
            if hostile.ws.close_code is None:
                assert failures == 100_000, "every failed command is acked"
            else:
                assert hostile.ws.close_code == 4001, "or the socket that did not keep up is closed"
        probe.result.assert_healthy(LATENCY_S, "a frame of 100,000 commands")
        assert stored(server, "orders") == before


# -- filters --------------------------------------------------------------------------------------------

ROW_TEXT = "ab" * 25_000  # 50 KB: (.*a){20} matches, and its greedy groups span the whole row
PATHOLOGICAL_FILTERS = {
    "like (.*a){20}": "/text LIKE '(.*a){20}'",
    "5000 nested groups": "/text LIKE '" + "(" * 5000 + "a" + ")" * 5000 + "'",
    "replace growth": "LENGTH(" + "REPLACE(" * 3 + "/text" + ", 'b', 'bbbbbbbb')" * 3 + ") > 0",
    "regexp_replace growth": "LENGTH(" + "REGEXP_REPLACE(" * 2 + "/text" + ", 'b', 'bbbbbbbb')" * 2 + ") > 0",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PATHOLOGICAL_FILTERS))
async def test_a_pathological_filter_cannot_stall_the_server(start_server: StartServer, name: str) -> None:
    text = PATHOLOGICAL_FILTERS[name]
    with arena(start_server) as server:
        publish_all(server, "big", [{"id": n, "text": ROW_TEXT} for n in range(200)])
        before, big_before = stored(server, "orders"), stored(server, "big")
        start_rss = rss_mb(server)
        with VictimProbe(server) as probe:
            hostile = await Client.connect(server.url, max_size=None)
            await hostile.send(
                {"c": "sow", "t": "big", "cid": "query", "filter": text},
                {"c": "subscribe", "t": "big", "cid": "live", "filter": text},
                {"c": "sow_delete", "t": "big", "cid": "delete", "filter": text},
            )
            acks = await acks_by_cid(hostile, {"query", "live", "delete"}, 60)
            for ack in acks.values():
                if ack["status"] == "failure":
                    assert_refused(ack, "bad filter")
            if acks["live"]["status"] == "success":
                # The live subscription is evaluated on every publish to the topic: one more round.
                publish_all(server, "big", [{"id": n, "text": ROW_TEXT} for n in range(0, 200, 10)])
            await asyncio.sleep(0.5)
        probe.result.assert_healthy(LATENCY_S, name)
        assert peak_rss_mb(server) - start_rss < GROWTH_MB, f"{name}: the server grew too much"
        assert stored(server, "orders") == before
        if acks["delete"]["status"] == "success":
            assert acks["delete"].get("records_deleted", 0) == 0 or stored(server, "big") != big_before
        else:
            assert stored(server, "big") == big_before, "a refused delete deleted nothing"


@pytest.mark.slow
async def test_thousands_of_unindexable_subscriptions_on_one_socket(start_server: StartServer) -> None:
    with arena(start_server) as server:
        before = stored(server, "orders")
        with VictimProbe(server) as probe:
            hostile = await Client.connect(server.url, max_size=None)
            cids: set[Any] = set()
            for start in range(0, 5_000, 500):
                batch = [
                    {"c": "subscribe", "t": "scratch", "cid": n, "filter": f"/n * 1 + {n} < -1 - LENGTH(/s)"}
                    for n in range(start, start + 500)
                ]
                cids.update(n for n in range(start, start + 500))
                await hostile.send(*batch)
            acks = await acks_by_cid(hostile, cids, 60)
            accepted = [cid for cid, ack in acks.items() if ack["status"] == "success"]
            for ack in acks.values():
                if ack["status"] == "failure":
                    assert_refused(ack)
            assert len(accepted) <= 1000, (
                f"{len(accepted)} live subscriptions on one socket (max_subscriptions)"
            )
            assert acks[4_999]["status"] == "failure" and acks[4_999]["reason"].startswith("invalid options")
            # Everyone else's publishes to that topic stay fast.
            publisher = await Client.connect(server.url)
            started = time.monotonic()
            for start in range(0, 1_000, 100):
                await publisher.send(
                    *[
                        {"c": "publish", "t": "scratch", "data": {"id": n, "n": n}}
                        for n in range(start, start + 100)
                    ]
                )
            await publisher.request({"c": "flush", "cid": "published"})
            took = time.monotonic() - started
        probe.result.assert_healthy(LATENCY_S, "5,000 unindexable subscriptions")
        assert took < 5.0, f"1,000 publishes took {took:.1f} s beside one socket's subscriptions"
        assert stored(server, "orders") == before


def _pattern(index: int, size: int) -> str:
    """A distinct regular expression of ``size`` characters (not a plain literal)."""
    chooser = random.Random(index)
    body = "".join(chooser.choice(string.ascii_lowercase) for _ in range(size - 20))
    return f"{index:06d}.{body}(x|y)+"


@pytest.mark.slow
async def test_distinct_huge_filters_do_not_hold_memory(start_server: StartServer) -> None:
    with arena(start_server) as server:
        before = stored(server, "orders")
        start_rss = rss_mb(server)
        with VictimProbe(server) as probe:
            hostile = await Client.connect(server.url, max_size=None)
            cids: set[Any] = set()
            for start in range(0, 150, 10):
                batch = [
                    {"c": "sow", "t": "orders", "cid": n, "filter": f"/customer LIKE '{_pattern(n, 59_000)}'"}
                    for n in range(start, start + 10)
                ]
                cids.update(range(start, start + 10))
                await hostile.send(*batch)
            acks = await acks_by_cid(hostile, cids, 90)
            for ack in acks.values():
                if ack["status"] == "failure":
                    assert_refused(ack, "bad filter")
            peak = peak_rss_mb(server) - start_rss
            await hostile.close()
        probe.result.assert_healthy(LATENCY_S, "150 distinct 59 KB filters")
        assert peak < GROWTH_MB, f"150 distinct 59 KB filters grew the server by {peak:.0f} MB"
        after = settled_rss_mb(server, start_rss + 100) - start_rss
        assert after < 100, f"{after:.0f} MB still held after the socket closed (caches bounded by bytes)"
        assert stored(server, "orders") == before


@pytest.mark.slow
async def test_a_socket_that_never_reads_cannot_queue_unbounded_sow_results(
    start_server: StartServer,
) -> None:
    with arena(start_server) as server:
        publish_all(server, "big", [{"id": n, "pad": "p" * 80} for n in range(5_000)])
        before = stored(server, "orders")
        start_rss = rss_mb(server)
        with VictimProbe(server) as probe:
            # max_queue=1: the client library stops reading the TCP socket once one frame waits.
            hostile = await Client.connect(server.url, max_queue=1, max_size=None)
            for frame in range(16):
                await hostile.send(*[{"c": "sow", "t": "big", "cid": frame * 500 + n} for n in range(500)])
            await asyncio.sleep(6)
            peak = peak_rss_mb(server) - start_rss
            transport = hostile.ws.transport
            transport.abort()
        probe.result.assert_healthy(LATENCY_S, "8,000 sow queries from a socket that never reads")
        assert peak < GROWTH_MB, f"the unread sow results grew the server by {peak:.0f} MB"
        after = settled_rss_mb(server, start_rss + 50) - start_rss
        assert after < 50, f"{after:.0f} MB still held after the socket went away"
        assert stored(server, "orders") == before


@pytest.mark.slow
async def test_long_conflation_intervals_do_not_leak(start_server: StartServer) -> None:
    rows = 1_000
    with arena(start_server) as server:
        publish_all(server, "big", [{"id": n, "pad": "0" * 10_000} for n in range(rows)])
        before = stored(server, "orders")
        start_rss = rss_mb(server)
        with VictimProbe(server) as probe:
            hostile = await Client.connect(server.url, max_size=None)
            outcomes = []
            for round_ in range(10):
                # The longest interval the server accepts: 100000h, or (refused) still 50 s.
                for interval in ("100000h", "50s"):
                    replies = await hostile.request(
                        {"c": "subscribe", "t": "big", "cid": f"r{round_}", "o": f"conflation={interval}"}
                    )
                    if replies[-1]["status"] == "success":
                        break
                    assert_refused(replies[-1], "invalid options")
                assert replies[-1]["status"] == "success", "a 50 s conflation interval is a valid option"
                outcomes.append(interval)
                pad = str(round_) * 10_000
                publish_all(server, "big", [{"id": n, "pad": pad} for n in range(rows)])
                await hostile.request({"c": "unsubscribe", "sub_id": f"r{round_}", "cid": f"u{round_}"})
            await hostile.close()
        probe.result.assert_healthy(LATENCY_S, "conflation=100000h rounds")
        peak = peak_rss_mb(server) - start_rss
        assert peak < GROWTH_MB, f"10 rounds of conflation=100000h grew the server by {peak:.0f} MB"
        after = settled_rss_mb(server, start_rss + 40) - start_rss
        assert after < 40, f"{after:.0f} MB still held after unsubscribing and closing ({outcomes})"
        assert stored(server, "orders") == before


# -- the front door ----------------------------------------------------------------------------------------


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
            late = await Client.connect(server.url, open_timeout=5)
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
            with urllib.request.urlopen(server.http + "/topics", timeout=5) as response:
                status, body = response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            status, body = error.code, error.read().decode()
        assert status != 200 or "orders" not in body, "/topics shows topic names to anyone"
        assert "orders" not in body and "ledger" not in body


@pytest.mark.slow
async def test_huge_names_ids_and_options_are_bounded(start_server: StartServer, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with arena(start_server) as server:
        before = stored(server, "orders")
        start_rss = rss_mb(server)
        start_disk = dir_bytes(data_dir)
        with VictimProbe(server) as probe:
            # A 900 KB client name, then 50 durable publishes with sequences.
            hostile = await Client.connect(server.url, max_size=None)
            await hostile.send({"c": "logon", "cid": "l", "client_name": "n" * 900_000})
            await hostile.ack("l")
            for seq in range(1, 51):
                await hostile.send({"c": "publish", "t": "ledger", "s": seq, "data": {"id": seq % 5}})
            await hostile.request({"c": "flush", "cid": "f", "a": "persisted"}, "persisted")
            # 300 distinct 100 KB client names, one socket each.
            for index in range(300):
                client = await Client.connect(server.url, max_size=None)
                name = f"{index:04d}" + "m" * 100_000
                await client.send(
                    {"c": "logon", "client_name": name},
                    {"c": "publish", "t": "ledger", "s": 1, "data": {"id": index % 5}},
                )
                await client.request({"c": "flush", "cid": "f"})
                await client.close()
            # Huge ids and options are refused.
            replies = await hostile.request(
                {"c": "subscribe", "t": "orders", "cid": "big-id", "sub_id": "i" * 500_000}
            )
            assert_refused(replies[-1], "bad message")
            replies = await hostile.request(
                {"c": "sow", "t": "orders", "cid": "big-o", "o": "oof," * 125_000}
            )
            assert_refused(replies[-1], "invalid options")
            await hostile.close()
        probe.result.assert_healthy(LATENCY_S, "huge names, ids and options")
        grown = (dir_bytes(data_dir) - start_disk) / 1e6
        assert grown < 5, f"the transaction log grew by {grown:.0f} MB for 350 small publishes"
        after = settled_rss_mb(server, start_rss + 40) - start_rss
        assert after < 40, f"{after:.0f} MB still held after the sockets with huge names closed"
        assert stored(server, "orders") == before
