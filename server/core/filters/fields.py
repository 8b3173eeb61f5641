"""Reading a field path from a record, as filters see it: a path through an array of objects
reads that field of every element (``/legs/qty`` over ``{"legs": [{"qty": 1}, {"qty": 9}]}`` is
``[1, 9]``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..records.paths import MISSING
from .budget import ELEMENT_UNITS


def _free(units: int) -> None:
    return None


def read_field(value: Any, steps: tuple[str | int, ...], spend: Callable[[int], None] = _free) -> Any:
    """The value at ``steps``, or ``MISSING``. ``spend`` is charged for every array element the
    path reads through (a filter passes the evaluation budget's)."""
    for index, step in enumerate(steps):
        kind = type(value)
        if isinstance(step, int):
            if kind is not list or step >= len(value):
                return MISSING
            value = value[step]
        elif kind is dict:
            value = value.get(step, MISSING)
            if value is MISSING:
                return MISSING
        elif kind is list:
            rest = steps[index:]
            flat: list[Any] = []
            spend(ELEMENT_UNITS * len(value))
            for item in value:
                found = read_field(item, rest, spend)
                if found is not MISSING:
                    flat.extend(found if type(found) is list else (found,))
            return flat or MISSING
        else:
            return MISSING
    return value
