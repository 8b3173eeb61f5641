"""The node's collector (server/runtime/collector.py): a full collection walks nothing the node
holds, and what closed sockets left in frozen reference cycles is swept after so many. Each test
runs in a process of its own: freezing is process-wide, and must not freeze the test runner."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(code: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout.split()


def test_a_full_collection_walks_nothing_that_was_alive_when_it_started() -> None:
    frozen, walked = run(
        """
        import gc
        from server.runtime.collector import Collector
        Collector().start()
        state = [[n] for n in range(100_000)]  # long-lived, as records are
        gc.collect()  # a full collection, as the interpreter starts them now and then
        # gc.get_objects(): what a collection walks (not the frozen generation)
        print(gc.get_freeze_count(), len(gc.get_objects()))
        """
    )
    assert int(frozen) > 100_000
    assert int(walked) < 1_000


def test_cycles_frozen_then_dropped_are_freed_by_the_sweep_after_closed_sockets() -> None:
    after_drop, after_two, after_sweep = run(
        """
        import gc
        from server.runtime.collector import Collector
        class Socket:  # a closed socket's objects: a cycle
            def __init__(self):
                self.me = self
        collector = Collector(sweep_after=3)
        collector.start()
        sockets = [Socket() for _ in range(1000)]
        gc.collect()  # they lived long: frozen
        del sockets
        def alive():
            gc.unfreeze()
            count = sum(type(o) is Socket for o in gc.get_objects())
            gc.freeze()
            return count
        dropped = alive()
        collector.socket_closed()
        collector.socket_closed()
        two = alive()
        collector.socket_closed()
        print(dropped, two, alive())
        """
    )
    assert (after_drop, after_two) == ("1000", "1000"), "frozen cycles wait for the sweep"
    assert after_sweep == "0"
