"""The garbage collector and the state a node holds for hours: no full collection while sockets wait.

A full collection walks every object the collector tracks, and every socket waits while it does:
the modules and the web framework are some 50,000 objects, a stored record one or two more, so
at a million records one took 0.1 to 0.4 s, whenever the objects that survived young collections
came to a quarter of those kept (under a feed, every minute or two). A node never lets one walk
what it holds: when the interpreter starts a full collection, the node first freezes every object
the collector tracks (``gc.freeze``: moved into a generation no collection walks), so the
collection finds nothing to walk. Young collections go on collecting what dies between two full
ones, and a frozen object is still freed when its last reference goes (a replaced record version
at once, as ever). What is given up is collecting a reference cycle that was frozen and became
garbage: a socket that lived a while and closed (about 50 objects), or cyclic garbage that was
young when a full collection started. So the node collects everything once (``collect_all``:
unfreeze, collect, freeze), logged, when it is due: after ``SWEEP_AFTER_CLOSED`` closed sockets,
or once the frozen objects have grown by a quarter since the last time (and by
``SWEEP_MIN_GROWTH``); at most once every ``MIN_SWEEP_GAP_S``, checked every ``CHECK_EVERY_S``,
never during a shutdown. That collection is the one full pause (0.2 s with a million records),
at the rate state grows or sockets close, not at the rate of a feed. It also runs once the node
has loaded its state (before it listens, and after a cluster node's load from Redis).

Only a started collector acts (``server/node.py`` starts it): a hub built in a test's own process
never freezes the test runner.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from typing import Any

log = logging.getLogger("server")

SWEEP_AFTER_CLOSED = 1_000
SWEEP_GROWTH = 0.25
SWEEP_MIN_GROWTH = 100_000
MIN_SWEEP_GAP_S = 60.0
CHECK_EVERY_S = 10.0


class Collector:
    def __init__(self) -> None:
        self.started = False
        self.closed = 0  # sockets closed since the last collection of everything
        self._collecting_all = False
        self._frozen_after_last = 0
        self._last = time.monotonic()

    def start(self) -> None:
        self.started = True
        if self._starting not in gc.callbacks:
            gc.callbacks.append(self._starting)

    def stop(self) -> None:
        self.started = False
        if self._starting in gc.callbacks:
            gc.callbacks.remove(self._starting)

    def _starting(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and info["generation"] == 2 and not self._collecting_all:
            gc.freeze()  # the full collection about to run finds nothing to walk

    def socket_closed(self) -> None:
        self.closed += 1

    def collect_all(self, after: str) -> int:
        """Collect everything once, frozen objects included, then freeze what is alive; ``after``:
        why now, for the log line. The number of objects freed (0 when not started)."""
        if not self.started or self._collecting_all:
            return 0
        started = time.perf_counter()
        self._collecting_all = True
        gc.disable()  # no collection of another thread's between the unfreeze and this one
        try:
            gc.unfreeze()
            freed = gc.collect()
            gc.freeze()
        finally:
            gc.enable()
            self._collecting_all = False
        self._frozen_after_last = gc.get_freeze_count()
        self.closed = 0
        self._last = time.monotonic()
        log.info(
            "collector: %d objects frozen after %s (%d freed, in %.0f ms)",
            self._frozen_after_last,
            after,
            freed,
            (time.perf_counter() - started) * 1000,
        )
        return freed

    def due(self, now: float) -> str | None:
        """Why everything should be collected now, or None."""
        if now - self._last < MIN_SWEEP_GAP_S:
            return None
        if self.closed >= SWEEP_AFTER_CLOSED:
            return f"{self.closed} closed sockets"
        grown = gc.get_freeze_count() - self._frozen_after_last  # a walk of the frozen list: seldom
        if grown >= max(SWEEP_MIN_GROWTH, SWEEP_GROWTH * self._frozen_after_last):
            return f"{grown} more were frozen"
        return None

    async def run(self) -> None:
        """Collects everything whenever it is due, until cancelled (at shutdown)."""
        while True:
            await asyncio.sleep(CHECK_EVERY_S)
            why = self.due(time.monotonic())
            if why is not None:
                self.collect_all(why)
