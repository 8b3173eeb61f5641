"""Delta publish merging (docs/protocol.md, Publish and delta publish): objects merge field by
field, everything else replaces."""

from __future__ import annotations

from typing import Any


def merge_record(held: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """``delta`` merged into ``held`` as a new record.

    The inputs are not modified; untouched subtrees are shared with ``held``.
    """
    merged = dict(held)
    for name, value in delta.items():
        old = merged.get(name)
        if type(value) is dict and type(old) is dict:
            merged[name] = merge_record(old, value)
        else:
            merged[name] = value
    return merged
