"""The garbage collector and the state a node holds for hours: no full collection that every
socket waits for.

A full collection walks every object the collector tracks, and every socket waits while it does:
the modules and the web framework are some 50,000 objects, and a stored record one or two more,
so at a million records one took 0.1 to 0.9 s, whenever the objects that survived young
collections since the last one came to a quarter of those it kept (under a feed, every minute or
two). A node never lets one run: when the collector starts a full collection, the node freezes
every object it tracks first (``gc.freeze``: moved into a generation no collection walks), so the
collection finds nothing to walk. Young collections, which walk only the objects made since the
last few, go on collecting what dies young. A frozen object is still freed when its last
reference goes (a replaced record version at once, as ever): what is given up is collecting a
reference cycle that became garbage after it was frozen, the objects of a socket that lived a
while and closed, say. So after ``SWEEP_AFTER_CLOSED`` closed sockets the node unfreezes,
collects everything once (the one full pause, at the rate sockets close, not at the rate of a
feed) and logs what it freed.

A node also freezes what it loaded before it listens (its log's records, or Redis's).
"""

from __future__ import annotations

import gc
import logging
import time
from typing import Any

log = logging.getLogger("server")

SWEEP_AFTER_CLOSED = 1_000


def freeze_loaded_state(after: str) -> None:
    """Collect what loading left behind, then freeze what is alive; ``after``: what was loaded,
    for the log line."""
    started = time.perf_counter()
    gc.collect()
    gc.freeze()
    log.info(
        "collector: %d objects frozen after %s in %.0f ms",
        gc.get_freeze_count(),
        after,
        (time.perf_counter() - started) * 1000,
    )


class Collector:
    """Keeps full collections from walking what the node holds; sweeps after closed sockets."""

    def __init__(self, sweep_after: int = SWEEP_AFTER_CLOSED) -> None:
        self.sweep_after = sweep_after
        self.closed = 0  # sockets closed since the last sweep
        self.sweeping = False

    def start(self) -> None:
        if self._starting not in gc.callbacks:
            gc.callbacks.append(self._starting)

    def stop(self) -> None:
        if self._starting in gc.callbacks:
            gc.callbacks.remove(self._starting)

    def _starting(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and info["generation"] == 2 and not self.sweeping:
            gc.freeze()  # the full collection about to run finds nothing to walk

    def socket_closed(self) -> None:
        self.closed += 1
        if self.closed >= self.sweep_after:
            self.sweep()

    def sweep(self) -> int:
        """Collect everything once, frozen included: what closed sockets left in cycles."""
        started = time.perf_counter()
        closed, self.closed = self.closed, 0
        self.sweeping = True
        try:
            gc.unfreeze()
            freed = gc.collect()
            gc.freeze()
        finally:
            self.sweeping = False
        log.info(
            "collector: swept after %d closed sockets: %d objects freed, %d frozen, in %.0f ms",
            closed,
            freed,
            gc.get_freeze_count(),
            (time.perf_counter() - started) * 1000,
        )
        return freed
