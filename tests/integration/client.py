"""A test client over a real WebSocket: sends commands, reads messages out of array frames."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson
import websockets

from ..waiting import HANG_S

Message = dict[str, Any]


class Client:
    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws
        self.pending: deque[Message] = deque()
        self.frames = 0
        self.settles = 0

    @classmethod
    async def connect(cls, url: str, **kwargs: Any) -> Client:
        # No keepalive pings of the client's own: one answered late (this test's loop busy reading
        # 100,000 acks on two loaded cores) closes the socket with 1011, a time limit in disguise.
        # The server's heartbeat (heartbeat_s) still tells a live socket from a dead one.
        kwargs.setdefault("ping_interval", None)
        kwargs.setdefault("open_timeout", HANG_S)
        return cls(await websockets.connect(url, **kwargs))

    async def close(self) -> None:
        await self.ws.close()

    async def send(self, *commands: Message) -> None:
        await self.ws.send(orjson.dumps(commands[0] if len(commands) == 1 else list(commands)).decode())

    async def recv(self, timeout: float = HANG_S) -> Message:
        while not self.pending:
            async with asyncio.timeout(timeout):
                frame = await self.ws.recv()
            self.frames += 1
            decoded = orjson.loads(frame)
            self.pending.extend(decoded if isinstance(decoded, list) else [decoded])
        return self.pending.popleft()

    async def until(self, done: Callable[[Message], bool], timeout: float = HANG_S) -> list[Message]:
        """Every message up to and including the first for which ``done`` is true."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        seen: list[Message] = []
        while True:
            message = await self.recv(max(0.01, deadline - loop.time()))
            seen.append(message)
            if done(message):
                return seen

    async def ack(self, cid: Any, kind: str = "processed", timeout: float = HANG_S) -> list[Message]:
        return await self.until(
            lambda m: m.get("c") == "ack" and m.get("cid") == cid and m["a"] == kind, timeout
        )

    async def request(self, command: Message, kind: str = "processed") -> list[Message]:
        await self.send(command)
        return await self.ack(command["cid"], kind)

    async def settled(self) -> list[Message]:
        """Every message the server queued for this socket before it answered a flush of it: all
        that changes the server already acknowledged to their senders made for it. A read to an
        event, where a quiet period (``silence``) is one a busy machine stretches past; it needs
        the change's sender to have had its ack (``request``), and no conflation interval. A
        bookmark's replay is not one of them (it runs after the flush is answered): read it to its
        ``completed`` ack first."""
        self.settles += 1
        cid = f"settled {self.settles}"
        got = await self.request({"c": "flush", "cid": cid})
        return [m for m in got if not (m.get("c") == "ack" and m.get("cid") == cid)]

    async def silence(self, seconds: float = 0.3) -> list[Message]:
        """Whatever arrives within ``seconds``: for what is timed by the protocol itself (a
        conflation interval, an expiry); otherwise ``settled``."""
        got = list(self.pending)
        self.pending.clear()
        try:
            while True:
                got.append(await self.recv(seconds))
        except TimeoutError:
            return got
