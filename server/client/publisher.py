"""A durable publisher (docs/protocol.md, Durability): the server persists, and the publisher never
loses or repeats.

    publisher = Publisher("ws://127.0.0.1:8000/ws", client_name="prices-feed")
    await publisher.connect()
    await publisher.publish("orders", {"order": 1, "qty": 5})
    await publisher.publish_many("orders", rows)           # one frame, one sequence each
    await publisher.wait_persisted()                       # everything sent so far is on disk
    await publisher.close()

Every publish gets the next sequence number for the client name and goes into the publish store
before it is sent. The server's persisted acks (batched: one ``s`` covers every earlier sequence)
remove it from the store. After a reconnect the logon ack says which sequence the server has on
disk; everything newer in the store is sent again with its original sequence, and the server
ignores whatever it had already applied. A refused publish raises ``PublishError`` from the
next wait. A publish to a topic the server does not keep (a typo) passes through as plain
pub/sub; the publisher logs the server's words at WARNING, once per topic, and keeps them in
``publisher.warnings`` (topic -> words).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import orjson
import websockets

from .connection import Logon, connect_again, logged_on, named, read_until_closed
from .store import MemoryPublishStore, PublishStore

log = logging.getLogger("server.client")


class PublishError(Exception):
    """The server refused a publish; ``seq`` is its sequence and ``reason`` the server's words."""

    def __init__(self, seq: int | None, reason: str) -> None:
        self.seq = seq
        self.reason = reason
        super().__init__(f"publish {seq} refused: {reason}")


class Publisher:
    def __init__(
        self,
        url: str,
        client_name: str,
        *,
        user_id: str | None = None,
        password: str | None = None,
        label: str | None = None,
        store: PublishStore | None = None,
        reconnect: bool = True,
        max_frame_bytes: int = 512 * 1024,
    ) -> None:
        self.url = url
        self.client_name = client_name
        self.identity = Logon(client_name, user_id, password, label)
        self.store: PublishStore = store if store is not None else MemoryPublishStore()
        self.reconnect = reconnect
        self.max_frame_bytes = max_frame_bytes
        self.persisted_seq = 0  # the highest sequence the server has on disk
        self._next_seq = self.store.last_seq  # (a file store reopened: after what it holds)
        self._ws: websockets.ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._progress = asyncio.Condition()
        self._errors: list[PublishError] = []
        self.warnings: dict[str, str] = {}  # topic -> the server's words: a topic it does not keep
        self._closing = False
        self._connected = asyncio.Event()

    # -- connection -----------------------------------------------------------------------

    async def connect(self) -> None:
        await self._open()
        self._reader = asyncio.create_task(self._read(), name=f"publisher-{self.client_name}")

    async def _open(self) -> None:
        ws, ack = await logged_on(self.url, self.identity, lambda reason: PublishError(None, reason))
        self._ws = ws
        await self._caught_up(int(ack.get("s", 0)))
        await self._resend()
        self._connected.set()

    async def _caught_up(self, seq: int) -> None:
        async with self._progress:
            self.persisted_seq = max(self.persisted_seq, seq)
            self.store.discard_through(seq)
            self._next_seq = max(self._next_seq, self.store.last_seq, self.persisted_seq)
            self._progress.notify_all()

    async def _resend(self) -> None:
        pending = list(self.store.pending())
        if pending:
            log.info(
                "publisher %s: re-sending %d publishes after %d",
                self.client_name,
                len(pending),
                self.persisted_seq,
            )
        for frame in _frames([message for _, message in pending], self.max_frame_bytes):
            await self._send(frame)

    async def _read(self) -> None:
        while not self._closing:
            assert self._ws is not None
            why = await read_until_closed(self._ws, self._handle)
            if self._closing or not self.reconnect:
                return
            self._connected.clear()
            await connect_again(
                self._open, lambda: self._closing, named("publisher", self.identity, self.url), why
            )

    async def _handle(self, message: dict[str, Any]) -> None:
        if message.get("c") != "ack":
            return
        if "warning" in message:
            self._warn(message)
        seq = message.get("s")
        if message.get("status") == "failure":
            async with self._progress:
                self._errors.append(PublishError(seq, str(message.get("reason"))))
                self._progress.notify_all()
            return
        if message.get("a") == "persisted" and isinstance(seq, int):
            await self._caught_up(seq)

    def _warn(self, ack: dict[str, Any]) -> None:
        """An ack that says its topic is not one the server keeps (docs/protocol.md, Topics the
        server does not keep): said once per topic, in the server's words."""
        topic = str(ack.get("t"))
        if topic not in self.warnings:
            self.warnings[topic] = words = str(ack["warning"])
            log.warning("publisher %s: %s", self.client_name, words)

    # -- publishing -----------------------------------------------------------------------

    async def publish(
        self, topic: str, data: Any, *, delta: bool = False, expiration: float | None = None
    ) -> int:
        """Send one publish; its sequence number. It is on disk once ``wait_persisted(seq)`` returns."""
        return (await self.publish_many(topic, [data], delta=delta, expiration=expiration))[-1]

    async def publish_many(
        self, topic: str, records: list[Any], *, delta: bool = False, expiration: float | None = None
    ) -> list[int]:
        """Send many publishes in as few frames as fit; their sequence numbers."""
        command = "delta_publish" if delta else "publish"
        sequences, messages = [], []
        for data in records:
            self._next_seq += 1
            body: dict[str, Any] = {
                "c": command,
                "t": topic,
                "data": data,
                "s": self._next_seq,
                "a": "persisted",
            }
            if expiration is not None:
                body["e"] = expiration
            message = orjson.dumps(body)
            self.store.add(self._next_seq, message)
            sequences.append(self._next_seq)
            messages.append(message)
        self.store.sync()
        await self._connected.wait()
        for frame in _frames(messages, self.max_frame_bytes):
            await self._send(frame)
        return sequences

    async def _send(self, frame: bytes) -> None:
        ws = self._ws
        if ws is None:
            return
        with contextlib.suppress(websockets.ConnectionClosed):
            await ws.send(frame.decode())  # a lost frame is re-sent from the store on reconnect

    async def wait_persisted(self, seq: int | None = None, timeout: float | None = None) -> None:
        """Wait until the server has every publish up to ``seq`` (default: all sent) on disk."""
        target = self._next_seq if seq is None else seq
        async with self._progress:
            async with asyncio.timeout(timeout):
                await self._progress.wait_for(lambda: self.persisted_seq >= target or bool(self._errors))
            if self._errors:
                error, self._errors = self._errors[0], []
                raise error

    async def close(self) -> None:
        self._closing = True
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.wait([self._reader])  # (suppressing CancelledError here would eat our own)


def _frames(messages: list[bytes], max_bytes: int) -> list[bytes]:
    frames: list[bytes] = []
    batch: list[bytes] = []
    size = 2
    for message in messages:
        if batch and size + len(message) + 1 > max_bytes:
            frames.append(b"[" + b",".join(batch) + b"]")
            batch, size = [], 2
        batch.append(message)
        size += len(message) + 1
    if batch:
        frames.append(b"[" + b",".join(batch) + b"]")
    return frames
