"""Bookmark replays against the real server (issue 27): a socket that asks for a thousand replays of
a durable topic's log from an early time used to make the server read the whole log into memory
once per replay before sending anything (2.2 GB, every other socket held for 22 s). Now each
replay reads the log a chunk at a time as its socket takes what was sent, a socket runs a few
replays at once and the others wait their turn, while a ``VictimProbe`` keeps its round trip short."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
import websockets

from ..waiting import HANG_S
from .client import Client
from .conftest import StartServer
from .hostile import VictimProbe, peak_rss_mb, rss_mb
from .hostile_arena import GROWTH_MB, LATENCY_S, arena, publish_all

# It measures a big server's time or memory: it runs in the quiet pass, apart from the first (scripts/test).
pytestmark = pytest.mark.quiet

SUBSCRIPTIONS = 1_200  # max_subscriptions (1,000) admits 1,000 of them
ATTACK_S = 4.0


def large_records() -> list[dict[str, Any]]:
    return [{"id": n, "blob": f"{n:06d}" + "x" * 100_000} for n in range(200)]


def many_changes() -> list[dict[str, Any]]:
    return [{"id": n % 1000, "v": n, "pad": "x" * 160} for n in range(100_000)]


@pytest.mark.slow
@pytest.mark.parametrize("rows", [large_records, many_changes])
async def test_a_thousand_bookmark_replays_of_a_20_mb_log_are_bounded(
    start_server: StartServer, rows: Callable[[], list[dict[str, Any]]]
) -> None:

    # 20 MB of log either way: 200 records of 100 KB, or 100,000 changes of 200 bytes to 1,000
    # records. The second grew the server by 648 MB and held the victim for 7.5 s; the first
    # closed the replaying socket as a slow consumer, its replays overflowing its queue.
    with arena(start_server) as server:
        publish_all(server, "ledger", rows())
        start = rss_mb(server)
        with VictimProbe(server) as probe:
            # Its close waits 2 s (not the library's 10) for the server's close frame, which is stuck
            # behind the replays it no longer reads; the connection is then dropped.
            hostile = await Client.connect(server.url, max_size=None, max_queue=1, close_timeout=2)
            subscribes = [
                {"c": "subscribe", "t": "ledger", "sub_id": n, "bm": "2000-01-01T00:00:00Z"}
                for n in range(SUBSCRIPTIONS)
            ]
            await hostile.send(*subscribes)
            # A socket that reads, slowly: its replays go on for as long as the attack lasts,
            # ATTACK_S from the first change replayed (on a busy machine the 1,000 subscriptions
            # alone took longer than the attack, which then saw no replay at all).
            replayed = 0
            closed: websockets.ConnectionClosed | None = None
            deadline: float | None = None
            while deadline is None or time.monotonic() < deadline:
                try:
                    message = await hostile.recv(HANG_S if deadline is None else 1.0)
                except TimeoutError:
                    if deadline is None:
                        break  # nothing replayed within the hang guard: failed below
                    continue
                except websockets.ConnectionClosed as error:
                    # Closed as a slow consumer: the replays it asked for must not hurt anyone after it.
                    closed = error
                    await asyncio.sleep(max(0.0, (deadline or 0.0) - time.monotonic()))
                    break
                if message.get("c") == "p":
                    replayed += 1
                    deadline = deadline or time.monotonic() + ATTACK_S
                if hostile.frames % 4 == 0:
                    await asyncio.sleep(0.05)
            await hostile.close()
        grown = peak_rss_mb(server) - start
        probe.result.assert_healthy(LATENCY_S, "a thousand bookmark replays of a 20 MB log")
        # Paced by what the socket takes (in bytes too): one that reads slowly is not closed.
        assert closed is None, f"the replaying socket was closed: {closed}"
        assert replayed > 0, "the replays went on while the socket read"
        assert grown < GROWTH_MB, f"the server grew {grown:.0f} MB"
