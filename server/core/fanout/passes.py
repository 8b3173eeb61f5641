"""Passes over a topic's records in slices: which records pass a view's gates, sorted or in the
records' order, read a slice at a time while other sockets run between the slices, then caught
up with the records written meanwhile, a slice at a time too (frozen.py), then finished in one
step: ``GatePass`` in the records' order, ``SortedPass`` (sorted_pass.py) sorted, and
``Selection``, a snapshot's records found by either.

Its end is exact: what a pass answers is what one pass over the records as they are at its end
would answer, in the same order. So a command whose answer such a pass prepares
(handlers/preparing.py) is answered as if it had run whole at that moment, which is what it would
have been had it waited its turn. The end costs the writes left (a slice, unless the topic is
written faster than the pass takes them), and its final list.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

from ..filters.orderby import Keyed
from ..limits import SLICE_UNITS
from ..records.version import RecordVersion
from ..sow.store import Sow
from .frozen import Frozen, Seen, Writes
from .sorted_pass import SortedPass
from .windows import SortKey


class GatePass(Frozen):
    """Which records pass ``matches``, a slice at a time (``advance``), then ``in_order`` or
    ``passing``. ``units``: the estimated cost of one record (session/quota.py's units), which
    sizes the slices."""

    def __init__(
        self,
        sow: Sow,
        matches: Callable[[Any], bool] | None,
        units: int,
        view_of: Callable[[RecordVersion], Any] | None = None,
    ) -> None:
        """``matches``: None when every record passes (none is read to ask). ``view_of``: what a
        subscription that remembers what it was sent (a delta or ``oof`` one) remembers of each
        version, made a slice at a time once the records are read."""
        super().__init__(sow, units)
        self._matches = matches
        self._next = 0
        self._found: list[int] = []  # indexes in _versions of those that pass
        self._view_of = view_of
        self._views: list[Any] = []  # view_of of each found one, in _found's order
        # The same views by key, made with them: what the subscription will remember, taken
        # whole (``remembered``) rather than remembered one by one in the command's step.
        self._held: dict[str, Any] = {}
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
        if matches is None:
            self._found += range(start, end)
        else:
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
            if version is not None and (self._matches is None or self._matches(version.data)):
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
        slice_of = [self._versions[index] for index in found[len(views) : len(views) + self.batch]]
        made = [view_of(version) for version in slice_of]
        views += made
        self._held.update(zip([version.key for version in slice_of], made, strict=True))
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

    def remembered(self) -> dict[str, Any]:
        """Once ``in_order`` has answered: the view of each record that passes, by key (the views
        it answered, made a slice at a time), with the writes taken since applied: a cost of
        those writes, not of the records."""
        held, versions = self._held, self._versions
        for index, seen in self._changed.items():
            if seen is None:
                held.pop(versions[index].key, None)
            else:
                held[versions[index].key] = seen[1]
        for key, seen in self._made.items():  # (after the changes: a record made again is here)
            if seen is None:
                held.pop(key, None)
            else:
                held[key] = seen[1]
        return held

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
        matches: Callable[[Any], bool] | None,
        sort_key: Callable[[Keyed], SortKey] | None,
        units: int,
        view_of: Callable[[RecordVersion], Any] | None = None,
        every: bool = False,
    ) -> None:
        """``matches``: None when every record passes. ``view_of``: what its subscription
        remembers of each record sent (a delta or ``oof`` one), made in slices too. ``every``:
        it will answer every record that passes, not the first few (``finish``'s ``end``): a
        sorted one looks up their versions in slices too."""
        self.share = share
        self._records = sow.records
        self._pass: GatePass | SortedPass = (
            GatePass(sow, matches, units, view_of)
            if sort_key is None
            else SortedPass(sow, sort_key, matches or _every, units, view_of, every)
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
        versions = sliced.every_version()
        return len(versions), versions[start:] if start else versions, None

    def remembered(self, start: int, end: int | None) -> dict[str, Any] | None:
        """Once ``finish(start, end)`` has answered: what its subscription remembers of the records
        answered, by key, made in slices (``view_of``), when they are every record that passes;
        else None (the snapshot remembers them)."""
        sliced = self._pass
        if start or end is not None or not sliced.viewed:
            return None
        return sliced.remembered()


def _every(_: Any) -> bool:
    return True
