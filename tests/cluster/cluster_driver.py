"""The cluster model test's side of the wire (test_cluster_model.py): sockets that read every
message as it comes, the cluster every example shares, and the publishers and subscribers."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import redis
import websockets

from ..core.engine_model import Filter
from ..integration.server_process import ServerProcess
from ..waiting import HANG_S

TOPIC = "model"
STREAM = "{test}:stream:" + TOPIC
NODES = 3

UNIQUE = itertools.count(1)  # u of every record, client names, sub ids: unique for the whole run


class Socket:
    """A WebSocket to one node; a task reads every message into ``messages`` as it comes."""

    def __init__(self, ws: websockets.ClientConnection, node: int) -> None:
        self.ws = ws
        self.node = node
        self.messages: list[dict[str, Any]] = []
        self.reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def open(cls, url: str, node: int) -> Socket:
        return cls(
            await websockets.connect(url, max_size=None, open_timeout=HANG_S, ping_interval=None), node
        )

    async def _read(self) -> None:
        try:
            async for frame in self.ws:
                decoded = orjson.loads(frame)
                self.messages.extend(decoded if isinstance(decoded, list) else [decoded])
        except websockets.ConnectionClosed:
            pass

    async def send(self, commands: list[dict[str, Any]]) -> None:
        await self.ws.send(orjson.dumps(commands[0] if len(commands) == 1 else commands).decode())

    async def close(self) -> None:
        await self.ws.close()
        await self.reader

    @property
    def closed_by_server(self) -> bool:
        return self.reader.done()


async def until(done: Callable[[], bool], timeout: float, what: Callable[[], str]) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not done():
        if loop.time() > deadline:
            raise TimeoutError(what())
        await asyncio.sleep(0.02)


@dataclass
class Cluster:
    """What every example shares: the nodes, Redis, the event loop, a socket a node for queries."""

    nodes: list[ServerProcess]
    redis: redis.Redis
    loop: asyncio.AbstractEventLoop
    queries: list[Socket] = field(default_factory=list)
    sow_keys: dict[str, int] = field(default_factory=dict)  # SowKey -> record id

    async def sow(self, node: int) -> dict[int, Any]:
        """The records of the topic on ``node``, by id."""
        socket = self.queries[node]
        qid = f"q{next(UNIQUE)}"
        start = len(socket.messages)
        await socket.send([{"c": "sow", "t": TOPIC, "cid": qid}])

        def ended() -> bool:
            return any(
                m.get("c") == "group_end" and m.get("query_id") == qid for m in socket.messages[start:]
            )

        await until(ended, HANG_S, lambda: f"no answer to a sow on node {node}")
        got = socket.messages[start:]
        del socket.messages[start:]
        return {m["data"]["id"]: m["data"] for m in got if m.get("c") == "sow" and m.get("query_id") == qid}

    async def sows(self) -> list[dict[int, Any]]:
        return list(await asyncio.gather(*(self.sow(node) for node in range(NODES))))

    async def agreed(self) -> list[dict[int, Any]] | None:
        """Every node's SOW once they are all the same (None while they differ)."""
        sows = await self.sows()
        return sows if all(sow == sows[0] for sow in sows) else None

    def tail(self) -> str:
        last = self.redis.xrevrange(STREAM, "+", "-", count=1)
        return last[0][0].decode() if last else "0-0"

    def entries(self, after: str) -> list[tuple[bytes, dict[bytes, bytes]]]:
        return self.redis.xrange(STREAM, min="(" + after, max="+")  # type: ignore[no-any-return]


@dataclass
class Publisher:
    socket: Socket
    name: str
    sent: int = 0


@dataclass
class Subscriber:
    socket: Socket
    sid: str
    delta: bool
    filter: Filter
    closed: bool = False  # closed by the test (its messages so far must begin what it is owed)

    @property
    def cid(self) -> str:
        return "q" + self.sid

    def describe(self) -> str:
        command = "sow_and_delta_subscribe" if self.delta else "sow_and_subscribe"
        state = " (closed)" if self.closed else ""
        return f"subscriber {self.sid}@node{self.socket.node} {command} filter={self.filter.text!r}{state}"
