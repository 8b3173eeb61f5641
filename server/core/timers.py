"""What happens at a time: subscription-conflation intervals ending, and records expiring.

Two heaps, and the earliest due time, which the runtime sleeps until (``on_earlier`` wakes it
when something earlier is scheduled). A record has at most one expiry entry: a publish that gives
it a new lifetime leaves the entry where it is, and when the entry comes due it is moved to the
record's current expiry. So the heap never grows beyond the records that expire, however often
they are published.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .subscription import Subscription

Lifetime = Callable[[str, str], float | None]  # (topic, SowKey) -> the record's expiry, None if gone


class Timers:
    def __init__(self) -> None:
        self._intervals: list[tuple[float, int, Subscription]] = []
        self._ids = itertools.count()
        self._expiries: list[tuple[float, str, str]] = []
        self._slots: set[tuple[str, str]] = set()
        self.on_earlier: Callable[[float], None] = lambda due: None  # set by the runtime

    @property
    def expiry_entries(self) -> int:
        return len(self._expiries)

    def next_due(self) -> float | None:
        dues = [heap[0][0] for heap in (self._intervals, self._expiries) if heap]
        return min(dues) if dues else None

    def _scheduled(self, due: float, earliest: float | None) -> None:
        if earliest is None or due < earliest:
            self.on_earlier(due)

    def schedule(self, subscription: Subscription, due: float) -> None:
        """The end of one of ``subscription``'s conflation intervals."""
        earliest = self.next_due()
        heapq.heappush(self._intervals, (due, next(self._ids), subscription))
        self._scheduled(due, earliest)

    def expire_at(self, topic: str, key: str, due: float) -> None:
        slot = (topic, key)
        if slot in self._slots:
            return  # the record's pending entry moves on to this expiry when it comes due
        self._slots.add(slot)
        earliest = self.next_due()
        heapq.heappush(self._expiries, (due, topic, key))
        self._scheduled(due, earliest)

    def intervals_due(self, now: float) -> Iterator[Subscription]:
        intervals = self._intervals
        while intervals and intervals[0][0] <= now:
            yield heapq.heappop(intervals)[2]

    def expiries_due(self, now: float, lifetime: Lifetime) -> Iterator[tuple[str, str]]:
        """The records whose lifetime has ended by ``now``, as (topic, SowKey)."""
        expiries = self._expiries
        while expiries and expiries[0][0] <= now:
            _, topic, key = heapq.heappop(expiries)
            current = lifetime(topic, key)
            if current is not None and current > now:
                heapq.heappush(expiries, (current, topic, key))  # republished: a new lifetime
                continue
            self._slots.discard((topic, key))
            if current is not None:
                yield topic, key
