"""JSON value helpers shared by merge, diff and select: equality that respects JSON types."""

from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]


def json_equal(a: Any, b: Any) -> bool:
    """Equality as a JSON reader sees it: ``1``, ``1.0`` and ``true`` are three different values."""
    if a is b:
        return True
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is dict:
        if len(a) != len(b):
            return False
        return all(name in b and json_equal(value, b[name]) for name, value in a.items())
    if ta is list:
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
