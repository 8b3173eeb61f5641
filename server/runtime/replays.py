"""Bookmark replays (docs/protocol.md, Durability): the log read back to each bookmark subscription,
a chunk at a time, paced by its socket, then the seam to live (core/handlers/replaying.py).

What a replay holds while it runs is one chunk of the log (logreader.py, or one batch of a
cluster's stream) and what its socket has not taken yet; the next chunk is read only once the
socket's queue is below half its bounds. Three bounds keep many replays from hurting anyone:

- A socket runs ``PER_SOCKET`` replays at once; its other bookmark subscriptions wait their turn
  in the order they were made (their live changes wait in their replay buffers, as during any
  replay), so a thousand of them on one socket cost what a few do.
- ``READS_IN_FLIGHT`` chunk reads run at once across every replay: a read runs on the log's I/O
  thread in turn with its writes (or is a round trip to Redis), so persisted acks never wait
  behind more than that many.
- A chunk is replayed in steps of ``STEP`` entries, and everything else that is ready runs between
  steps and between chunks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from functools import partial

from ..core.broker.bookmarks import ReplayRequest
from ..core.broker.broker import Broker
from ..core.handlers import replaying
from ..core.queue.outbox import Outbox
from ..core.session.session import Session
from ..core.sow.txlog import LogEntry
from .pump import Pump

log = logging.getLogger("server.runtime")

PER_SOCKET = 4  # replays of one socket at once
READS_IN_FLIGHT = 2  # chunk reads at once, across every replay
STEP = 500  # entries replayed in one step of the event loop (~5 ms)
PACE_S = 0.005  # how often a paced replay looks at its socket's queue again
WRITTEN_S = 0.002  # how often a replay looks whether the log is on disk up to where live begins

# The log a request reads: its chunks in order, or None when there is no log.
LogSource = Callable[[ReplayRequest], AsyncGenerator[list[LogEntry]] | None]


@dataclass(slots=True)
class _Lane:
    """One socket's replays: those running, and those waiting their turn."""

    running: int = 0
    waiting: deque[ReplayRequest] = field(default_factory=deque)


class Replays:
    def __init__(self, broker: Broker, source: LogSource, pump: Pump, on_disk: bool) -> None:
        """``on_disk``: the log is this server's on disk, written behind the changes it applies,
        so a replay waits until it is written up to where live begins (a cluster's is in Redis
        before it is applied)."""
        self.broker = broker
        self.source = source
        self.pump = pump  # run after every step fed to the core
        self.on_disk = on_disk
        self._lanes: dict[Session, _Lane] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._reads = asyncio.Semaphore(READS_IN_FLIGHT)

    def add(self, request: ReplayRequest) -> None:
        """Replay ``request`` now, or after the socket's earlier replays (``PER_SOCKET`` at once)."""
        session = request.subscription.session
        lane = self._lanes.setdefault(session, _Lane())
        lane.waiting.append(request)
        self._start(session, lane)

    def _start(self, session: Session, lane: _Lane) -> None:
        while lane.waiting and lane.running < PER_SOCKET:
            request = lane.waiting.popleft()
            if request.subscription.closed:
                continue  # unsubscribed (or its socket closed) while it waited
            lane.running += 1
            task = asyncio.create_task(self._replay(request), name="replay")
            self._tasks.add(task)
            task.add_done_callback(partial(self._done, session, lane))
        if not lane.running:
            self._lanes.pop(session, None)

    def _done(self, session: Session, lane: _Lane, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        lane.running -= 1
        self._start(session, lane)

    def cancel(self) -> None:
        """At shutdown: the running replays end and the waiting ones never start."""
        for lane in self._lanes.values():
            lane.waiting.clear()
        self._lanes.clear()
        for task in list(self._tasks):
            task.cancel()

    async def _replay(self, request: ReplayRequest) -> None:
        broker, subscription = self.broker, request.subscription
        try:
            while self.on_disk and broker.durability.durable_lsn < request.until_lsn:
                if subscription.closed:
                    return
                await asyncio.sleep(WRITTEN_S)
            chunks = None if subscription.closed else self.source(request)
            if chunks is not None:
                async with contextlib.aclosing(chunks):
                    while not subscription.closed:
                        async with self._reads:
                            chunk = await anext(chunks, None)
                        if chunk is None:
                            break
                        await self._send(request, chunk)
            replaying.finish(broker, request)
        except Exception:
            log.exception(
                "bookmark replay for subscription %r failed; ending the subscription", subscription.sub_id
            )
            replaying.abort(broker, request, "replay_failed")
        finally:
            self.pump()

    async def _send(self, request: ReplayRequest, chunk: list[LogEntry]) -> None:
        """Replay ``chunk`` in steps, each once the socket has taken what came before: a step ends
        after ``STEP`` entries, or as soon as the socket's queue is past half its bounds."""
        subscription = request.subscription
        outbox: Outbox = subscription.session.outbox

        def crowded() -> bool:
            messages, size = outbox.queued_messages, outbox.queued_bytes
            return messages * 2 > outbox.max_messages or size * 2 > outbox.max_bytes

        done = 0
        while done < len(chunk):
            while crowded() and not subscription.closed:
                await asyncio.sleep(PACE_S)
            if subscription.closed:
                return
            done += replaying.replay(self.broker, request, chunk[done : done + STEP], crowded)
            self.pump()
            await asyncio.sleep(0)  # everything else that is ready runs between steps
