"""Live windows (docs/protocol.md, Live windows): ``sow_and_subscribe`` with ``top_n`` holds the
matching records at positions ``skip_n + 1`` to ``skip_n + top_n`` of an order, live.

A ``WindowOrder`` keeps the records of one topic that pass one set of gates (the subscription's
filter and the user's entitlement) sorted by one order, in a ``SortedList`` of sort keys: a
change costs O(log n), never a sort. Windows with the same gates and order share one (the topic
keeps them by ``WindowOrder.share``), so a hundred pages of one grid cost one ordering.

A change moves one record: it leaves its old place and takes a new one, so only the records
between the two places move, each by one. ``WindowOrder.apply`` finds the windows that reach
into that span by bisection (an order keeps its windows sorted by where they end), and skips
the index lookups altogether when the change is past the end of every window. For a touched
window, ``Window.crossings`` finds the records that crossed its edges among the few around them,
each one's position before the change worked out from where the changed record was and is (no
copy of the window is kept).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, TypeVar

from sortedcontainers import SortedKeyList, SortedList

from ..filters.orderby import Keyed, OrderBy, sowkey_order
from ..queue.delivery import OOF
from ..records.version import RecordVersion

SortKey = tuple[Any, ...]  # the order's key, unique per record: its last item is the SowKey
_UNKNOWN = -1  # an index not worked out yet
Item = TypeVar("Item", bound=tuple[Any, ...])  # (..., key, change)


@dataclass(frozen=True, slots=True)
class WindowSpec:
    """What a window subscription asked for: the order (parsed: None is the key order; windows
    share orders by it, so ``/qty desc`` and ``/qty  DESC`` share one) and the range."""

    order: OrderBy | None
    sort_key: Callable[[Keyed], SortKey]
    skip: int
    top: int


def match_all(data: Any) -> bool:
    """The gate of a view without a filter or an entitlement filter: an order over it never
    reads a record's data to decide (a stored record decodes on each read)."""
    return True


class Decoded:
    """A record's key and its data decoded once, for the gate and the sort key to share."""

    __slots__ = ("data", "key")

    def __init__(self, key: str, data: Any) -> None:
        self.key = key
        self.data = data


def entry_of(
    sort_key: Callable[[Keyed], SortKey], matches: Callable[[Any], bool], version: RecordVersion
) -> SortKey | None:
    """The record's sort key in an order, or None when it does not pass the order's gates: its
    data decoded once for both (building the order of a big topic is mostly decoding)."""
    if matches is match_all:
        return sort_key(version)  # an order by key reads no data at all
    data = version.data
    if not matches(data):
        return None
    return sort_key(Decoded(version.key, data))


def sorted_entries(
    sort_key: Callable[[Keyed], SortKey], matches: Callable[[Any], bool], records: Iterable[RecordVersion]
) -> list[SortKey]:
    """The sort keys of ``records`` that pass ``matches``, sorted: one pass that reads every
    record's sort key, and one sort."""
    entries = [entry for version in records if (entry := entry_of(sort_key, matches, version)) is not None]
    sort_entries(entries, sort_key)
    return entries


def sort_entries(entries: list[SortKey], sort_key: Callable[[Keyed], SortKey]) -> None:
    if sort_key is sowkey_order:
        # Sorted by the SowKey string itself: CPython's string fast path is three times quicker
        # than comparing the one-item tuples.
        entries.sort(key=itemgetter(0))
    else:
        entries.sort()


def extend_sorted(ordered: SortedList, values: list[SortKey]) -> None:
    """Add ``values`` (sorted, each after every item ``ordered`` holds) at the end of ``ordered``
    as its own ``update`` does into an empty list: in sublists of its load, nothing compared.
    (``update`` into a list that holds items sorts them all again, or adds one at a time.) It
    writes the list's own fields, as sortedcontainers 2 lays them out (tests/core/fanout/
    test_passes.py holds it to ``update``)."""
    if not values:
        return
    load, lists, maxes = ordered._load, ordered._lists, ordered._maxes
    ordered._len += len(values)
    del ordered._index[:]
    start = 0
    if lists and len(lists[-1]) < load:  # the last sublist filled first: each but the last is full
        start = load - len(lists[-1])
        lists[-1].extend(values[:start])
        maxes[-1] = lists[-1][-1]
    lists.extend(values[at : at + load] for at in range(start, len(values), load))
    maxes.extend(part[-1] for part in lists[len(maxes) :])


