"""A group's key (docs/protocol.md, Aggregated views): derived from its grouping values alone,
canonically and hashed as a SowKey is (records/keys.py), so it is the same on every node and after
a restart."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from ..records.canonical import SEPARATOR, joined, scalar
from ..records.paths import MISSING


def _canonical(value: Any) -> str:
    # Tagged as SowKeys are (records/canonical.py); NULL and missing are one group; objects and
    # arrays by their JSON with sorted keys.
    if value is MISSING or value is None:
        return "z:"
    text = scalar(value)
    if text is not None:
        return text
    return "j:" + orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def group_key(values: tuple[Any, ...]) -> str:
    """The ``k`` of the group of these grouping values."""
    # Marked as a group's, so that it is never the SowKey of a record of the same topic (a socket
    # queue conflates by topic and key, and a socket may hold both views).
    canonical = "group" + SEPARATOR + joined([_canonical(value) for value in values])
    return hashlib.blake2b(canonical.encode(), digest_size=10).hexdigest()
