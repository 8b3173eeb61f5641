"""The load client: picows sockets in this process (the cheapest Python client, about 2-3 us of
CPU per message received), speaking each peer's dialect (peers.py).

Subscribers count deliveries without parsing: each delivered update carries its dialect's marker
once. The publisher sends the same updates to every peer, grouped in frames as the run asks; a
few subscribers ("timed") also read the send time each update carries, for latency.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson
from picows import WSFrame, WSListener, WSMsgType, WSTransport, ws_connect

# What each delivered update contains exactly once, by dialect and subscription kind.
MARKERS = {"sowpush": b'"c":"p"', "relay": b'"c":"publish"', "socketio": b'"id":'}
SENT = b'"sent":'

# picows logs every pause and resume of writing, which a publisher ahead of its server does often.
logging.getLogger("picows").setLevel(logging.ERROR)


def record(n: int, records: int, sent_ns: int = 0) -> dict[str, object]:
    """Update ``n``: a 10-field record, one of ``records`` keys, changing price, quantity and time."""
    return {
        "id": n % records,
        "sym": "MSFT",
        "px": 101.25 + n % 7,
        "qty": n,
        "side": "B",
        "trader": "t" + str(n % 13),
        "venue": "XNAS",
        "sent": sent_ns,
        "status": "open",
        "note": "fan-out benchmark",
    }


def encode(dialect: str, batched: bool, updates: list[dict[str, object]]) -> list[bytes]:
    """The WebSocket messages that publish ``updates`` (one frame's worth) in ``dialect``."""
    if dialect == "socketio":
        if batched:
            return [b'42["publish",' + orjson.dumps(updates) + b"]"]
        return [b'42["publish",' + orjson.dumps(update) + b"]" for update in updates]
    commands = [{"c": "publish", "t": "bench", "data": update} for update in updates]
    return [orjson.dumps(commands[0] if len(commands) == 1 else commands)]


@dataclass
class Counter(WSListener):  # type: ignore[misc]
    marker: bytes
    expected: int = 0
    timed: bool = False
    seen: int = 0
    received_bytes: int = 0
    latencies_ns: list[int] = field(default_factory=list)
    done: asyncio.Future[None] | None = None
    socketio: bool = False
    opened: asyncio.Future[bytes] | None = None

    def __post_init__(self) -> None:
        super().__init__()

    def on_ws_frame(self, transport: WSTransport, frame: WSFrame) -> None:
        if frame.msg_type not in (WSMsgType.TEXT, WSMsgType.BINARY, WSMsgType.CONTINUATION):
            if frame.msg_type == WSMsgType.PING:
                transport.send_pong(frame.get_payload_as_bytes())
            return
        payload = frame.get_payload_as_bytes()
        if self.opened is not None and not self.opened.done():
            self.opened.set_result(payload)
            return
        if self.socketio and payload == b"2":  # Engine.IO ping: answer or be dropped
            transport.send(WSMsgType.TEXT, b"3")
            return
        self.received_bytes += len(payload)
        count = payload.count(self.marker)
        if self.timed and count:
            now = time.perf_counter_ns()
            at = payload.find(SENT)
            while at >= 0:
                end = at + len(SENT)
                stop = end
                while 48 <= payload[stop] <= 57:
                    stop += 1
                self.latencies_ns.append(now - int(payload[end:stop]))
                at = payload.find(SENT, stop)
        self.seen += count
        if self.done is not None and not self.done.done() and self.seen >= self.expected:
            self.done.set_result(None)


@dataclass
class Client:
    transport: WSTransport
    listener: Counter

    async def first_message(self) -> bytes:
        loop = asyncio.get_running_loop()
        self.listener.opened = loop.create_future()
        async with asyncio.timeout(10):
            return await self.listener.opened

    def send(self, message: bytes) -> None:
        self.transport.send(WSMsgType.TEXT, message)


async def connect(url: str, dialect: str, timed: bool = False) -> Client:
    listener = Counter(MARKERS[dialect], timed=timed, socketio=dialect == "socketio")
    listener.opened = asyncio.get_running_loop().create_future()
    transport, _ = await ws_connect(lambda: listener, url, max_frame_size=1 << 30)
    client = Client(transport, listener)
    if dialect == "socketio":  # Engine.IO open, then the Socket.IO connect of the main namespace
        async with asyncio.timeout(10):
            await listener.opened
        client.send(b"40")
        await client.first_message()
    listener.opened = None
    return client


async def subscribe(client: Client, dialect: str, index: int, command: str, filter_: str | None) -> None:
    if dialect != "sowpush":
        return
    request: dict[str, object] = {"c": command, "t": "bench", "sub_id": index, "cid": index}
    if filter_ is not None:
        request["filter"] = filter_
    loop = asyncio.get_running_loop()
    client.listener.opened = loop.create_future()
    client.send(orjson.dumps(request))
    async with asyncio.timeout(10):
        ack = await client.listener.opened
    client.listener.opened = None
    if b'"failure"' in ack:
        raise RuntimeError(f"subscribe refused: {ack!r}")


@dataclass
class Crowd:
    """The subscribers and the publisher of one run."""

    subscribers: list[Client]
    publisher: Client

    @classmethod
    async def open(
        cls,
        url: str,
        dialect: str,
        count: int,
        timed: int = 0,
        command: str = "subscribe",
        filter_for: Callable[[int], str | None] = lambda n: None,
    ) -> Crowd:
        subscribers = []
        for index in range(count):
            client = await connect(url, dialect, timed=index < timed)
            await subscribe(client, dialect, index, command, filter_for(index))
            subscribers.append(client)
        return cls(subscribers, await connect(url, dialect))

    def expect(self, per_subscriber: int | list[int]) -> asyncio.Future[list[None]]:
        loop = asyncio.get_running_loop()
        waits = []
        for index, client in enumerate(self.subscribers):
            listener = client.listener
            listener.seen = 0
            listener.received_bytes = 0
            listener.latencies_ns.clear()
            want = per_subscriber if isinstance(per_subscriber, int) else per_subscriber[index]
            listener.expected = want
            listener.done = loop.create_future()
            if want == 0:
                listener.done.set_result(None)
            waits.append(listener.done)
        return asyncio.gather(*waits)

    def latencies_ns(self) -> list[int]:
        return [value for client in self.subscribers for value in client.listener.latencies_ns]

    async def close(self) -> None:
        for client in [*self.subscribers, self.publisher]:
            client.transport.disconnect()
        await asyncio.sleep(0.05)
