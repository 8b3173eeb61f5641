"""Aggregates computed from scratch, the way a reader of the protocol would: what the running
accumulators and the group table are checked against."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from server.core.aggregate.functions import prepare
from server.core.aggregate.group_keys import group_key
from server.core.aggregate.parse import Spec
from server.core.filters.functions import EvalContext
from server.core.limits import MAX_INTEGER, MIN_INTEGER
from server.core.records.paths import MISSING, get_path, set_path


def _exact_out(value: Fraction | int) -> Any:
    if isinstance(value, int) and MIN_INTEGER <= value <= MAX_INTEGER:
        return value
    return float(value)


def _order(prepared: Any) -> tuple[int, Any]:
    """How MIN and MAX order prepared values: numbers, then texts (a prepared string is a text)."""
    return (1, prepared) if type(prepared) is str else (0, prepared)


def aggregate(function: str, raw: list[Any]) -> Any:
    """``function`` over the raw values of a group's records (NULLs included, to be ignored)."""
    values = [v for v in (prepare(function, value) for value in raw) if v is not None]
    if function == "COUNT":
        return len(values)
    if function == "COUNT_DISTINCT":
        return len(set(values))
    if not values:
        return None
    if function == "MIN":
        return min(values, key=_order)
    if function == "MAX":
        return max(values, key=_order)
    exact = [Fraction(v) for v in values]
    total = sum(exact, Fraction(0))
    n = len(values)
    if function == "SUM":
        if all(type(v) is int for v in values):
            return _exact_out(int(total))
        return float(total)
    if function == "AVG":
        return float(total / n)
    mean = total / n
    squares = sum(((v - mean) ** 2 for v in exact), Fraction(0))
    divisor = n if function == "STDDEV_POP" else n - 1
    return None if divisor == 0 else math.sqrt(float(squares / divisor))


def groups_from_scratch(spec: Spec, records: dict[str, Any], order: list[str]) -> dict[str, Any]:
    """Group key -> group record, over ``records`` (key -> data); ``order``: record keys from least
    to most recently changed (a plain field takes the latest record's value)."""
    ctx = EvalContext()
    members: dict[str, list[str]] = {}
    for key in order:
        if key in records:
            values = tuple(get_path(records[key], steps) for steps in spec.grouping)
            members.setdefault(group_key(values), []).append(key)
    out: dict[str, Any] = {}
    for gkey, keys in members.items():
        latest = records[keys[-1]]
        record: dict[str, Any] = {}
        for f in spec.fields:
            if f.function is not None:
                if f.argument is None:
                    value: Any = len(keys)
                else:
                    value = aggregate(f.function, [f.argument.evaluate(records[k], ctx) for k in keys])
            elif f.path is not None:
                value = get_path(latest, f.path)
            else:
                assert f.argument is not None
                value = f.argument.evaluate(latest, ctx)
            if value is not MISSING:
                set_path(record, f.output, value)
        out[gkey] = record
    return out


def remember(records: dict[Any, Any], order: list[Any], key: Any, data: Any) -> None:
    """A change as the reference sees it: ``records`` (key -> data) and ``order`` (keys from least
    to most recently changed) after record ``key`` became ``data`` (None: it went)."""
    if key in order:
        order.remove(key)
    if data is None:
        records.pop(key, None)
    else:
        records[key] = data
        order.append(key)
