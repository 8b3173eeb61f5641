"""The hub: owns the engine, knows every live connection, closes them all on shutdown."""

from __future__ import annotations

import asyncio
import contextlib
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
        self.clock = clock
        self.engine = Engine(config, clock)
        self.connections: set[Connection] = set()
        self.shutting_down = False
        self._timer_changed = asyncio.Event()
        self._timer_task: asyncio.Task[None] | None = None
        self.engine.on_timer = lambda due: self._timer_changed.set()

    async def _run_timers(self) -> None:
        """Sleep until the engine's next interval ends (or an earlier one is scheduled), then advance."""
        engine = self.engine
        while True:
            due = engine.next_due()
            timeout = None if due is None else max(0.0, due - self.clock())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._timer_changed.wait(), timeout)
            self._timer_changed.clear()
            try:
                engine.advance(self.clock())
            except Exception:
                log.exception("subscription conflation timer failed; carrying on")

    def start(self) -> None:
        """Start the timers (expirations, subscription conflation); also done on the first connection."""
        if self._timer_task is None:
            self._timer_task = asyncio.create_task(self._run_timers(), name="timers")

    def connect(self, send: SendFrame, handle: SocketHandle) -> Connection:
        self.start()
        settings = self.config.server
        connection = Connection(self.engine, send, handle, settings.max_message_bytes, settings.binary_frames)
        self.connections.add(connection)
        connection.start()
        return connection

    def disconnect(self, connection: Connection) -> None:
        self.connections.discard(connection)
        connection.finish()

    async def shutdown(self) -> None:
        """Close every socket with 1001 before the server stops accepting work."""
        self.shutting_down = True
        if self._timer_task is not None:
            self._timer_task.cancel()
        connections = list(self.connections)
        if connections:
            log.info("closing %d connection(s) with 1001", len(connections))
        await asyncio.gather(
            *(c.shutdown(CLOSE_GOING_AWAY, "server shutting down") for c in connections),
            return_exceptions=True,
        )
