"""Bookmark replays in the runtime (runtime/replays.py) over a recording log: a socket's replays
run a few at a time in the order they were asked for, chunk reads are bounded across every
replay, and each subscription still gets its replay, ``completed``, then live."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from server.core.broker.bookmarks import ReplayRequest
from server.core.sow.txlog import LogEntry
from server.runtime import logreader, redis_log, replays
from server.runtime.pump import Pump
from server.runtime.replays import Replays
from tests.core.harness import Harness, Peer, entries_of
from tests.waiting import eventually_async

TOPICS = [{"name": "orders", "key": ["/id"], "durable": True}]


class RecordingLog:
    """Hands each replay ``log`` in chunks of one entry, counting replays and reads under way."""

    def __init__(self, log: list[LogEntry]) -> None:
        self.log = log
        self.started: list[Any] = []
        self.running: dict[Any, int] = {}
        self.most_running = 0
        self.reading = self.most_reading = 0

    def __call__(self, request: ReplayRequest) -> AsyncGenerator[list[LogEntry]]:
        return self._chunks(request)

    async def _chunks(self, request: ReplayRequest) -> AsyncGenerator[list[LogEntry]]:
        session = request.subscription.session
        self.started.append((session, request.subscription.sub_id))
        self.running[session] = self.running.get(session, 0) + 1
        self.most_running = max(self.most_running, self.running[session])
        try:
            for entry in self.log:
                if entry.lsn <= request.until_lsn:
                    self.reading += 1
                    self.most_reading = max(self.most_reading, self.reading)
                    await asyncio.sleep(0.001)
                    self.reading -= 1
                    yield [entry]
        finally:
            self.running[session] -= 1


async def runner_idle(runner: Replays) -> None:
    async def idle() -> bool:
        return not runner._tasks

    await eventually_async(idle, "replays still running", step=0.002)


def durable(h: Harness) -> list[LogEntry]:
    """What the log writer does: everything pending is on disk."""
    log = entries_of(h)
    h.broker.made_durable(h.broker.durability.last_lsn)
    return log


async def test_a_sockets_replays_run_a_few_at_a_time_in_order_then_go_live() -> None:
    h = Harness(topics=TOPICS)
    feed = h.peer()
    feed.send(*[{"c": "publish", "t": "orders", "data": {"id": n}} for n in range(5)])
    source = RecordingLog(durable(h))
    runner = Replays(h.broker, source, Pump(h.broker), on_disk=True)
    watchers: list[Peer] = [h.peer(), h.peer()]
    for watcher in watchers:
        for n in range(12):
            command = {"c": "subscribe", "t": "orders", "sub_id": n, "bm": "0", "a": "completed", "cid": n}
            watcher.send(command)
    while h.broker.replays:
        runner.add(h.broker.replays.popleft())
    feed.send({"c": "publish", "t": "orders", "data": {"id": 99}})  # live, while they wait
    durable(h)
    await runner_idle(runner)
    assert not runner._tasks and not runner._lanes
    assert source.most_running == replays.PER_SOCKET
    assert source.most_reading <= replays.READS_IN_FLIGHT
    for watcher in watchers:
        assert [n for session, n in source.started if session is watcher.session] == list(range(12))
        got = watcher.take()
        for n in range(12):
            mine = [m for m in got if m.get("sids", [m.get("sub_id")])[0] == n or m.get("cid") == n]
            kinds = [(m["c"], m.get("data", {}).get("id")) for m in mine]
            assert kinds == [*[("p", k) for k in range(5)], ("ack", None), ("p", 99)], kinds


def test_the_bounds_are_those_the_docs_state() -> None:
    """docs/protocol.md (Durability, Limits) and the README name these numbers."""
    assert (replays.PER_SOCKET, replays.READS_IN_FLIGHT) == (4, 2)
    assert (logreader.CHUNK_BYTES, logreader.CHUNK_ENTRIES) == (256 * 1024, 1000)
    assert (redis_log.REPLAY_BYTES, redis_log.REPLAY_COUNT) == (256 * 1024, 256)


async def test_a_replay_unsubscribed_while_it_waits_never_starts() -> None:
    h = Harness(topics=TOPICS)
    h.peer().send(*[{"c": "publish", "t": "orders", "data": {"id": n}} for n in range(3)])
    source = RecordingLog(durable(h))
    runner = Replays(h.broker, source, Pump(h.broker), on_disk=True)
    watcher = h.peer()
    for n in range(6):
        watcher.send({"c": "subscribe", "t": "orders", "sub_id": n, "bm": "0"})
    while h.broker.replays:
        runner.add(h.broker.replays.popleft())
    watcher.send({"c": "unsubscribe", "sub_id": 5})
    await runner_idle(runner)
    assert [n for _, n in source.started] == [0, 1, 2, 3, 4] and not runner._lanes
