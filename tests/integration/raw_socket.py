"""Just enough RFC 6455 over raw asyncio streams for tests that need to send what a library client
would not (any ``Host``, two of them, none, a proxy's headers) or need thousands of clients: an
upgrade request, one masked text frame, unmasked frames back."""

from __future__ import annotations

import asyncio
import base64
import os
import struct

import orjson


def upgrade_request(headers: list[tuple[str, str]]) -> bytes:
    """``GET /ws`` with ``headers`` (in order, as given) and a fresh key."""
    key = base64.b64encode(os.urandom(16)).decode()
    lines = ["GET /ws HTTP/1.1", *(f"{name}: {value}" for name, value in headers)]
    lines += ["Upgrade: websocket", "Connection: Upgrade", f"Sec-WebSocket-Key: {key}"]
    lines += ["Sec-WebSocket-Version: 13", "", ""]
    return "\r\n".join(lines).encode()


def masked_text_frame(payload: bytes) -> bytes:
    """A client's frame (RFC 6455 5.2): FIN, text, masked, payload under 126 bytes."""
    mask = os.urandom(4)
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return struct.pack("!BB", 0x81, 0x80 | len(payload)) + mask + body


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """One unmasked server frame: its opcode and payload."""
    first, second = await reader.readexactly(2)
    length = second & 0x7F
    if length == 126:
        (length,) = struct.unpack("!H", await reader.readexactly(2))
    elif length == 127:
        (length,) = struct.unpack("!Q", await reader.readexactly(8))
    return first & 0x0F, await reader.readexactly(length)


async def heartbeat(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
    """Send ``heartbeat`` on an open socket: ``"ok"`` when it is answered, else what came instead."""
    writer.write(masked_text_frame(b'{"c":"heartbeat"}'))
    while True:
        opcode, payload = await read_frame(reader)
        if opcode == 0x8:
            return f"closed: {payload!r}"
        if opcode == 0x1:
            decoded = orjson.loads(payload)
            messages = decoded if isinstance(decoded, list) else [decoded]
            if any(m.get("c") == "heartbeat" for m in messages):
                return "ok"


async def handshake(port: int, headers: list[tuple[str, str]], host: str = "127.0.0.1") -> str:
    """Open ``/ws`` on ``host:port`` sending ``headers``: ``"ok"`` when the handshake completes and
    a heartbeat is answered, the status code (``"403"``) when it is refused, or what went wrong."""
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError as error:
        return f"connect: {error!r}"
    try:
        writer.write(upgrade_request(headers))
        head = await reader.readuntil(b"\r\n\r\n")
        status = head.split(b" ", 2)[1].decode() if head.startswith(b"HTTP/1.1 ") else repr(head[:40])
        if status != "101":
            return status
        return await heartbeat(reader, writer)
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as error:
        return f"dropped: {error!r}"
    finally:
        writer.close()
