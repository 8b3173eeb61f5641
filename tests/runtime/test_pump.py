"""The pump (runtime/pump.py): after the runtime feeds the core, it wakes each task the core left
work for, and only those; the core itself never calls out."""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

import orjson

from server.asgi.uvicorn_protocol import SocketHandle
from server.core.broker.changelog import NameClaim
from server.core.log.shared import SharedLog
from server.core.protocol.commands import Header, Logon
from server.core.settings.config import parse_config
from server.runtime.hub import Hub
from server.runtime.pump import Pump
from tests.core.harness import Harness

from ..waiting import eventually_async

TOPICS: list[dict[str, Any]] = [
    {"name": "orders", "key": ["/id"], "durable": True},
    {"name": "quotes", "key": ["/id"]},
]


def woken(pump: Pump) -> set[str]:
    events = {"log": pump.log, "replays": pump.replays, "crowded": pump.crowded, "timers": pump.timers}
    events["proposals"] = pump.proposals
    return {name for name, event in events.items() if event.is_set()}


def test_each_task_is_woken_for_the_work_the_core_left_and_no_other() -> None:
    h = Harness(topics=TOPICS, server={"queue_max_messages": 8})
    pump = Pump(h.broker)
    feed, reader = h.peer(), h.peer()
    reader.send({"c": "subscribe", "t": "quotes", "sub_id": "q"})
    pump()
    assert woken(pump) == set(), "a subscription leaves the other tasks nothing"
    feed.send({"c": "publish", "t": "orders", "data": {"id": 1}})
    pump()
    assert woken(pump) == {"log"}, "a durable change waits to be written"
    pump.log.clear()
    feed.send({"c": "subscribe", "t": "orders", "sub_id": "o", "bm": "0"})
    pump()
    assert woken(pump) == {"log", "replays"}, "the entry is not written yet; a replay waits"
    h.broker.durability.take()  # what the log writer and the replays task do
    h.broker.replays.clear()
    pump.log.clear()
    pump.replays.clear()
    for n in range(4):  # four frames: four runs, the last three to a queue holding some
        feed.send({"c": "publish", "t": "quotes", "data": {"id": n}})
    pump()
    assert woken(pump) == {"crowded"}, "the reader's queue passed a quarter of its bound"


def test_the_timer_task_is_woken_for_an_earlier_timer_only() -> None:
    h = Harness(topics=TOPICS)
    pump = Pump(h.broker)
    feed = h.peer()
    pump()
    assert not pump.timers.is_set() and pump.timers_wake_at == math.inf
    feed.send({"c": "publish", "t": "quotes", "data": {"id": 1}, "e": 10})
    pump()
    assert pump.timers.is_set(), "the timer task slept with nothing due"
    pump.timers.clear()
    pump.timers_wake_at = h.clock.now + 10  # what the task sleeps until now
    feed.send({"c": "publish", "t": "quotes", "data": {"id": 2}, "e": 20})
    pump()
    assert not pump.timers.is_set(), "a later timer leaves it asleep"
    feed.send({"c": "publish", "t": "quotes", "data": {"id": 3}, "e": 5})
    pump()
    assert pump.timers.is_set(), "an earlier one wakes it"


async def test_a_cluster_nodes_writer_and_waiting_sockets_are_woken() -> None:
    shared = SharedLog("node")
    h = Harness(topics=TOPICS, log=lambda _broker: shared)
    pump = Pump(h.broker, shared)
    peer = h.peer()
    header = Header("logon", "l", frozenset())
    shared.claim_name(NameClaim(peer.session, header, Logon("desk", None, None, None), None))
    waiting = pump.settled.setdefault(peer.session, asyncio.Event())
    pump()
    assert woken(pump) == {"proposals"} and not waiting.is_set(), "the claim waits for Redis"
    shared.claimed(shared.claims.popleft())  # Redis answered: the socket has nothing in flight
    pump()
    assert waiting.is_set() and peer.session not in pump.settled and not shared.settled


async def test_a_record_expires_when_its_lifetime_ends_on_a_live_hub() -> None:
    config = parse_config({"topic": [{"name": "quotes", "key": ["/id"]}]})
    hub = Hub(config, time.time)

    async def send(frame: bytes) -> None:
        return None

    async def close(code: int, reason: str) -> None:
        return None

    connection = hub.connect(send, SocketHandle(None, close))
    try:
        await asyncio.sleep(0.01)  # the timer task sleeps: nothing is due
        command: dict[str, Any] = {"c": "publish", "t": "quotes", "data": {"id": 1}, "e": 0.05}
        await connection.receive(orjson.dumps(command))
        records = hub.engine.broker.topics["quotes"].records
        assert records

        async def expired() -> bool:
            return not records

        await eventually_async(expired, "the timer task was woken for the new expiry", step=0.01)
    finally:
        hub.disconnect(connection)
        await hub.shutdown()
