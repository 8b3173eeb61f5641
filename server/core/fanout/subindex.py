"""Subscriptions of one topic, indexed by what their filters require (see filters.analysis).

``candidates`` returns, in subscription order, every subscription that might match any of the
given records: those without an index term, and those whose term has a key that one of the
records has. Every other subscription is certain not to match them.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from ..filters.analysis import IndexTerm
from .subscription import Subscription


class SubscriptionIndex:
    def __init__(self) -> None:
        self.unindexed: dict[Subscription, None] = {}
        self._tables: dict[tuple[str | int, ...], dict[Hashable, dict[Subscription, None]]] = {}
        self._terms: dict[Subscription, IndexTerm] = {}

    def __len__(self) -> int:
        return len(self.unindexed) + len(self._terms)

    @property
    def indexed(self) -> bool:
        return bool(self._terms)

    def add(self, sub: Subscription) -> None:
        term = sub.index_term
        if term is None:
            self.unindexed[sub] = None
            return
        self._terms[sub] = term
        table = self._tables.setdefault(term.steps, {})
        for key in term.keys:
            table.setdefault(key, {})[sub] = None

    def discard(self, sub: Subscription) -> None:
        if self.unindexed.pop(sub, 0) is None:
            return
        term = self._terms.pop(sub, None)
        if term is None:
            return
        table = self._tables[term.steps]
        for key in term.keys:
            bucket = table[key]
            del bucket[sub]
            if not bucket:
                del table[key]
        if not table:
            del self._tables[term.steps]

    def candidates(self, *records: Any) -> list[Subscription]:
        if not self._terms:
            return list(self.unindexed)
        found = dict(self.unindexed)
        for steps, table in self._tables.items():
            term = IndexTerm(steps, frozenset())
            for record in records:
                for key in term.record_keys(record):
                    bucket = table.get(key)
                    if bucket:
                        found.update(bucket)
        if len(found) > 1:
            return sorted(found, key=lambda sub: sub.order)
        return list(found)
