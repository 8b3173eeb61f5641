"""What happens at a time: subscription-conflation intervals ending, and records expiring.

Two heaps, and the earliest due time (``next_due``), which the runtime sleeps until; after every
call into the core it looks whether something earlier was scheduled (runtime/pump.py). A record
has one live expiry entry, due at ``_expiry_due[(topic, key)]``. A publish that gives it a later
lifetime leaves the entry where it is, and when the entry comes due it is moved to the record's
current expiry, so a record published over and over adds nothing to the heap. A publish that
gives it an earlier lifetime cannot wait for that: it pushes a new entry and the old one goes
stale (skipped when it comes due, swept once stale entries are half the heap). The record's own
``expires_at`` always decides: an entry that comes due for a record with no lifetime any more
(republished with ``e: 0``, or deleted) is dropped.

An interval entry names its subscription. When the subscription ends (``cancel``) its entries
are dead: the heap is rebuilt without them as soon as they are half of it, and the heap is also
swept of ended subscriptions whenever it has doubled since the last sweep. So ended
subscriptions (and the records their pending changes hold) never stay in memory until an
interval of theirs, perhaps hours away, comes due.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..fanout.subscription import Subscription

Lifetime = Callable[[str, str], float | None]  # (topic, SowKey) -> the record's expiry, None if gone


MIN_SWEEP = 64  # a heap this small is never worth a sweep


class Timers:
    def __init__(self) -> None:
        self._intervals: list[tuple[float, int, Subscription]] = []
        self._entries: dict[Subscription, int] = {}  # live interval entries per subscription
        self._dead = 0  # entries of cancelled subscriptions still in the heap
        self._swept_size = 0  # the heap's size after the last sweep
        self._ids = itertools.count()
        self._expiries: list[tuple[float, str, str]] = []
        self._expiry_due: dict[tuple[str, str], float] = {}  # (topic, key) -> due of its live entry
        self._stale = 0  # expiry entries superseded by an earlier one for the same record

    @property
    def expiry_entries(self) -> int:
        return len(self._expiries)

    @property
    def interval_entries(self) -> int:
        return len(self._intervals)

    def next_due(self) -> float | None:
        """The earliest due time, None when nothing is scheduled (asked after every call into the
        core: runtime/pump.py)."""
        intervals, expiries = self._intervals, self._expiries
        if not intervals:
            return expiries[0][0] if expiries else None
        due = intervals[0][0]
        return min(due, expiries[0][0]) if expiries else due

    def schedule(self, subscription: Subscription, due: float) -> None:
        """The end of one of ``subscription``'s conflation intervals."""
        heapq.heappush(self._intervals, (due, next(self._ids), subscription))
        self._entries[subscription] = self._entries.get(subscription, 0) + 1
        if len(self._intervals) >= max(MIN_SWEEP, 2 * self._swept_size):
            self._sweep()

    def cancel(self, subscription: Subscription) -> None:
        """``subscription`` has ended: its interval entries are dead."""
        self._dead += self._entries.pop(subscription, 0)
        if self._dead and 2 * self._dead >= len(self._intervals):
            self._sweep()

    def _sweep(self) -> None:
        """Rebuild the interval heap without the entries of ended subscriptions."""
        live = self._entries
        for subscription in [sub for sub in live if sub.closed]:
            del live[subscription]  # ended without cancel (replaced by a new subscription)
        self._intervals = [entry for entry in self._intervals if entry[2] in live]
        heapq.heapify(self._intervals)
        self._dead = 0
        self._swept_size = len(self._intervals)

    def expire_at(self, topic: str, key: str, due: float) -> None:
        """The record (``topic``, ``key``) now expires at ``due`` (its ``expires_at``)."""
        slot = (topic, key)
        scheduled = self._expiry_due.get(slot)
        if scheduled is not None and scheduled <= due:
            return  # the live entry moves on to this expiry when it comes due
        if scheduled is not None:
            self._stale += 1  # a shorter lifetime: the later entry must not be the one that fires
        self._expiry_due[slot] = due
        heapq.heappush(self._expiries, (due, topic, key))
        if 2 * self._stale >= max(MIN_SWEEP, len(self._expiries)):
            self._sweep_expiries()

    def _sweep_expiries(self) -> None:
        """Rebuild the expiry heap from the live entries alone: a lifetime shortened again and
        again must not grow it without bound."""
        self._expiries = [(due, topic, key) for (topic, key), due in self._expiry_due.items()]
        heapq.heapify(self._expiries)
        self._stale = 0

    def intervals_due(self, now: float) -> Iterator[Subscription]:
        while self._intervals and self._intervals[0][0] <= now:
            subscription = heapq.heappop(self._intervals)[2]
            count = self._entries.get(subscription)
            if count is None:
                self._dead = max(0, self._dead - 1)
                continue  # cancelled: nothing to deliver
            if count > 1:
                self._entries[subscription] = count - 1
            else:
                del self._entries[subscription]
            yield subscription

    def expiries_due(self, now: float, lifetime: Lifetime) -> Iterator[tuple[str, str]]:
        """The records whose lifetime has ended by ``now``, as (topic, SowKey)."""
        while self._expiries and self._expiries[0][0] <= now:
            due, topic, key = heapq.heappop(self._expiries)
            slot = (topic, key)
            if self._expiry_due.get(slot) != due:
                self._stale = max(0, self._stale - 1)
                continue  # superseded by an earlier entry for the record, which has run already
            current = lifetime(topic, key)
            if current is not None and current > now:
                self._expiry_due[slot] = current  # republished with a later lifetime: move on
                heapq.heappush(self._expiries, (current, topic, key))
                continue
            del self._expiry_due[slot]
            if current is not None:
                yield topic, key
