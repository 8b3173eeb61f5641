"""After every call into the engine: wake each task that has work the core left for it.

The core never calls out (docs/architecture.md, Fed and drained; as python-websockets' protocol is fed with
``receive_data`` and drained with ``data_to_send``). What it leaves for the runtime is state it
keeps, and the runtime looks at that state right after it feeds the core, before it awaits
anything, so nothing waits longer than it did when the core called out at once:

- entries waiting to be written and synced (``Durability``): the log writer (logstore.py);
- bookmark replays requested (``Broker.replays``): the replays task (hub.py);
- queues past a quarter of a bound (``Broker.crowded``): background conflation (hub.py);
- a timer due before the timer task's own wake-up (``Timers.next_due``): the timers (hub.py);
- in a cluster, proposals, client name claims and releases waiting for Redis: its writer
  (redis_writer.py); and sockets whose changes in flight are all answered (``SharedLog.settled``):
  the frames that wait for them (redis_log.py).

Every place the runtime calls into the engine calls the pump: connection.py, hub.py (timers,
background conflation, reload), replays.py, logstore.py, redis_log.py, redis_writer.py,
redis_names.py. (A socket's own writer is woken by its session at once, through its
``SessionPort``: a push must not wait for the end of a frame's slice.)
"""

from __future__ import annotations

import asyncio
import math

from ..core.broker.broker import Broker
from ..core.limits import SERVER_PASSES
from ..core.log.shared import SharedLog
from ..core.session.session import Session


class Pump:
    def __init__(self, broker: Broker, shared: SharedLog | None = None) -> None:
        self.broker = broker
        self.shared = shared  # with [cluster]: the shared log the engine was built with
        self.log = asyncio.Event()  # entries wait to be written (logstore.py)
        self.replays = asyncio.Event()  # bookmark replays wait to start (hub.py)
        self.crowded = asyncio.Event()  # queues wait to be conflated in the background (hub.py)
        self.timers = asyncio.Event()  # a timer is due before timers_wake_at (hub.py)
        self.timers_wake_at = math.inf  # when the timer task wakes by itself
        self.proposals = asyncio.Event()  # changes, claims or releases wait for Redis (redis_writer.py)
        self.settled: dict[Session, asyncio.Event] = {}  # sockets waiting for their changes in flight
        # The passes read in slices (connection.py): at most SERVER_PASSES at once, and one
        # slice of one of them at a time.
        self.passes = asyncio.Semaphore(SERVER_PASSES)
        self.pass_turn = asyncio.Lock()

    def __call__(self) -> None:
        broker = self.broker
        if broker.durability:
            self.log.set()
        if broker.replays:
            self.replays.set()
        if broker.crowded:
            self.crowded.set()
        due = broker.timers.next_due()
        if due is not None and due < self.timers_wake_at:
            self.timers.set()
        shared = self.shared
        if shared is not None:
            if shared.outgoing or shared.claims or shared.releases:
                self.proposals.set()
            settled = shared.settled
            while settled:
                event = self.settled.pop(settled.pop(), None)
                if event is not None:
                    event.set()
