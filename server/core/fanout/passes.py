"""Passes over a topic's records in slices: which records pass a view's gates, sorted or in the
records' order, read a slice at a time while other sockets run between the slices, then caught
up with the records written meanwhile, a slice at a time too, then finished in one step.

A pass reads the records as they were when it began (a list of their versions: versions are never
changed, only replaced) and asks the SOW to note every key written since (``Sow.watch``). Once
read, it catches up (``caught_up``): it takes the keys written meanwhile a slice at a time, each
as the record is now, until a slice or less is left, so a topic written while it was read does
not make its end a step as long as those writes. Its end is exact: what it answers is what one
pass over the records as they are at its end would answer, in the same order. So a command whose
answer such a pass prepares (handlers/preparing.py) is answered as if it had run whole at that
moment, which is what it would have been had it waited its turn. The end costs the writes left
(a slice, unless the topic is written faster than the pass takes them), and its final list.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from functools import partial
from itertools import islice
from operator import itemgetter
from typing import Any

from ..filters.orderby import Keyed
from ..limits import SLICE_UNITS
from ..records.version import RecordVersion
from ..sow.store import Sow, Watched
from .runs import Run, RunMerge, flat
from .windows import SortKey, entry_of, sort_entries

# A record as it is now, when it passes (else None), with the view of it its subscription
# remembers (None without ``view_of``).
Seen = tuple[RecordVersion, Any] | None
# Writes noted, oldest first: each key, and whether the write (re)made its record.
Writes = list[tuple[str, bool]]


class _Frozen:
    """What a pass in slices reads: the records as they were at its first slice (``_start``: not
    when the pass is made, so a pass waiting for its turn holds no copy), and the keys written
    since (``watched``), until ``close``. ``units``: the estimated cost of one record
    (session/quota.py's units), which sizes the slices (``batch`` records)."""

    def __init__(self, sow: Sow, units: int) -> None:
        self._sow = sow
        self.records = sow.records
        self._versions: list[RecordVersion] = []
        self.watched: Watched = {}
        self._started = False
        self.batch = max(1, SLICE_UNITS // max(1, units))
        self._writes_taken = 0  # (while catching up)

    def catch_up(self, take: Callable[[Writes], None]) -> bool:
        """Once read: hand ``take`` the oldest slice of the writes noted, while more than a slice
        is noted and fewer were taken so far than the pass read records (a topic written faster
        than its writes are taken still ends: its end takes the rest); True when caught up."""
        if len(self.watched) <= self.batch or self._writes_taken >= len(self._versions):
            return True
        take(self.take_noted(self.batch))
        return False

    def take_noted(self, count: int | None = None) -> Writes:
        """The ``count`` oldest writes noted (None: all), forgotten here: the caller takes each
        record as it is now."""
        watched = self.watched
        keys = list(watched) if count is None else list(islice(watched, count))
        self._writes_taken += len(keys)
        return [(key, watched.pop(key)) for key in keys]

    def _start(self) -> None:
        self._started = True
        self._versions = list(self._sow.records.values())
        self.watched = self._sow.watch()

    def close(self) -> None:
        """Stop noting writes (a pass whose command will not use it, or one finished)."""
        self._sow.unwatch(self.watched)


class GatePass(_Frozen):
    """Which records pass ``matches``, a slice at a time (``advance``), then ``in_order`` or
    ``passing``. ``units``: the estimated cost of one record (session/quota.py's units), which
    sizes the slices."""

    def __init__(
        self,
        sow: Sow,
        matches: Callable[[Any], bool],
        units: int,
        view_of: Callable[[RecordVersion], Any] | None = None,
    ) -> None:
        """``view_of``: what a subscription that remembers what it was sent (a delta or ``oof``
        one) remembers of each version, made a slice at a time once the records are read."""
        super().__init__(sow, units)
        self._matches = matches
        self._next = 0
        self._found: list[int] = []  # indexes in _versions of those that pass
        self._view_of = view_of
        self._views: list[Any] = []  # view_of of each found one, in _found's order
        # The writes taken (``caught_up``): the records read that changed, by their index in
        # _versions, as they are now (a record made again is no longer where it was: None); those
        # made since, by key, in the order they were last made (after every record read); and
        # where each record read is in _versions, made a slice at a time once a write is noted.
        self._changed: dict[int, Seen] = {}
        self._made: dict[str, Seen] = {}
        self._index: dict[str, int] = {}

    def advance(self) -> bool:
        """Read one slice; True when the records are all read (the end is left)."""
        if not self._started:
            self._start()
        versions, start = self._versions, self._next
        if start >= len(versions):
            return self._view_some()
        end = min(len(versions), start + self.batch)
        matches = self._matches
        self._found += [index for index in range(start, end) if matches(versions[index].data)]
        self._next = end
        return end >= len(versions) and self._view_of is None

    def caught_up(self) -> bool:
        """Once read: take one slice of the writes noted (``catch_up``), once the versions are
        indexed (a slice at a time too); True when caught up."""
        if self.watched and not self._index_some():
            return False
        return self.catch_up(self._take)

    def _index_some(self) -> bool:
        """Index one slice of the versions read by key; True when every one is."""
        versions, index = self._versions, self._index
        start = len(index)  # (a key is read once)
        end = min(len(versions), start + SLICE_UNITS)
        index.update(zip([version.key for version in versions[start:end]], range(start, end), strict=True))
        return end >= len(versions)

    def _take(self, writes: Writes) -> None:
        """Take each write noted: the record of its key as it is now."""
        if not writes:
            return
        while not self._index_some():
            pass
        records, index, changed, made = self._sow.records, self._index, self._changed, self._made
        view_of = self._view_of
        for key, remade in writes:
            version = records.get(key)
            seen: Seen = None
            if version is not None and self._matches(version.data):
                seen = (version, view_of(version) if view_of is not None else None)
            if remade:  # after every record read, and every one made before it
                at = index.get(key)
                if at is not None:
                    changed[at] = None
                made.pop(key, None)
                made[key] = seen
            elif key in made:  # changed in place, or removed: where it was made
                made[key] = seen
            else:
                changed[index[key]] = seen

    def _view_some(self) -> bool:
        """Make the views of one slice of the versions found; True when they are all made."""
        view_of, found, views = self._view_of, self._found, self._views
        if view_of is None or len(views) >= len(found):
            return True
        versions = self._versions
        views += [view_of(versions[index]) for index in found[len(views) : len(views) + self.batch]]
        return len(views) >= len(found)

    def _read_all(self) -> None:
        """Read, catch up, and take the writes left."""
        while not self.advance() or not self.caught_up():
            pass
        self._take(self.take_noted())

    def in_order(self) -> tuple[list[RecordVersion], list[Any]]:
        """The versions that pass, as they are now, in the records' order, and (with ``view_of``)
        the view of each, else no views."""
        self._read_all()
        self.close()
        versions, found, views = self._versions, self._found, self._views
        changed, made = self._changed, self._made
        if not changed and not made:
            return [versions[index] for index in found], views
        viewed = self._view_of is not None
        # Changed in place: where each was in the records' order is where it still is, if it
        # passes now; made since: after every record that was there, in the order last made.
        kept: list[tuple[int, RecordVersion, Any]] = [
            (index, versions[index], views[at] if viewed else None)
            for at, index in enumerate(found)
            if index not in changed
        ]
        moved = [(index, *seen) for index, seen in changed.items() if seen is not None]
        if moved:
            kept += moved
            kept.sort(key=itemgetter(0))
        kept += [(-1, *seen) for seen in made.values() if seen is not None]
        return [version for _, version, _ in kept], [view for _, _, view in kept] if viewed else []

    @property
    def viewed(self) -> bool:
        """Whether it makes the views of what it finds."""
        return self._view_of is not None

    def passing(self) -> set[str]:
        """The keys of the records that pass, as they are now; the writes noted so far are
        forgotten, and those from now on noted (``watched``) until ``close``."""
        self._read_all()
        versions, changed = self._versions, self._changed
        keys = {versions[index].key for index in self._found if index not in changed}
        keys.update(seen[0].key for seen in changed.values() if seen is not None)
        keys.update(key for key, seen in self._made.items() if seen is not None)
        return keys


class SortedPass(_Frozen):
    """The sort keys of the records that pass ``matches``, sorted: each slice's sorted as it is
    read, then the sorted runs merged two at a time, a slice at a time (``advance``), then
    ``entries`` (every one, as the records are now), ``leading`` (the first few) or ``merged``."""

    def __init__(
        self,
        sow: Sow,
        sort_key: Callable[[Keyed], SortKey],
        matches: Callable[[Any], bool],
        units: int,
    ) -> None:
        super().__init__(sow, units)
        self._sort_key = sort_key
        self._matches = matches
        self._next = 0
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
        return self._runs.advance()

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

    def entries(self) -> list[SortKey]:
        """The sort keys of the records that pass, as they are now, sorted."""
        run, taken = self._caught_up_run()
        if not taken:
            return flat(run)
        entries = [found for chunk in run for found in chunk if found[-1] not in taken]
        entries += self._fresh(taken)
        sort_entries(entries, self._sort_key)  # (two runs: one merge)
        return entries

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


class Selection:
    """A snapshot's records found by a pass in slices, for the command being prepared: those that
    pass its reader's gates (``share``: what decides which pass, and the order), sorted by its
    ``orderby`` or in the records' order. The topic holds it while that command runs
    (``Topic.prepared``), and the snapshot takes it instead of a pass of its own."""

    __slots__ = ("_pass", "_records", "share")

    def __init__(
        self,
        share: tuple[Any, ...],
        sow: Sow,
        matches: Callable[[Any], bool],
        sort_key: Callable[[Keyed], SortKey] | None,
        units: int,
        view_of: Callable[[RecordVersion], Any] | None = None,
    ) -> None:
        """``view_of``: what its subscription remembers of each record sent (a delta or ``oof``
        one), made in slices too when it is in the records' order (sorted: by the snapshot)."""
        self.share = share
        self._records = sow.records
        self._pass: GatePass | SortedPass = (
            GatePass(sow, matches, units, view_of)
            if sort_key is None
            else SortedPass(sow, sort_key, matches, units)
        )

    def advance(self) -> bool:
        """Read one slice, or take one slice of the writes since; True when caught up."""
        sliced = self._pass
        return sliced.advance() and sliced.caught_up()

    def close(self) -> None:
        self._pass.close()

    def finish(self, start: int, end: int | None) -> tuple[int, list[RecordVersion], list[Any] | None]:
        """How many records pass, those at ``start`` to ``end`` (None: the last) of them, and
        their views when it made them (else None: the snapshot makes them)."""
        sliced = self._pass
        records = self._records
        if isinstance(sliced, GatePass):
            versions, views = sliced.in_order()
            matches = len(versions)
            if start or end is not None:
                versions, views = versions[start:end], views[start:end]
            return matches, versions, views if sliced.viewed else None
        if end is not None:  # the first few: a walk of as many
            matches, entries = sliced.leading(end)
            return matches, [records[entry[-1]] for entry in entries[start:]], None
        entries = sliced.entries()
        return len(entries), [records[entry[-1]] for entry in entries[start:]], None
