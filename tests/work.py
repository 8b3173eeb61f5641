"""How the suite bounds the cost of something without asking how busy the machine is
(tests/README.md).

A bound on *work* ("an attack's filter is cut off within milliseconds", "a normal client is
served while a flood is pending") is asserted on time that the machine's other work cannot
stretch:

- ``cpu_timed``: for work this process does itself (the pure core, a filter), the CPU time of the
  thread that did it. Another process busy on the same cores takes wall time from it, not CPU time.
- ``Stopwatch``: for work another process does (the server), the wall time less what the kernel
  counts as the time the server's event loop and this thread spent runnable but waiting for a core
  (``/proc/<pid>/schedstat``). On an idle machine that is nothing; on a busy one it is exactly what
  the other work took. What is left is the server's own work and the server's own waiting, which
  is what such a bound is about.

Figures of speed (how fast, not "not pathologically slow") belong in bench/, never here.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def cpu_timed(action: Callable[[], T], tries: int = 3) -> tuple[T, float]:
    """The action's outcome and the least CPU time this thread spent on it in ``tries`` runs (a
    collection or a page fault delays one run, an attack's cost is there every time)."""
    least = math.inf
    outcome: T
    for _ in range(tries):
        started = time.thread_time()
        outcome = action()
        least = min(least, time.thread_time() - started)
    return outcome, least


def _waited_for_a_core_s(schedstat: Path) -> float:
    """How long a thread has been runnable but not running (the second ``schedstat`` field)."""
    return int(schedstat.read_text().split()[1]) / 1e9


class CoreWaits:
    """The time the server's event loop (its main thread) and the calling thread have waited for
    a core so far: what other work on the machine took from them."""

    def __init__(self, server_pid: int) -> None:
        self._server = Path(f"/proc/{server_pid}/schedstat")
        self._caller = Path(f"/proc/self/task/{threading.get_native_id()}/schedstat")

    def now(self) -> float:
        try:
            return _waited_for_a_core_s(self._server) + _waited_for_a_core_s(self._caller)
        except (OSError, IndexError, ValueError):
            return 0.0  # the server is gone: what it answers (nothing) says so, not this figure


class Stopwatch:
    """Wall time since it was made, less what other work on the machine took from the server's
    event loop and from the thread that made it."""

    def __init__(self, server_pid: int) -> None:
        self._cores = CoreWaits(server_pid)
        self._started = time.monotonic()
        self._waited = self._cores.now()

    def elapsed(self) -> float:
        return max(0.0, time.monotonic() - self._started - (self._cores.now() - self._waited))
