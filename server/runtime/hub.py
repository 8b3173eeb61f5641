"""The hub: builds the engine and the log it sends its changes to, knows every live connection,
runs the tasks the core leaves work for (timers, bookmark replays, background conflation: woken
by the pump, pump.py), closes every connection on shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING

from ..core.broker.bookmarks import ReplayRequest
from ..core.broker.broker import Clock
from ..core.engine import Engine
from ..core.log.local import LocalLog
from ..core.log.shared import SharedLog
from ..core.settings.config import Config
from ..core.sow.txlog import LogEntry
from .collector import Collector
from .connection import Connection, SendFrame
from .logstore import LogStore
from .ports import SocketPort
from .pump import Pump
from .reload import reload_auth
from .replays import Replays

if TYPE_CHECKING:
    from .redis_log import RedisLog

log = logging.getLogger("server.runtime")

CLOSE_GOING_AWAY = 1001
# Background conflation works in slices this long, each after everything else ready has run.
BACKGROUND_SLICE_S = 0.001
# A socket not woken for between one and two of these lets go of its writer task until its next
# wake-up (Connection.park_idle_writer). A busy socket is woken many times a second and keeps it.
WRITER_IDLE_S = 10.0


def _time_up(deadline: float) -> Callable[[], bool]:
    return lambda: time.perf_counter() > deadline


class Hub:
    def __init__(self, config: Config, clock: Clock = time.time, node: str = "") -> None:
        """With ``[cluster]``, ``node`` is this node's name in the cluster (unique, now and after
        a restart: server/node.py)."""
        # The garbage collector's policy (collector.py): the node starts it; a hub of a test's
        # own process leaves it idle.
        self.collector = Collector()
        self.clock = clock
        self.cluster: RedisLog | None = None  # with [cluster]: the shared log in Redis
        if config.cluster is not None:
            # The shared log first: the engine is built with it, and the runtime keeps it to send
            # what it holds to Redis and report what Redis answers.
            shared = SharedLog(node)
            self.engine = Engine(config, clock, lambda _broker: shared)
            self.pump = Pump(self.engine.broker, shared)
            # Imported here: a node without a cluster never loads the Redis client (35 ms of
            # every start).
            from .redis_log import RedisLog  # noqa: PLC0415

            self.cluster = RedisLog(self.engine, shared, config.cluster, self.pump, self.collector)
        else:
            self.engine = Engine(config, clock, LocalLog)
            self.pump = Pump(self.engine.broker)
        self.connections: set[Connection] = set()
        self.shutting_down = False
        self._timer_task: asyncio.Task[None] | None = None
        self.store: LogStore | None = None  # the transaction log, when a topic is durable
        self._replay_task: asyncio.Task[None] | None = None
        on_disk = self.cluster is None
        self.replays = Replays(self.engine.broker, self._read_log, self.pump, on_disk=on_disk)
        self._background_task: asyncio.Task[None] | None = None
        self._parking_task: asyncio.Task[None] | None = None
        self.writer_idle_s = WRITER_IDLE_S

    @property
    def config(self) -> Config:
        """The engine's configuration: its ``[auth]`` is reloaded on SIGHUP (reload.py)."""
        return self.engine.broker.config

    def reload_auth(self) -> bool:
        """SIGHUP: reload ``[auth]`` from the configuration file (reload.py); whether it was."""
        try:
            return reload_auth(self.engine)
        finally:
            self.pump()

    async def _run_timers(self) -> None:
        """Sleep until the next interval ends or record expires (or the pump says an earlier one
        was scheduled), then advance."""
        broker, pump = self.engine.broker, self.pump
        while True:
            due = broker.timers.next_due()
            pump.timers_wake_at = math.inf if due is None else due
            pump.timers.clear()  # what was scheduled before now is in ``due``
            timeout = None if due is None else max(0.0, due - self.clock())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await pump.timers.wait()
            try:
                broker.advance(self.clock())
            except Exception:
                log.exception("a timer (record expiry or subscription conflation) failed; carrying on")
            pump()

    def start(self) -> None:
        """Start the timers (expirations, subscription conflation) and bookmark replays; also done
        on the first connection."""
        if self._timer_task is None:
            if self.cluster is not None:
                self.cluster.start()
            self._timer_task = asyncio.create_task(self._run_timers(), name="timers")
            self._replay_task = asyncio.create_task(self._run_replays(), name="replays")
            self._background_task = asyncio.create_task(
                self._run_background_conflation(), name="background-conflation"
            )
            self._parking_task = asyncio.create_task(self._park_idle_writers(), name="idle-writers")

    async def _park_idle_writers(self) -> None:
        """Every WRITER_IDLE_S, the writers of sockets not woken since the last time are let go
        of (Connection.park_idle_writer): an idle socket costs its reader alone."""
        while True:
            await asyncio.sleep(self.writer_idle_s)
            for connection in list(self.connections):
                connection.park_idle_writer()

    async def _run_background_conflation(self) -> None:
        """Conflate queues past a quarter of their limit before they reach it, in the loop's idle
        time: each slice waits until every other ready reader, writer and timer has run."""
        broker, pump = self.engine.broker, self.pump
        while True:
            await pump.crowded.wait()
            pump.crowded.clear()
            more = True
            while more:
                await asyncio.sleep(0)  # behind everything that was ready
                try:
                    more = broker.conflate_crowded(_time_up(time.perf_counter() + BACKGROUND_SLICE_S))
                except Exception:
                    log.exception("background conflation failed; carrying on")
                    more = False
                pump()

    async def _run_replays(self) -> None:
        requested, replays = self.pump.replays, self.engine.broker.replays
        while True:
            await requested.wait()
            requested.clear()
            while replays:
                self.replays.add(replays.popleft())

    def _read_log(self, request: ReplayRequest) -> AsyncGenerator[list[LogEntry]] | None:
        """The log a bookmark replay reads, a chunk at a time: a cluster's stream in Redis, or the
        transaction log on disk."""
        bookmark = request.bookmark
        if self.cluster is not None:
            topic = request.subscription.topic
            return self.cluster.read(topic, bookmark.after_lsn, bookmark.since, request.until_lsn)
        if self.store is not None:
            return self.store.replay(bookmark.after_lsn, bookmark.since, request.until_lsn)
        return None

    @property
    def ready(self) -> bool:
        """Whether this server may serve: always alone; in a cluster, while its state is loaded
        and Redis is reachable (docs/protocol.md, Cluster: ``/healthz`` answers 503 otherwise)."""
        return self.cluster is None or self.cluster.healthy

    def connect(self, send: SendFrame, handle: SocketPort, peer: str | None = None) -> Connection:
        """A new socket; ``peer`` is its remote address (failed logons are counted by it)."""
        self.start()
        settings = self.config.server
        connection = Connection(
            self.engine,
            self.pump,
            send,
            handle,
            settings.max_message_bytes,
            settings.binary_frames,
            self.cluster,
            peer,
        )
        self.connections.add(connection)
        connection.start()
        return connection

    def disconnect(self, connection: Connection) -> None:
        self.connections.discard(connection)
        connection.finish()
        self.collector.socket_closed()

    async def shutdown(self) -> None:
        """Close every socket with 1001 before the server stops accepting work."""
        self.shutting_down = True
        for task in (self._timer_task, self._replay_task, self._background_task, self._parking_task):
            if task is not None:
                task.cancel()
        self.replays.cancel()
        connections = list(self.connections)
        if connections:
            log.info("closing %d connection(s) with 1001", len(connections))
        await asyncio.gather(
            *(c.shutdown(CLOSE_GOING_AWAY, "server shutting down") for c in connections),
            return_exceptions=True,
        )
        if self.cluster is not None:
            await self.cluster.close()
