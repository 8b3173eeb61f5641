"""A reconnect storm against the real server (docs/protocol.md, Who may connect): thousands of
sockets connecting at once are all accepted, while connections that stall mid-handshake are still
cut.

The clients are raw asyncio streams (raw_socket.py): 2,000 of the library client in this process
would measure the client, not the server."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from server.asgi.uvicorn_protocol import REQUEST_HEAD_TIMEOUT_S

from ..waiting import HANG_S
from ..work import Stopwatch
from .raw_socket import handshake
from .server_process import ServerProcess

# It measures a big server's time or memory: it runs in the quiet pass, apart from the first (scripts/test).
pytestmark = pytest.mark.quiet

STORM = 2_000
STALLED = 200


async def stall(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection that sends half an upgrade request and stops."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n".encode())
    return reader, writer


async def closed_by_server(reader: asyncio.StreamReader, since: float) -> float:
    """Seconds from ``since`` (when it opened) until the server closed the connection."""
    with contextlib.suppress(OSError):
        while await reader.read(4096):
            pass
    return time.monotonic() - since


@pytest.mark.slow
async def test_a_reconnect_storm_is_all_accepted_and_stalled_handshakes_are_still_cut(
    server: ServerProcess,
) -> None:

    # What other work on the machine takes from the server over the test: each handshake's
    # deadline is a timer of the server's, which fires that much later on a busy machine.
    started, whole = time.monotonic(), Stopwatch(server.process.pid)
    stalled = []
    for _ in range(STALLED):
        stalled.append((*await stall(server.port), time.monotonic()))  # (each waits from its opening)
    # Watched from now on, while the storm runs.
    cut = [asyncio.create_task(closed_by_server(reader, opened)) for reader, _, opened in stalled]
    start = asyncio.Event()
    host = [("Host", f"127.0.0.1:{server.port}")]

    async def client() -> str:
        await start.wait()
        return await handshake(server.port, host)

    storm = [asyncio.create_task(client()) for _ in range(STORM)]
    start.set()  # every client connects at once
    async with asyncio.timeout(HANG_S):  # SYNs a full accept queue drops are retried in 1 s, 3 s
        outcomes = await asyncio.gather(*storm)
    failures = [outcome for outcome in outcomes if outcome != "ok"]
    assert not failures, f"{len(failures)} of {STORM} refused, first: {failures[:3]}"
    assert not any("waiting to send a request head" in line for line in server.lines)

    async with asyncio.timeout(REQUEST_HEAD_TIMEOUT_S + HANG_S):
        closed_after = await asyncio.gather(*cut)
    lost = time.monotonic() - started - whole.elapsed()
    assert min(closed_after) > REQUEST_HEAD_TIMEOUT_S - 0.5, "no stalled handshake is cut before its deadline"
    assert max(closed_after) < REQUEST_HEAD_TIMEOUT_S + 5 + lost, "every stalled handshake is cut after it"
    for _, writer, _ in stalled:
        writer.close()