class OrderAssembly:
    """A ``WindowOrder`` put together a chunk at a time (``advance``) from its entries, sorted
    already, in chunks (a build in slices: orders.py), and its index of keys (``keys``: each
    entry by its SowKey, made as the entries were found): its sorted list grows by a chunk each
    time, so no step holds the loop for the whole of a big order."""

    __slots__ = ("_chunks", "_next", "order")

    def __init__(
        self,
        sort_key: Callable[[Keyed], SortKey],
        matches: Callable[[Any], bool],
        chunks: list[list[SortKey]],
        keys: dict[str, SortKey],
    ) -> None:
        self.order = WindowOrder(sort_key, matches, [])
        # (Made as they were found, not here: a dict filled while no other object is made stays
        # young, and every young collection walks it whole; eight of 80,000 took one 80 ms.)
        self.order.keys = keys
        self._chunks = chunks
        self._next = 0

    def advance(self) -> bool:
        """Take one more chunk; True when they are all taken."""
        chunks, at = self._chunks, self._next
        if at < len(chunks):
            extend_sorted(self.order.sorted, chunks[at])
            self._next = at + 1
        return self._next >= len(chunks)


class WindowOrder:
    """The records that pass one set of gates, in one order, shared by every window over them."""

    def __init__(
        self, sort_key: Callable[[Keyed], SortKey], matches: Callable[[Any], bool], entries: list[SortKey]
    ) -> None:
        """The order of the records whose sort keys are ``entries`` (sorted already, each
        ``sort_key`` of a record that passes ``matches``)."""
        self.sort_key = sort_key
        self.matches = matches
        self.keys: dict[str, SortKey] = {entry[-1]: entry for entry in entries}
        self._start(entries)

    @classmethod
    def sorting(
        cls,
        sort_key: Callable[[Keyed], SortKey],
        matches: Callable[[Any], bool],
        records: Iterable[RecordVersion],
    ) -> WindowOrder:
        """The order of ``records`` that pass ``matches``."""
        return cls(sort_key, matches, sorted_entries(sort_key, matches, records))

    @classmethod
    def within(
        cls, base: WindowOrder, matches: Callable[[Any], bool], records: Mapping[str, RecordVersion]
    ) -> WindowOrder:
        """The records of ``base`` (an order by the same sort, with no gates) that pass
        ``matches``, taken in ``base``'s order: no sort key worked out and nothing sorted, which
        is most of what building an order costs. Its sort keys are ``base``'s own."""
        # The gates read the records in the order they are stored, and the walk of base's order
        # only asks a set: reading them in base's order instead, from all over memory, took
        # twice as long (300,000 records: 0.42 s against 0.98 s).
        passing = {key for key, version in records.items() if matches(version.data)}
        return cls(base.sort_key, matches, [entry for entry in base.sorted if entry[-1] in passing])

    def _start(self, entries: list[SortKey]) -> None:
        """Hold ``entries``, sorted already (a sorted input costs SortedList one pass)."""
        self.sorted: SortedList = SortedList(entries)
        # Its windows by where they end, so a change finds the few it touches by bisection.
        self.windows: SortedKeyList = SortedKeyList(key=_by_end)
        self.share: tuple[Any, ...] = ()  # the topic's key for it
        # The change last applied: the SowKey, its sort key before and after (None: absent),
        # and its index after (worked out when asked: changed_index).
        self.change: tuple[str | None, SortKey | None, SortKey | None] = (None, None, None)
        self._changed_index: int | None = _UNKNOWN

    def __len__(self) -> int:
        return len(self.sorted)

    def apply(self, key: str, new: RecordVersion | None) -> list[Window]:
        """Take the change of record ``key`` to ``new`` (None: it is gone); the windows it may
        touch: those around the positions it moved the records between."""
        old_key = self.keys.get(key)
        new_key = self._entry(new) if new is not None else None
        self.change = (key, old_key, new_key)
        self._changed_index = _UNKNOWN
        ordered = self.sorted
        if old_key is None and new_key is None:
            return []
        # Past the end of every window before and after: nothing to find (the common case of
        # top-N windows over a big topic), and no index to work out.
        far = self._beyond_every_window(old_key) and self._beyond_every_window(new_key)
        if old_key == new_key:
            if far:
                return []
            in_place = self.changed_index()  # an update in place
            assert in_place is not None
            low = high = in_place
        else:
            if old_key is not None:
                ordered.remove(old_key)
                del self.keys[key]
            if new_key is not None:
                ordered.add(new_key)
                self.keys[key] = new_key
            if far:
                return []
            new_index = self.changed_index()
            if old_key is None or new_key is None:
                # In or out: every record after it moves by one.
                low = new_index if new_index is not None else ordered.bisect_left(old_key)
                high = len(ordered)
            else:
                old_index = ordered.bisect_left(old_key) - (1 if new_key < old_key else 0)
                assert new_index is not None
                low, high = min(old_index, new_index), max(old_index, new_index)
        # Only records at positions low to high moved: a window [skip, end) is touched when it
        # reaches into them (end > low, skip <= high).
        windows = self.windows
        first = windows.bisect_key_left((low + 1, -1))
        return [window for window in windows.islice(first) if window.skip <= high]

    def _entry(self, version: RecordVersion) -> SortKey | None:
        return entry_of(self.sort_key, self.matches, version)

    def _beyond_every_window(self, sort_key: SortKey | None) -> bool:
        """Whether a record of ``sort_key`` is (or would be) past every window's end, in the
        order as it is before the change (None: absent, which is past them too)."""
        if sort_key is None:
            return True
        windows, ordered = self.windows, self.sorted
        if not windows:
            return True
        end = windows[-1].end
        return len(ordered) >= end > 0 and bool(ordered[end - 1] < sort_key)

    def changed_index(self) -> int | None:
        """The index of the record last changed (None: it is not in the order), worked out once."""
        if self._changed_index == _UNKNOWN:
            sort_key = self.change[2]
            self._changed_index = None if sort_key is None else self.sorted.index(sort_key)
        return self._changed_index


