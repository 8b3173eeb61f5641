"""What the publisher and the subscriber share of a connection: the logon, reading frames, and
connecting again with jittered backoff after the connection is lost, saying why it was lost (the
server's close code and reason) and when it is back, on the ``server.client`` logger."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
import websockets

MAX_BACKOFF_S = 5.0

log = logging.getLogger("server.client")


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


def named(kind: str, identity: Logon, url: str) -> str:
    """A client in a log line: ``publisher prices-feed at ws://host:8000/ws``."""
    name = f" {identity.client_name}" if identity.client_name else ""
    return f"{kind}{name} at {url}"


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
) -> str:
    """Every message of every frame to ``handle``, in order, until the connection closes; then
    why it closed, in words (``closed_because``)."""
    with contextlib.suppress(websockets.ConnectionClosed):
        async for frame in ws:
            for message in messages_of(frame):
                await handle(message)
    return closed_because(ws)


def closed_because(ws: websockets.ClientConnection) -> str:
    """Why ``ws`` closed: the server's close code and reason, or that it went without one."""
    received = ws.protocol.close_rcvd
    if received is not None:
        return f"the server closed the connection: {received.code} {received.reason}".rstrip()
    sent = ws.protocol.close_sent
    if sent is not None:
        return f"the connection was closed: {sent.code} {sent.reason}".rstrip()
    return "the connection was lost without a close frame (the server went away)"


async def connect_again(
    open_: Callable[[], Awaitable[None]], closing: Callable[[], bool], who: str, why: str
) -> None:
    """Say that ``who`` lost its connection and ``why``, then call ``open_`` until it connects (or
    ``closing()`` says to stop), waiting 0.1 s, then twice as long each time up to MAX_BACKOFF_S,
    each wait stretched by up to as much again at random (so that many clients cut off at once
    do not all come back at once); and say when it is back. An attempt that fails for another
    reason than the server being out of reach (it refuses the logon, say) is one line each time
    the reason changes, and the attempts go on (a person may fix it meanwhile): this runs in the
    client's reading task, where an exception would reach nobody but the garbage collector."""
    log.warning("%s: %s; reconnecting", who, why)
    lost = time.monotonic()
    backoff = 0.1
    attempts = 0
    said = ""
    while not closing():
        await asyncio.sleep(backoff * (1 + random.random()))
        backoff = min(backoff * 2, MAX_BACKOFF_S)
        attempts += 1
        try:
            await open_()
        except websockets.InvalidStatus as error:  # an answer, not an outage: 403, 503 ...
            failure = f"the server refused the WebSocket: HTTP {error.response.status_code}"
        except (OSError, websockets.WebSocketException):
            continue  # out of reach (said once, above)
        except Exception as error:
            # (PublishError and SubscriptionError carry the server's words as ``reason``.)
            reason = getattr(error, "reason", None)
            failure = f"the server refused the logon: {reason}" if reason else _described(error)
        else:
            log.warning("%s: reconnected after %.1f s, at attempt %d", who, time.monotonic() - lost, attempts)
            return
        if failure != said:
            said = failure
            log.error("%s: %s; trying again", who, failure)


def _described(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
