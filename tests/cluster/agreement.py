"""What PROTOCOL 10 promises of the nodes' SOWs, as the one check every cluster test uses.

Every node applies one ordered log per topic, each at its own pace. So at any moment a node may
*lag*: serve a state the log passed through earlier. It may never *diverge*: serve a state the log
never passed through, or go back behind a state every node had already reached. Once the cluster
is quiet, every node serves the same records.

A test that knows the log's order (its own changes, each acked before the next is sent) writes
them into a ``OneLog`` and waits with ``settled``: at every look, each node's SOW must be one of
the log's states. A test whose writers race (the order is the cluster's to choose) waits with
``quiet``: the nodes may differ while changes are in flight, and must agree once they are done.
Neither ever decides on the clock: they wait for the state they mean (tests/waiting.py).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any

import websockets

from ..integration.client import Client
from ..integration.server_process import ServerProcess
from ..waiting import HANG_S, eventually_async

Sow = dict[Any, Any]
# What a look at a node can meet while it starts, stops or cannot reach Redis: no answer.
UNANSWERED = (OSError, websockets.InvalidStatus, websockets.ConnectionClosed, TimeoutError)


class Diverged(AssertionError):
    """A node served a state the one log never passed through (or went back behind one that
    every node had reached): what PROTOCOL 10 forbids, and never a matter of waiting longer."""


def health(node: ServerProcess) -> int:
    try:
        with urllib.request.urlopen(node.http + "/healthz", timeout=HANG_S) as answer:
            status: int = answer.status
            return status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


async def sow(node: ServerProcess, topic: str) -> Sow:
    """The records of ``topic`` on ``node``, by their key field ``id`` (or ``sym``)."""
    client = await Client.connect(node.url)
    try:
        got = await client.request({"c": "sow", "t": topic, "cid": "q"})
        got += await client.until(lambda m: m.get("c") == "group_end")
        return {_key(m["data"]): m["data"] for m in got if m["c"] == "sow"}
    finally:
        await client.close()


def _key(record: dict[str, Any]) -> Any:
    return record["id"] if "id" in record else record["sym"]


async def look(nodes: list[ServerProcess], topic: str, serving_only: bool) -> list[Sow | None]:
    """Each node's SOW of ``topic`` now; None for a node that does not answer (and, with
    ``serving_only``, for one whose ``/healthz`` is not 200 before and after the query)."""
    sows: list[Sow | None] = []
    for node in nodes:
        if serving_only and health(node) != 200:
            sows.append(None)
            continue
        try:
            records: Sow | None = await sow(node, topic)
        except UNANSWERED:
            records = None
        if serving_only and health(node) != 200:
            records = None
        sows.append(records)
    return sows


def _sizes(sows: list[Sow | None]) -> str:
    return str(["-" if s is None else len(s) for s in sows])


class OneLog:
    """The states a topic passes through as its log is applied, in the order the test made it.
    ``floor`` is the position every node has been seen at together: none may serve less again."""

    def __init__(self) -> None:
        self.states: list[Sow] = [{}]
        self.floor = 0

    @property
    def last(self) -> int:
        return len(self.states) - 1

    def published(self, *records: dict[str, Any]) -> None:
        for record in records:
            self.states.append({**self.states[-1], _key(record): record})

    def position(self, records: Sow) -> int | None:
        """The latest position at which the log held exactly ``records``, at or after ``floor``."""
        for position in range(self.last, self.floor - 1, -1):
            if self.states[position] == records:
                return position
        return None


async def settled(nodes: list[ServerProcess], topic: str, log: OneLog, serving_only: bool = False) -> Sow:
    """Wait until every node serves the log's last state; at every look, every node that answers
    must serve a state of the log at or after its floor (else ``Diverged``)."""

    async def at_the_end() -> Sow | None:
        sows = await look(nodes, topic, serving_only)
        positions = []
        for index, records in enumerate(sows):
            if records is None:
                positions.append(None)
                continue
            position = log.position(records)
            if position is None:
                raise Diverged(
                    f"node {index} serves {len(records)} records, a state the log never passed through "
                    f"at or after position {log.floor} of {log.last} (nodes: {_sizes(sows)}): "
                    f"{sorted(records)[:50]}"
                )
            positions.append(position)
        if all(p == log.last for p in positions):
            log.floor = log.last
            return log.states[log.last]
        return None

    return await eventually_async(at_the_end, lambda: f"nodes not at the log's end ({log.last} changes)")


async def quiet(nodes: list[ServerProcess], topic: str, expected: int) -> list[Sow]:
    """Every node's SOW of ``topic`` once all of them serve the same ``expected`` records (while
    racing writers' changes are in flight they may differ: that is lag, not divergence)."""
    last: list[Sow | None] = []

    async def agreed() -> list[Sow] | None:
        nonlocal last
        last = await look(nodes, topic, serving_only=False)
        first = last[0]
        if first is None or len(first) != expected or any(s != first for s in last):
            return None
        return [s for s in last if s is not None]

    return await eventually_async(agreed, lambda: f"the nodes serve {_sizes(last)} of {expected} records")
