"""The node's collector (server/runtime/collector.py): a full collection walks nothing the node
holds, and everything is collected once when it is due. Each test runs in a process of its own:
freezing is process-wide, and must not freeze the test runner."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from ..waiting import HANG_S

ROOT = Path(__file__).resolve().parents[2]
PRELUDE = """
import gc, time
from server.runtime import collector as module
from server.runtime.collector import Collector
class Cycle:  # what a closed socket leaves: objects that refer to each other
    def __init__(self):
        self.me = self
def alive():
    gc.disable()
    gc.unfreeze()
    count = sum(type(o) is Cycle for o in gc.get_objects())
    gc.freeze()
    gc.enable()
    return count
collector = Collector()
collector.start()
def later():  # past the least time between two collections of everything
    return time.monotonic() + module.MIN_SWEEP_GAP_S
"""


def run(code: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=True,
    )
    return result.stdout.split()


def test_a_full_collection_walks_nothing_that_was_alive_when_it_started() -> None:
    frozen, walked = run(
        """
        state = [[n] for n in range(100_000)]  # long-lived, as records are
        gc.collect()  # a full collection, as the interpreter starts them now and then
        print(gc.get_freeze_count(), len(gc.get_objects()))  # get_objects: what collections walk
        """
    )
    assert int(frozen) > 100_000
    assert int(walked) < 1_000


def test_what_loading_left_in_cycles_is_collected_before_it_is_frozen() -> None:
    freed, left = run(
        """
        garbage = [Cycle() for _ in range(1000)]
        del garbage
        print(collector.collect_all("start-up"), alive())
        """
    )
    assert int(freed) >= 1000 and left == "0"


def test_cycles_of_closed_sockets_are_collected_when_enough_sockets_closed() -> None:
    frozen, early, not_yet, due, left = run(
        """
        sockets = [Cycle() for _ in range(1000)]
        gc.collect()  # they lived long: frozen
        del sockets
        for _ in range(module.SWEEP_AFTER_CLOSED - 1):
            collector.socket_closed()
        not_yet = collector.due(later())
        collector.socket_closed()
        early = collector.due(time.monotonic())  # the last collection of everything was just now
        print(alive(), early, not_yet, collector.due(later()).replace(" ", "_"), end=" ")
        collector.collect_all("test")
        print(alive())
        """
    )
    assert (frozen, early, not_yet) == ("1000", "None", "None")
    assert due == "1000_closed_sockets" and left == "0"


def test_young_cycles_frozen_by_full_collections_are_collected_once_the_frozen_grow() -> None:
    frozen, due, left = run(
        """
        collector.collect_all("start-up")
        for _ in range(3):
            garbage = [Cycle() for _ in range(60_000)]
            gc.collect()  # alive when the full collection starts: frozen with the rest
            del garbage
        print(alive(), (collector.due(later()) or "None").split()[-3:] == ["more", "were", "frozen"], end=" ")
        collector.collect_all("test")
        print(alive())
        """
    )
    assert int(frozen) == 180_000 and due == "True" and left == "0"


def test_a_collector_not_started_never_freezes() -> None:
    freed, frozen = run(
        """
        collector.stop()
        idle = Collector()
        state = [[n] for n in range(10_000)]
        gc.collect()
        print(idle.collect_all("start-up"), gc.get_freeze_count())
        """
    )
    assert (freed, frozen) == ("0", "0")
