"""The sort keys of the records that pass a view's gates, sorted, read in slices (``SortedPass``):
each slice's sorted as it is read, then the sorted runs merged a slice at a time (fanout/runs.py),
then caught up with the writes made meanwhile (frozen.py), then finished in one step: every sort
key, or the first few (a walk of as many)."""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Callable
from functools import partial
from itertools import chain
from typing import Any

from ..filters.orderby import Keyed
from ..records.version import RecordVersion
from ..sow.store import Sow
from .frozen import Frozen, Writes
from .runs import Run, RunMerge
from .windows import SortKey, entry_of, sort_entries


class SortedPass(Frozen):
    """The sort keys of the records that pass ``matches``, sorted: each slice's sorted as it is
    read, then the sorted runs merged two at a time, a slice at a time (``advance``), then
    ``entries`` (every one, as the records are now), ``leading`` (the first few) or ``merged``."""

    def __init__(
        self,
        sow: Sow,
        sort_key: Callable[[Keyed], SortKey],
        matches: Callable[[Any], bool],
        units: int,
        view_of: Callable[[RecordVersion], Any] | None = None,
        every: bool = False,
    ) -> None:
        """``view_of``: what a subscription that remembers what it was sent (a delta or ``oof``
        one) remembers of each record that passes, made a slice at a time once the records are
        read (``remembered``). ``every``: it will be asked for every version that passes, in
        order (``every_version``), not the first few: once merged, the versions of the sort
        keys are looked up a slice at a time too."""
        super().__init__(sow, units)
        self._sort_key = sort_key
        self._matches = matches
        self._next = 0
        self._view_of = view_of
        self._viewed = 0  # how many of the versions read have had their views made
        self._held: dict[str, Any] = {}
        self._every = every
        self._resolved: Run = []  # the version of each sort key of the merged run, chunk by chunk
        self._runs = RunMerge(partial(sort_entries, sort_key=sort_key))
        # Each sort key found, by its SowKey, as it is found: what ``leading`` counts, and a
        # window order's index of keys (windows.OrderAssembly).
        self.found: dict[str, SortKey] = {}
        # The writes taken (``caught_up``): each record's sort key as it is now, None when it
        # does not pass (or is gone).
        self._rewritten: dict[str, SortKey | None] = {}

    def _entry(self, version: RecordVersion) -> SortKey | None:
        return entry_of(self._sort_key, self._matches, version)

    def advance(self) -> bool:
        """Read one slice, or merge a slice of two runs; True when one sorted run is left."""
        if not self._started:
            self._start()
        versions, start, runs = self._versions, self._next, self._runs
        if start < len(versions):
            end = min(len(versions), start + self.batch)
            entry = self._entry
            run = [found for index in range(start, end) if (found := entry(versions[index])) is not None]
            sort_entries(run, self._sort_key)
            if run:
                self.found.update({found[-1]: found for found in run})
                runs.add(run)
            self._next = end
            return False
        if self._view_of is not None and self._viewed < len(versions):
            self._view_some()
            return False
        if not self._runs.advance():
            return False
        return not self._every or self._resolve_some()

    def _resolve_some(self) -> bool:
        """Look up the versions of a slice of the merged run's sort keys, as the records are now
        (those written since are taken again at the end); True when every one is."""
        run, resolved, records = self._runs.result(), self._resolved, self._sow.records
        budget = self.batch
        while len(resolved) < len(run) and budget > 0:
            chunk = run[len(resolved)]
            resolved.append([records.get(entry[-1]) for entry in chunk])
            budget -= len(chunk)
        return len(resolved) >= len(run)

    def _view_some(self) -> None:
        """Make the views of the records found in one slice of the versions read."""
        view_of, found, start = self._view_of, self.found, self._viewed
        assert view_of is not None
        end = min(len(self._versions), start + self.batch)
        self._held.update(
            {version.key: view_of(version) for version in self._versions[start:end] if version.key in found}
        )
        self._viewed = end

    @property
    def viewed(self) -> bool:
        """Whether it makes the views of what it finds."""
        return self._view_of is not None

    def remembered(self) -> dict[str, Any]:
        """Once ``entries`` has answered: the view of each record that passes, by key, with the
        writes taken since applied (a cost of those writes, not of the records)."""
        held, records, view_of = self._held, self._sow.records, self._view_of
        assert view_of is not None
        for key, found in self._rewritten.items():
            if found is None:
                held.pop(key, None)
            else:
                held[key] = view_of(records[key])
        return held

    def merged(self) -> Run:
        """The sort keys of the records that passed as the pass read them (the keys of
        ``watched`` may have changed since), sorted, in chunks. The writes go on being noted
        (a window's order takes them as changes of itself: orders.OrderBuild)."""
        while not self.advance():
            pass
        return self._runs.result()

    def caught_up(self) -> bool:
        """Once merged: take one slice of the writes noted (``catch_up``), for ``entries`` and
        ``leading``, which take the rest; True when caught up."""
        return self.catch_up(self._take)

    def _take(self, writes: Writes) -> None:
        records, entry, taken = self._sow.records, self._entry, self._rewritten
        for key, _ in writes:
            version = records.get(key)
            taken[key] = None if version is None else entry(version)

    def _caught_up_run(self) -> tuple[Run, dict[str, SortKey | None]]:
        """The merged run, and every write taken (the rest of them taken now)."""
        run = self.merged()
        while not self.caught_up():
            pass
        self.close()
        self._take(self.take_noted())
        return run, self._rewritten

    def _fresh(self, taken: dict[str, SortKey | None], count: int | None = None) -> list[SortKey]:
        """The sort keys of the records written since the pass began that pass now, sorted: the
        first ``count`` of them (a selection, not a sort of them all), or all."""
        fresh = [found for found in taken.values() if found is not None]
        if count is not None:
            return heapq.nsmallest(count, fresh)  # (in the sort keys' own order, as sort_entries)
        sort_entries(fresh, self._sort_key)
        return fresh

    def every_version(self) -> list[RecordVersion]:
        """The versions of the records that pass, as they are now, in order: those looked up
        in slices (``every``; else now), less those written since, with the records written
        since that pass now put in their places (a search each, not a sort of them all)."""
        run, taken = self._caught_up_run()
        while not self._resolve_some():
            pass
        if not taken:
            return list(chain.from_iterable(self._resolved))
        entries: list[SortKey] = []
        versions: list[RecordVersion] = []
        for chunk, found in zip(run, self._resolved, strict=True):
            for entry, version in zip(chunk, found, strict=True):
                if entry[-1] not in taken:
                    entries.append(entry)
                    versions.append(version)
        fresh = self._fresh(taken)
        if not fresh:
            return versions
        records, placed, at = self._sow.records, [], 0
        for entry in fresh:  # (sorted: each goes after the one before)
            place = bisect_left(entries, entry, at)
            placed += versions[at:place]
            placed.append(records[entry[-1]])
            at = place
        placed += versions[at:]
        return placed

    def leading(self, count: int) -> tuple[int, list[SortKey]]:
        """How many records pass, as they are now, and the first ``count`` sort keys of them: a
        walk of as many, whatever the topic's size."""
        run, taken = self._caught_up_run()
        every = sum(map(len, run))
        leading: list[SortKey] = []
        for chunk in run:
            if len(leading) >= count:
                break
            leading += [found for found in chunk if found[-1] not in taken]
        if not taken:
            return every, leading[:count]
        fresh = self._fresh(taken, count)
        stale = sum(1 for key in taken if key in self.found)
        passing = sum(1 for found in taken.values() if found is not None)
        leading += fresh
        sort_entries(leading, self._sort_key)
        return every - stale + passing, leading[:count]
