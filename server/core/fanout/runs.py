"""Sorted runs held in chunks and merged a slice at a time: what a pass in slices sorts with
(passes.py: a sorted pass's sort keys; aggregate/building.py: a new aggregation's groups by the
change that last touched them), so that no step sorts or merges a whole topic at once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

# Runs of up to this many sort keys in all are merged in one go (a sort of two sorted runs is one
# merge, in C: a few ms); longer ones a slice of this many at a time.
MERGE_WHOLE = 8_192
MERGE_STEP = 2_048
# A sorted run is held in chunks of at most this many sort keys (``Run``), never in one list of
# them all: a list the collector has not yet seen is walked whole by its next young collection,
# and a merge makes no object the collector counts, so a merged list of 200,000 sort keys stayed
# young while it grew; eight of them cost one young collection 0.15 s.
CHUNK = 4_096
Run = list[list[Any]]  # sorted, in order; no chunk empty


def chunked(entries: list[Any]) -> Run:
    return [entries[start : start + CHUNK] for start in range(0, len(entries), CHUNK)]


def flat(run: Run) -> list[Any]:
    return [entry for chunk in run for entry in chunk]


class _Merge:
    """Two sorted runs merged a slice at a time, into chunks."""

    __slots__ = ("_at", "_first", "_second", "merged")

    def __init__(self, first: Run, second: Run) -> None:
        self._first, self._second = first, second
        self._at = [0, 0, 0, 0]  # the chunk and the place in it of each run
        self.merged: Run = [[]]

    def advance(self, step: int) -> bool:
        """Merge up to ``step`` more sort keys; True when they are all merged."""
        first, second, merged = self._first, self._second, self.merged
        chunk_a, at_a, chunk_b, at_b = self._at
        out = merged[-1]
        while step > 0 and chunk_a < len(first) and chunk_b < len(second):
            a, b = first[chunk_a], second[chunk_b]
            if b[at_b] < a[at_a]:
                out.append(b[at_b])
                at_b += 1
                if at_b == len(b):
                    chunk_b, at_b = chunk_b + 1, 0
            else:
                out.append(a[at_a])
                at_a += 1
                if at_a == len(a):
                    chunk_a, at_a = chunk_a + 1, 0
            if len(out) >= CHUNK:
                out = []
                merged.append(out)
            step -= 1
        self._at = [chunk_a, at_a, chunk_b, at_b]
        if chunk_a < len(first) and chunk_b < len(second):
            return False
        rest, chunk, at = (first, chunk_a, at_a) if chunk_a < len(first) else (second, chunk_b, at_b)
        if chunk < len(rest):
            merged.append(rest[chunk][at:])
            merged.extend(rest[chunk + 1 :])
        merged[:] = [part for part in merged if part]
        return True


class RunMerge:
    """Sorted runs merged into one, two at a time (the first added first), a slice at a time:
    ``add`` each, ``advance`` until it answers True, then ``result``. ``sort`` sorts a list of
    items in place, in their order (runs short enough are merged by it: one merge, in C)."""

    __slots__ = ("_merging", "_runs", "_sort")

    def __init__(self, sort: Callable[[list[Any]], None]) -> None:
        self._sort = sort
        self._runs: deque[Run] = deque()
        self._merging: _Merge | None = None

    def add(self, run: list[Any]) -> None:
        """One more run, sorted already, not empty."""
        self._runs.append(chunked(run) if len(run) > CHUNK else [run])

    def advance(self) -> bool:
        """Merge a slice of two runs; True when one run is left (or none)."""
        runs, merging = self._runs, self._merging
        if merging is not None:
            if merging.advance(MERGE_STEP):
                runs.append(merging.merged)
                self._merging = None
            return False
        if len(runs) <= 1:
            return True
        first, second = runs.popleft(), runs.popleft()
        if sum(map(len, first)) + sum(map(len, second)) <= MERGE_WHOLE:
            both = flat(first) + flat(second)
            self._sort(both)
            runs.append(chunked(both))
        else:
            self._merging = _Merge(first, second)
        return False

    def result(self) -> Run:
        """The one run, in chunks (merged to the end first)."""
        while not self.advance():
            pass
        return self._runs[0] if self._runs else []
