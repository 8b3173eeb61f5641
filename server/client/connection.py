"""What the publisher and the subscriber share of a connection: the logon, reading frames, and
connecting again with jittered backoff after the connection is lost."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
import websockets

MAX_BACKOFF_S = 5.0


def messages_of(frame: str | bytes) -> list[dict[str, Any]]:
    """The messages of one frame (an object or an array of them)."""
    decoded = orjson.loads(frame)
    return decoded if isinstance(decoded, list) else [decoded]


@dataclass(frozen=True, slots=True)
class Logon:
    """Who a connection is, and (``label``) what it is to people reading the server's ``/status``."""

    client_name: str | None = None
    user_id: str | None = None
    password: str | None = None
    label: str | None = None

    def command(self) -> dict[str, Any]:
        """The ``logon`` command, with the fields given."""
        fields = {
            "client_name": self.client_name,
            "user_id": self.user_id,
            "pw": self.password,
            "label": self.label,
        }
        given = {name: value for name, value in fields.items() if value is not None}
        return {"c": "logon", "cid": "logon", **given}


async def logged_on(
    url: str, identity: Logon, refused: Callable[[str], Exception]
) -> tuple[websockets.ClientConnection, dict[str, Any]]:
    """A new connection, logged on as ``identity``, and the logon's ack; ``refused(reason)`` is
    raised when the server refuses it."""
    ws = await websockets.connect(url, max_size=None)
    logon = identity.command()
    await ws.send(orjson.dumps(logon).decode())
    while True:
        for message in messages_of(await ws.recv()):
            if message.get("c") == "ack" and message.get("cid") == "logon":
                if message.get("status") != "success":
                    await ws.close()
                    raise refused(str(message.get("reason")))
                return ws, message


async def read_until_closed(
    ws: websockets.ClientConnection, handle: Callable[[dict[str, Any]], Awaitable[None]]
) -> None:
    """Every message of every frame to ``handle``, in order, until the connection closes."""
    with contextlib.suppress(websockets.ConnectionClosed):
        async for frame in ws:
            for message in messages_of(frame):
                await handle(message)


async def connect_again(open_: Callable[[], Awaitable[None]], closing: Callable[[], bool]) -> None:
    """Call ``open_`` until it connects (or ``closing()`` says to stop), waiting 0.1 s, then twice
    as long each time up to MAX_BACKOFF_S, each wait stretched by up to as much again at random
    (so that many clients cut off at once do not all come back at once)."""
    backoff = 0.1
    while not closing():
        await asyncio.sleep(backoff * (1 + random.random()))
        backoff = min(backoff * 2, MAX_BACKOFF_S)
        try:
            await open_()
            return
        except (OSError, websockets.WebSocketException):
            continue
