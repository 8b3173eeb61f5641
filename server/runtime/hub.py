"""The hub: owns the engine, knows every live connection, closes them all on shutdown."""

from __future__ import annotations

import asyncio
import logging
import time

from ..core.config import Config
from ..core.engine import Clock, Engine
from .connection import Connection, SendFrame
from .transport import SocketHandle

log = logging.getLogger("server.runtime")

CLOSE_GOING_AWAY = 1001


class Hub:
    def __init__(self, config: Config, clock: Clock = time.time) -> None:
        self.config = config
        self.engine = Engine(config, clock)
        self.connections: set[Connection] = set()
        self.shutting_down = False

    def connect(self, send: SendFrame, handle: SocketHandle) -> Connection:
        connection = Connection(self.engine, send, handle, self.config.server.max_message_bytes)
        self.connections.add(connection)
        connection.start()
        return connection

    def disconnect(self, connection: Connection) -> None:
        self.connections.discard(connection)
        connection.finish()

    async def shutdown(self) -> None:
        """Close every socket with 1001 before the server stops accepting work."""
        self.shutting_down = True
        connections = list(self.connections)
        if connections:
            log.info("closing %d connection(s) with 1001", len(connections))
        await asyncio.gather(
            *(c.shutdown(CLOSE_GOING_AWAY, "server shutting down") for c in connections),
            return_exceptions=True,
        )
