"""The hub: owns the engine, knows every live connection, closes them all on shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Callable

from ..core.broker.bookmarks import ReplayRequest
from ..core.broker.broker import Clock
from ..core.engine import Engine
from ..core.log.local import LocalLog
from ..core.log.shared import SharedLog
from ..core.settings.config import Config
from ..core.sow.txlog import LogEntry
from .connection import Connection, SendFrame
from .logstore import LogStore
from .ports import SocketPort
from .redis_log import RedisLog
from .replays import Replays

log = logging.getLogger("server.runtime")

CLOSE_GOING_AWAY = 1001
# Background conflation works in slices this long, each after everything else ready has run.
BACKGROUND_SLICE_S = 0.001


def _time_up(deadline: float) -> Callable[[], bool]:
    return lambda: time.perf_counter() > deadline


class Hub:
    def __init__(self, config: Config, clock: Clock = time.time, node: str = "") -> None:
        """With ``[cluster]``, ``node`` is this node's name in the cluster (unique, now and after
        a restart: server/node.py)."""
        self.clock = clock
        self.cluster: RedisLog | None = None  # with [cluster]: the shared log in Redis
        if config.cluster is not None:
            # The shared log first: the engine is built with it, and the runtime keeps it to send
            # what it holds to Redis and report what Redis answers.
            shared = SharedLog(node)
            self.engine = Engine(config, clock, lambda _broker: shared)
            self.cluster = RedisLog(self.engine, shared, config.cluster)
        else:
            self.engine = Engine(config, clock, LocalLog)
        self.connections: set[Connection] = set()
        self.shutting_down = False
        self._timer_changed = asyncio.Event()
        self._timer_task: asyncio.Task[None] | None = None
        self.engine.broker.timers.on_earlier = lambda due: self._timer_changed.set()
        self.store: LogStore | None = None  # the transaction log, when a topic is durable
        self._replay_requested = asyncio.Event()
        self._replay_task: asyncio.Task[None] | None = None
        self.replays = Replays(self.engine.broker, self._read_log, on_disk=self.cluster is None)
        self.engine.broker.on_replay = self._replay_requested.set
        self._crowded = asyncio.Event()
        self._background_task: asyncio.Task[None] | None = None
        self.engine.broker.on_crowded = self._crowded.set

    @property
    def config(self) -> Config:
        """The engine's configuration: its ``[auth]`` is reloaded on SIGHUP (reload.py)."""
        return self.engine.broker.config

    async def _run_timers(self) -> None:
        """Sleep until the engine's next interval ends (or an earlier one is scheduled), then advance."""
        broker = self.engine.broker
        while True:
            due = broker.timers.next_due()
            timeout = None if due is None else max(0.0, due - self.clock())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._timer_changed.wait()
            self._timer_changed.clear()
            try:
                broker.advance(self.clock())
            except Exception:
                log.exception("a timer (record expiry or subscription conflation) failed; carrying on")

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

    async def _run_background_conflation(self) -> None:
        """Conflate queues past a quarter of their limit before they reach it, in the loop's idle
        time: each slice waits until every other ready reader, writer and timer has run."""
        broker = self.engine.broker
        while True:
            await self._crowded.wait()
            self._crowded.clear()
            more = True
            while more:
                await asyncio.sleep(0)  # behind everything that was ready
                try:
                    more = broker.conflate_crowded(_time_up(time.perf_counter() + BACKGROUND_SLICE_S))
                except Exception:
                    log.exception("background conflation failed; carrying on")
                    more = False

    async def _run_replays(self) -> None:
        while True:
            await self._replay_requested.wait()
            self._replay_requested.clear()
            replays = self.engine.broker.replays
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
        and Redis is reachable (PROTOCOL 10: ``/healthz`` answers 503 otherwise)."""
        return self.cluster is None or self.cluster.healthy

    def connect(self, send: SendFrame, handle: SocketPort, peer: str | None = None) -> Connection:
        """A new socket; ``peer`` is its remote address (failed logons are counted by it)."""
        self.start()
        settings = self.config.server
        connection = Connection(
            self.engine, send, handle, settings.max_message_bytes, settings.binary_frames, self.cluster
        )
        connection.session.peer = peer
        self.connections.add(connection)
        connection.start()
        return connection

    def disconnect(self, connection: Connection) -> None:
        self.connections.discard(connection)
        connection.finish()

    async def shutdown(self) -> None:
        """Close every socket with 1001 before the server stops accepting work."""
        self.shutting_down = True
        for task in (self._timer_task, self._replay_task, self._background_task):
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
