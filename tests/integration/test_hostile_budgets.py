"""What one socket's commands may cost, against the real server: a transaction of costly deletes, a
socket of a thousand differently sorted windows and an order-by of thousands of terms each used
to hold or grow the server for everyone (issue 27); now each is refused or bounded while a
``VictimProbe`` keeps its round trip short."""

from __future__ import annotations

import pytest

from ..waiting import HANG_S
from .client import Client
from .conftest import StartServer
from .hostile import VictimProbe, peak_rss_mb, rss_mb, stored
from .hostile_arena import GROWTH_MB, LATENCY_S, acks_by_cid, arena, assert_refused, publish_all

# It measures a big server's time or memory: it runs in the quiet pass, apart from the first (scripts/test).
pytestmark = pytest.mark.quiet

BIG_ROWS = 20_000


def big_rows(count: int) -> list[dict[str, object]]:
    return [{"id": n, "desk": f"d{n % 7}", "qty": n % 97, "px": n * 0.5} for n in range(count)]


@pytest.mark.slow
async def test_a_transaction_of_costly_deletes_does_not_stall_the_others(start_server: StartServer) -> None:
    # 600 deletes by filter on a topic of 20,000 records in one tx held every other socket for 6 s.
    with arena(start_server) as server:
        publish_all(server, "big", big_rows(BIG_ROWS))
        before = stored(server, "big")
        with VictimProbe(server) as probe:
            hostile = await Client.connect(server.url, max_size=None)
            deletes = [{"c": "sow_delete", "t": "big", "filter": f"/qty = {n % 97}"} for n in range(600)]
            await hostile.send(*[{"c": "tx", "cid": f"tx{n}", "cmds": deletes} for n in range(5)])
            acks = await acks_by_cid(hostile, {f"tx{n}" for n in range(5)}, HANG_S)
        probe.result.assert_healthy(LATENCY_S, "a transaction of 600 deletes by filter")
        for ack in acks.values():
            assert_refused(ack, "bad message: cmds[")
        assert stored(server, "big") == before  # refused whole: nothing applied


@pytest.mark.slow
async def test_a_thousand_differently_sorted_windows_are_bounded(start_server: StartServer) -> None:
    # One socket with 1,000 one-row windows, each with its own orderby, on 50,000 records grew
    # the server from 64 MB to 5.35 GB (within max_subscriptions).
    with arena(start_server) as server:
        publish_all(server, "big", big_rows(50_000))
        start = rss_mb(server)
        with VictimProbe(server) as probe:
            hostile = await Client.connect(server.url, max_size=None)
            windows = [
                {
                    "c": "sow_and_subscribe",
                    "t": "big",
                    "cid": n,
                    "top_n": 1,
                    "orderby": f"/qty, /px DESC, /x{n}",
                }
                for n in range(1000)
            ]
            for first in range(0, 1000, 100):
                await hostile.send(*windows[first : first + 100])
            acks = await acks_by_cid(hostile, set(range(1000)), HANG_S)
        probe.result.assert_healthy(LATENCY_S, "a thousand differently sorted windows")
        refused = [ack for ack in acks.values() if ack["status"] == "failure"]
        assert refused, "every window was admitted"
        for ack in refused:
            assert_refused(ack, "invalid options: window orders:")
        grown = peak_rss_mb(server) - start
        assert grown < GROWTH_MB, f"the server grew {grown:.0f} MB"


@pytest.mark.slow
async def test_an_orderby_of_thousands_of_terms_is_refused(start_server: StartServer) -> None:
    # A one-off sow with top_n 1 and an 8 KB orderby of 2,000 terms held another socket for 18 s.
    with arena(start_server) as server:
        publish_all(server, "big", big_rows(BIG_ROWS))
        with VictimProbe(server) as probe:
            hostile = await Client.connect(server.url, max_size=None)
            long = ",".join(f"/f{n}" for n in range(2000))  # 12 KB
            many = ",".join(f"/{n}" for n in range(500))  # under 4 KB
            await hostile.send(
                {"c": "sow", "t": "big", "cid": "sow", "top_n": 1, "orderby": long},
                {"c": "sow_and_subscribe", "t": "big", "cid": "window", "top_n": 1, "orderby": long},
                {"c": "sow", "t": "big", "cid": "many", "top_n": 1, "orderby": many},
            )
            acks = await acks_by_cid(hostile, {"sow", "window", "many"}, HANG_S)
        probe.result.assert_healthy(LATENCY_S, "an orderby of 2,000 terms")
        assert_refused(acks["sow"], "invalid order by: longer than 4096 characters")
        assert_refused(acks["window"], "invalid order by: longer than 4096 characters")
        assert_refused(acks["many"], "invalid order by: more than 16 fields")


@pytest.mark.slow
async def test_a_socket_is_not_cut_for_a_pong_the_server_has_not_read_yet(start_server: StartServer) -> None:
    # The server stops reading a socket while its earlier frame is worked through, so a pong
    # waits unread; with a ping timeout of 1 s, a frame of a few seconds of queries closed an
    # honest socket with 1011.
    with arena(start_server, {"heartbeat_s": 1}) as server:
        publish_all(server, "big", big_rows(BIG_ROWS))
        client = await Client.connect(server.url, max_size=None, ping_interval=None)
        queries = [
            {"c": "sow", "t": "big", "cid": n, "orderby": f"/desk, /px DESC, /qty, /x{n}", "top_n": 1}
            for n in range(50)
        ]
        await client.send(*queries[:25])
        await client.send(*queries[25:])  # waits unread while the first frame runs: so does the pong
        acks = await acks_by_cid(client, set(range(50)), HANG_S)
        assert all(ack["status"] == "success" for ack in acks.values())
        await client.send({"c": "heartbeat"})
        assert (await client.until(lambda m: m["c"] == "heartbeat"))[-1] == {"c": "heartbeat"}
