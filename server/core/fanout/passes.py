"""Passes over a topic's records in slices: which records pass a view's gates, sorted or in the
records' order, read a slice at a time while other sockets run between the slices, then finished
in one step that takes again every record written meanwhile.

A pass reads the records as they were when it began (a list of their versions: versions are never
changed, only replaced) and asks the SOW to note every key written since (``Sow.watch``). Its end
is exact: what it answers is what one pass over the records as they are at its end would answer,
in the same order. So a command whose answer such a pass prepares (handlers/preparing.py) is
answered as if it had run whole at that moment, which is what it would have been had it waited
its turn. The end costs what was written during the pass, and a sorted pass's last merge.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from operator import itemgetter
from typing import Any

from ..filters.orderby import Keyed
from ..limits import SLICE_UNITS
from ..records.version import RecordVersion
from ..sow.store import Sow, Watched
from .runs import Run, RunMerge, flat
from .windows import SortKey, entry_of, sort_entries

_FRESH = object()  # a view to make from the version as it is now


class _Frozen:
    """What a pass in slices reads: the records as they were at its first slice (``_start``: not
    when the pass is made, so a pass waiting for its turn holds no copy), and the keys written
    since (``watched``), until ``close``."""

    def __init__(self, sow: Sow) -> None:
        self._sow = sow
        self.records = sow.records
        self._versions: list[RecordVersion] = []
        self.watched: Watched = {}
        self._started = False

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
        super().__init__(sow)
        self._matches = matches
        self._batch = max(1, SLICE_UNITS // max(1, units))
        self._next = 0
        self._found: list[int] = []  # indexes in _versions of those that pass
        self._view_of = view_of
        self._views: list[Any] = []  # view_of of each found one, in _found's order

    def advance(self) -> bool:
        """Read one slice; True when the records are all read (the end is left)."""
        if not self._started:
            self._start()
        versions, start = self._versions, self._next
        if start >= len(versions):
            return self._view_some()
        end = min(len(versions), start + self._batch)
        matches = self._matches
        self._found += [index for index in range(start, end) if matches(versions[index].data)]
        self._next = end
        return end >= len(versions) and self._view_of is None

    def _view_some(self) -> bool:
        """Make the views of one slice of the versions found; True when they are all made."""
        view_of, found, views = self._view_of, self._found, self._views
        if view_of is None or len(views) >= len(found):
            return True
        versions = self._versions
        views += [view_of(versions[index]) for index in found[len(views) : len(views) + self._batch]]
        return len(views) >= len(found)

    def _read_all(self) -> None:
        while not self.advance():
            pass
        self.close()

    def _passes(self, version: RecordVersion | None) -> bool:
        return version is not None and self._matches(version.data)

    def in_order(self) -> tuple[list[RecordVersion], list[Any]]:
        """The versions that pass, as they are now, in the records' order, and (with ``view_of``)
        the view of each, else no views."""
        self._read_all()
        versions, found, watched, views = self._versions, self._found, self.watched, self._views
        view_of = self._view_of
        if not watched:
            return [versions[index] for index in found], views
        records = self._sow.records
        # Changed in place (or removed): where each was in the records' order is where it still
        # is, if it is there; made since: after every record that was there, in the order made.
        in_place = {key for key, made in watched.items() if not made}
        kept = [
            (index, views[at] if view_of is not None else None)
            for at, index in enumerate(found)
            if versions[index].key not in watched
        ]
        if in_place:
            kept += [
                (index, _FRESH)
                for index, version in enumerate(versions)
                if version.key in in_place and self._passes(records.get(version.key))
            ]
            kept.sort(key=itemgetter(0))
        answer = [versions[index] for index, _ in kept]
        if in_place:  # (as they are now)
            answer = [records[version.key] if version.key in in_place else version for version in answer]
        for key, made in watched.items():
            current = records.get(key)
            if made and self._passes(current):
                assert current is not None
                answer.append(current)
                kept.append((-1, _FRESH))
        if view_of is None:
            return answer, []
        held = [view for _, view in kept]
        return answer, [
            view_of(version) if view is _FRESH else view for view, version in zip(held, answer, strict=True)
        ]

    @property
    def viewed(self) -> bool:
        """Whether it makes the views of what it finds."""
        return self._view_of is not None

    def passing(self) -> set[str]:
        """The keys of the records that pass, as they are now; the writes noted so far are
        forgotten, and those from now on noted (``watched``) until ``close``."""
        while not self.advance():
            pass
        versions, watched, records = self._versions, self.watched, self._sow.records
        keys = {versions[index].key for index in self._found}
        for key in watched:
            if self._passes(records.get(key)):
                keys.add(key)
            else:
                keys.discard(key)
        watched.clear()
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
        super().__init__(sow)
        self._sort_key = sort_key
        self._matches = matches
        self._batch = max(1, SLICE_UNITS // max(1, units))
        self._next = 0
        self._runs = RunMerge(partial(sort_entries, sort_key=sort_key))
        # Each sort key found, by its SowKey, as it is found: what ``leading`` counts, and a
        # window order's index of keys (windows.OrderAssembly).
        self.found: dict[str, SortKey] = {}

    def _entry(self, version: RecordVersion) -> SortKey | None:
        return entry_of(self._sort_key, self._matches, version)

    def advance(self) -> bool:
        """Read one slice, or merge a slice of two runs; True when one sorted run is left."""
        if not self._started:
            self._start()
        versions, start, runs = self._versions, self._next, self._runs
        if start < len(versions):
            end = min(len(versions), start + self._batch)
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
        ``watched`` may have changed since), sorted, in chunks. The writes go on being noted."""
        while not self.advance():
            pass
        return self._runs.result()

    def _fresh(self) -> list[SortKey]:
        """The sort keys of the records written since the pass began that pass now, sorted."""
        records, entry = self._sow.records, self._entry
        fresh = [
            found
            for key in self.watched
            if (version := records.get(key)) is not None and (found := entry(version)) is not None
        ]
        sort_entries(fresh, self._sort_key)
        return fresh

    def entries(self) -> list[SortKey]:
        """The sort keys of the records that pass, as they are now, sorted."""
        run = self.merged()
        self.close()
        watched = self.watched
        if not watched:
            return flat(run)
        entries = [found for chunk in run for found in chunk if found[-1] not in watched]
        entries += self._fresh()
        sort_entries(entries, self._sort_key)  # (two runs: one merge)
        return entries

    def leading(self, count: int) -> tuple[int, list[SortKey]]:
        """How many records pass, as they are now, and the first ``count`` sort keys of them: a
        walk of as many, whatever the topic's size."""
        run, watched = self.merged(), self.watched
        self.close()
        every = sum(map(len, run))
        leading: list[SortKey] = []
        for chunk in run:
            if len(leading) >= count:
                break
            leading += [found for found in chunk if found[-1] not in watched]
        if not watched:
            return every, leading[:count]
        fresh = self._fresh()
        stale = sum(1 for key in watched if key in self.found)
        leading += fresh[:count]
        sort_entries(leading, self._sort_key)
        return every - stale + len(fresh), leading[:count]


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
        return self._pass.advance()

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
