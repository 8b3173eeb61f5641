"""Hostile filters against the real server (issue 10, "Prove it"): pathological patterns, thousands
of unindexable subscriptions, huge distinct filters, and what a socket that never reads or asks
for long intervals may hold. A ``VictimProbe`` measures the victim's latency meanwhile (see
test_hostile.py)."""

from __future__ import annotations

import asyncio
import random
import string
from typing import Any

import pytest

from ..waiting import HANG_S
from ..work import Stopwatch
from .client import Client
from .conftest import StartServer
from .hostile import (
    VictimProbe,
    peak_rss_mb,
    rss_mb,
    settled_rss_mb,
    stored,
)
from .hostile_arena import (
    GROWTH_MB,
    LATENCY_S,
    acks_by_cid,
    arena,
    assert_refused,
    publish_all,
)

# It measures a big server's time or memory: it runs in the quiet pass, apart from the first (scripts/test).
pytestmark = pytest.mark.quiet

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
            acks = await acks_by_cid(hostile, {"query", "live", "delete"}, HANG_S)
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
            acks = await acks_by_cid(hostile, cids, HANG_S)
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
            watch = Stopwatch(server.process.pid)
            for start in range(0, 1_000, 100):
                await publisher.send(
                    *[
                        {"c": "publish", "t": "scratch", "data": {"id": n, "n": n}}
                        for n in range(start, start + 100)
                    ]
                )
            await publisher.request({"c": "flush", "cid": "published"})
            took = watch.elapsed()  # (what other work on the machine takes is not counted)
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
            acks = await acks_by_cid(hostile, cids, HANG_S)
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