def _by_end(window: Window) -> tuple[int, int]:
    return (window.end, window.serial)


_SERIALS = itertools.count()


class Window:
    """One subscription's range of a shared order."""

    __slots__ = ("end", "order", "serial", "skip", "subscription")

    def __init__(self, order: WindowOrder, skip: int, top: int, subscription: Any) -> None:
        self.order = order
        self.skip = skip
        self.end = skip + top
        self.subscription = subscription  # whose window it is (the topic delivers to it)
        self.serial = next(_SERIALS)

    def position(self, key: str) -> int | None:
        """The record's 1-based position in the window, or None when it is not in it."""
        order = self.order
        if key == order.change[0]:
            index = order.changed_index()  # worked out once for every window of the order
        else:
            sort_key = order.keys.get(key)
            index = None if sort_key is None else order.sorted.index(sort_key)
        if index is None:
            return None
        return index - self.skip + 1 if self.skip <= index < self.end else None

    def holds(self, key: str) -> bool:
        return self.position(key) is not None

    def sowkeys(self) -> list[str]:
        """The window's records, in order."""
        return [sort_key[-1] for sort_key in self.order.sorted.islice(self.skip, self.end)]

    def crossings(self) -> tuple[list[str], list[str]]:
        """The records other than the changed one that the last change moved into the window and
        out of it (entered, left)."""
        changed, old_key, new_key = self.order.change
        if old_key == new_key:
            return [], []
        ordered = self.order.sorted
        skip, end = self.skip, self.end
        entered: list[str] = []
        left: list[str] = []
        # Only the records now at skip - 1, skip, end - 1 and end can have crossed an edge.
        for index in sorted({skip - 1, skip, end - 1, end}):
            if not 0 <= index < len(ordered):
                continue
            sort_key = ordered[index]
            if sort_key[-1] == changed:
                continue
            # Where it was: the changed record counted before it then, and now.
            before = index
            if new_key is not None and new_key < sort_key:
                before -= 1
            if old_key is not None and old_key < sort_key:
                before += 1
            was_in, is_in = skip <= before < end, skip <= index < end
            if is_in and not was_in:
                entered.append(sort_key[-1])
            elif was_in and not is_in:
                left.append(sort_key[-1])
        return entered, left


def in_position_order(window: Window | None, positions: bool, out: list[Item]) -> list[Item]:
    """With ``positions``, the OOFs first, then the rest by the position they carry, so a
    client that applies them in order (an entry at ``pos`` p moves the rows from p down, an
    OOF the rows below it up) ends with the window's order. Each item ends with a record's key
    and its change (what comes before them rides along)."""
    if not positions or window is None or len(out) < 2:
        return out

    def place(item: Item) -> tuple[bool, int]:
        key, change = item[-2], item[-1]
        position = window.position(key) if key is not None else None
        return (change[0] != OOF, position or 0)

    return sorted(out, key=place)
