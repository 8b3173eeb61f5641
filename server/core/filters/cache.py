"""One least-recently-used cache for everything compiled from client text (filters, regular
expressions, order-by lists), bounded by the memory its entries are estimated to hold rather
than by their number.

An entry count is no bound at all when the client chooses the entry size: 4,096 cached 59 KB
filters are 1.2 GB. Each entry here carries an estimate of its bytes, and the least recently used
entries go as soon as the total passes the limit, so the cache never holds more than
``COMPILED_CACHE_BYTES`` however the texts are chosen. An entry too big to share the cache with
others is not kept at all: compiling it again is the price of its size.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

# Everything compiled from client text, together. The working set of a real deployment (a few
# hundred distinct filters of a few hundred characters) takes well under 1 MB of it.
COMPILED_CACHE_BYTES = 32 * 1024 * 1024


class ByteBoundedCache:
    """``get`` and ``put`` by key; the total estimated cost of the entries stays within ``max_bytes``."""

    __slots__ = ("_entries", "max_bytes", "total_bytes")

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.total_bytes = 0
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def get(self, key: Hashable) -> Any:
        """The cached value (now the most recently used), or None."""
        found = self._entries.get(key)
        if found is None:
            return None
        self._entries.move_to_end(key)
        return found[0]

    def put(self, key: Hashable, value: Any, cost: int) -> None:
        """Keep ``value`` under ``key``, estimated to hold ``cost`` bytes; evicts the least
        recently used entries to make room. An entry over an eighth of the cache is not kept, so
        that one huge text can never flush the working set."""
        old = self._entries.pop(key, None)
        if old is not None:
            self.total_bytes -= old[1]
        if cost > self.max_bytes // 8:
            return
        self._entries[key] = (value, cost)
        self.total_bytes += cost
        while self.total_bytes > self.max_bytes:
            _, (_, evicted) = self._entries.popitem(last=False)
            self.total_bytes -= evicted

    def clear(self) -> None:
        self._entries.clear()
        self.total_bytes = 0


COMPILED = ByteBoundedCache(COMPILED_CACHE_BYTES)
