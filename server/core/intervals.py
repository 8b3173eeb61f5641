"""Subscription conflation (``conflation=250ms``, ``conflation_key=[...]``, PROTOCOL 6.3).

Per conflation key, the changes that arrive within one interval wait here and become one
delivery at the interval's end, computed against what the subscriber held before the interval:
- the final state, as data or a delta; a ``delta=merge`` delta carries every field that any
  change in the interval carried, with its final value (the AMPS rule);
- in-then-out within the interval: the OOF, carrying the state delivered before the interval;
- out-then-in: the final state, and no OOF.

The interval of a key starts with the first change after its last delivery. The key is the
SowKey, or the values at the ``conflation_key`` paths when the subscription names them.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from .paths import PathSteps, get_path
from .records import RecordVersion


@dataclass(slots=True)
class Pending:
    key: str | None  # the SowKey of the latest change (None on a plain topic)
    latest: RecordVersion | None  # the latest version, None when the record was deleted
    deleted_from: RecordVersion | None  # the last version before a delete
    due: float
    carried: set[str] = field(default_factory=set)  # top-level fields any change carried
    gone: str = "deleted"  # why the record went away, when it did: deleted or expired
    # The transaction(s) it holds a change of: released with every other key they changed.
    group: TxGroup | None = None


@dataclass(slots=True, eq=False)
class TxGroup:
    """The keys of one subscription whose pending changes came from one transaction, or from
    transactions that share a key (merged): they are released together, never part of them."""

    tx: str
    keys: set[Hashable] = field(default_factory=set)


def conflation_key(paths: tuple[PathSteps, ...] | None, key: str | None, data: Any) -> Hashable:
    if paths is None:
        return key
    return tuple(repr(get_path(data, steps)) for steps in paths)


def changed_fields(before: Any, after: Any) -> set[str]:
    """Top-level fields of ``after`` that differ from ``before``'s (all of them, when there is none)."""
    if type(after) is not dict:
        return set()
    if type(before) is not dict:
        return set(after)
    return {name for name, value in after.items() if name not in before or before[name] != value}
