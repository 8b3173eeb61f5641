"""The aggregate functions as running accumulators (docs/protocol.md, Aggregated views).

Each group keeps one accumulator per aggregate. A record's value is *prepared* once when it
joins (``prepare``: NULL, a missing field and a value the function cannot use become None and
are ignored, as in SQL), kept by the group table, and handed back to ``remove`` when the record
leaves, so leaving never re-reads the record. Costs per change: constant for SUM, COUNT, AVG and
the standard deviations (running sums), constant for COUNT_DISTINCT (a counter per value),
logarithmic for MIN and MAX (a sorted list). Never a rescan of the group.

Sums are exact (scaled integers, ``Sum``), so adding and then removing a value gives back exactly
what was there (a float running sum would drift) and a result equals the sum computed from
scratch, correctly rounded once.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Callable
from typing import Any, Protocol, TypeAlias

import orjson
from sortedcontainers import SortedList

from ..filters.values import to_number
from ..limits import MAX_INTEGER, MIN_INTEGER
from ..records.paths import MISSING


def _number(value: Any) -> int | float | None:
    """A value as a finite number for SUM, AVG and the deviations (filter-language conversion:
    numeric strings count, booleans are 1 and 0), or None."""
    if value is None or value is MISSING:
        return None
    number = to_number(value)
    if type(number) is float and not math.isfinite(number):
        return None
    return number


def _ordered(value: Any) -> int | float | str | None:
    """A value as MIN and MAX order it: numbers by value, then strings (as filters sort them). A
    number is kept as it is and a text as its string (a numeric string is its number), so a
    prepared value costs nothing beyond the record's own value, and no tuple per record."""
    number = _number(value)
    if number is not None and type(value) is not str:
        return number
    if type(value) is str and value:
        parsed = to_number(value)
        if parsed is not None and (type(parsed) is int or math.isfinite(parsed)):
            return parsed
        return value
    return None


def _distinct(value: Any) -> Any:
    """A value as COUNT_DISTINCT tells values apart: 1 and 1.0 are one value, "1" and true others."""
    if value is None or value is MISSING or value == "":
        return None
    kind = type(value)
    if kind is bool:
        return ("b", value)
    if kind is int or kind is float:
        return ("n", value)  # equal numbers hash alike
    if kind is str:
        return ("s", value)
    return ("j", orjson.dumps(value, option=orjson.OPT_SORT_KEYS))


def _present(value: Any) -> Any:
    return None if value is None or value is MISSING or value == "" else True


def prepare(function: str, value: Any) -> Any:
    """What ``function`` keeps of one record's value (None: ignored)."""
    if function in ("SUM", "AVG", "STDDEV_POP", "STDDEV_SAMP"):
        return _number(value)
    if function in ("MIN", "MAX"):
        return _ordered(value)
    if function == "COUNT_DISTINCT":
        return _distinct(value)
    return _present(value)  # COUNT


SCALE = 1074  # 2**-1074 is the smallest float: scaled by 2**SCALE, every float is an integer


def _scaled(value: int | float) -> int:
    if type(value) is int:
        return value << SCALE
    numerator, denominator = value.as_integer_ratio()  # the denominator is a power of two
    return numerator << (SCALE + 1 - denominator.bit_length())


def _out(value: int) -> int | float:
    """An integer as JSON can carry it: within 64 bits, else the nearest float."""
    return value if MIN_INTEGER <= value <= MAX_INTEGER else float(value)


class Accumulator(Protocol):
    def add(self, value: Any) -> None: ...
    def remove(self, value: Any) -> None: ...
    def replace(self, old: Any, new: Any) -> None: ...  # both not None
    def result(self) -> Any: ...


class Count:
    __slots__ = ("n",)

    def __init__(self) -> None:
        self.n = 0

    def add(self, value: Any) -> None:
        self.n += 1

    def remove(self, value: Any) -> None:
        self.n -= 1

    def replace(self, old: Any, new: Any) -> None:
        pass  # one value for another: the count stays

    def result(self) -> Any:
        return self.n


class Sum:
    """SUM, AVG and the standard deviations: count, exact sum and exact sum of squares.

    Exact in plain integers: integers are summed as they are; every float is scaled by
    2**SCALE, which makes every finite float an integer (the smallest is 2**-1074), so adding
    and removing cost an integer addition, and a result is one correctly rounded integer
    division. One accumulator serves every function of one argument (``of``)."""

    __slots__ = ("floats", "n", "scaled", "squares", "stddev", "total", "which")

    def __init__(self, function: str, stddev: bool = False) -> None:
        self.which = function
        self.stddev = stddev or function.startswith("STDDEV")
        self.n = 0
        self.floats = 0  # how many of the values are floats: with none, a SUM is an integer
        self.total = 0  # the sum of the integers
        self.scaled = 0  # the sum of the floats, scaled
        self.squares = 0  # the sum of squares, scaled twice (only for the deviations)

    def add(self, value: Any) -> None:
        self.n += 1
        if type(value) is int:
            self.total += value
            if self.stddev:
                self.squares += (value * value) << (2 * SCALE)
            return
        scaled = _scaled(value)
        self.floats += 1
        self.scaled += scaled
        if self.stddev:
            self.squares += scaled * scaled

    def remove(self, value: Any) -> None:
        self.n -= 1
        if type(value) is int:
            self.total -= value
            if self.stddev:
                self.squares -= (value * value) << (2 * SCALE)
            return
        scaled = _scaled(value)
        self.floats -= 1
        self.scaled -= scaled
        if self.stddev:
            self.squares -= scaled * scaled

    def replace(self, old: Any, new: Any) -> None:
        kind = type(old)
        if kind is type(new) and not self.stddev:  # the count and the number of floats stay
            if kind is int:
                self.total += new - old
            elif old != new:
                self.scaled += _scaled(new) - _scaled(old)
            return
        if old == new and kind is type(new):
            return  # the same value: the same sums
        self.remove(old)
        self.add(new)

    def result(self) -> Any:
        return self.of(self.which)

    def of(self, which: str) -> Any:
        """The result of function ``which`` (SUM, AVG, STDDEV_POP or STDDEV_SAMP)."""
        n = self.n
        if n == 0:
            return None
        try:
            if which == "SUM":
                if not self.floats:
                    return _out(self.total)
                return ((self.total << SCALE) + self.scaled) / (1 << SCALE)
            if which == "AVG":
                if not self.floats:
                    return self.total / n
                return ((self.total << SCALE) + self.scaled) / (n << SCALE)
            divisor = n if which == "STDDEV_POP" else n - 1
            if divisor == 0:
                return None
            # n * variance * divisor, scaled twice: exact, and never negative.
            total = (self.total << SCALE) + self.scaled
            spread = n * self.squares - total * total
            return math.sqrt(spread / ((n * divisor) << (2 * SCALE)))
        except OverflowError:
            return None


class Distinct:
    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: Counter[Any] = Counter()

    def add(self, value: Any) -> None:
        self.counts[value] += 1

    def remove(self, value: Any) -> None:
        counts = self.counts
        left = counts[value] - 1
        if left:
            counts[value] = left
        else:
            del counts[value]

    def replace(self, old: Any, new: Any) -> None:
        if old != new:
            self.remove(old)
            self.add(new)

    def result(self) -> Any:
        return len(self.counts)


SMALL = 2048  # up to this many values, a plain sorted list: bisect and a short move, in C


Sorted: TypeAlias = Any  # a sorted list, or a SortedList (untyped)


def _insert(values: Sorted, value: Any) -> Sorted:
    """``values`` with ``value`` in its place: the same list, or a SortedList once past SMALL."""
    if isinstance(values, list):
        insort(values, value)
        return values if len(values) <= SMALL else SortedList(values)
    values.add(value)
    return values


def _delete(values: Sorted, value: Any) -> None:
    if isinstance(values, list):
        del values[bisect_left(values, value)]  # an equal value: it is there
    else:
        values.remove(value)


class Extreme:
    """MIN or MAX over the group's values kept in order, numbers and strings apart (numbers order
    before strings; a prepared string is always a text: ``_ordered``): each a plain sorted list
    while it is small (bisect, in C, over plain values), a ``SortedList`` past ``SMALL`` values.
    One serves MIN and MAX of one argument (``of``)."""

    __slots__ = ("least", "numbers", "texts")

    def __init__(self, least: bool) -> None:
        self.least = least
        self.numbers: Sorted = []
        self.texts: Sorted = []

    def add(self, value: Any) -> None:
        if type(value) is str:
            self.texts = _insert(self.texts, value)
        else:
            self.numbers = _insert(self.numbers, value)

    def remove(self, value: Any) -> None:
        _delete(self.texts if type(value) is str else self.numbers, value)

    def replace(self, old: Any, new: Any) -> None:
        if old == new and type(old) is type(new):
            return  # equal values are one value to MIN and MAX
        self.remove(old)
        self.add(new)

    def gather(self, value: Any) -> None:
        """Add ``value`` unsorted (an aggregation's first pass): ``settle`` sorts, once."""
        (self.texts if type(value) is str else self.numbers).append(value)

    def settle(self) -> None:
        """Sort what ``gather`` added: one sort each, not one insertion per value."""
        numbers: list[Any] = list(self.numbers)
        texts: list[Any] = list(self.texts)
        numbers.sort()
        texts.sort()
        self.numbers = numbers if len(numbers) <= SMALL else SortedList(numbers)
        self.texts = texts if len(texts) <= SMALL else SortedList(texts)

    def result(self) -> Any:
        return self.of(self.least)

    def of(self, least: bool) -> Any:
        if least:
            values = self.numbers or self.texts
            return values[0] if values else None
        values = self.texts or self.numbers
        return values[-1] if values else None


# The accumulator each aggregate function keeps, and how it prepares a record's value: the
# functions of one family over one argument share one accumulator (SUM and AVG of /px one sum,
# MIN and MAX of /px one sorted list).
FAMILY = {
    "SUM": "sum",
    "AVG": "sum",
    "STDDEV_POP": "sum",
    "STDDEV_SAMP": "sum",
    "MIN": "extreme",
    "MAX": "extreme",
    "COUNT": "count",
    "COUNT_DISTINCT": "distinct",
}
PREPARE: dict[str, Callable[[Any], Any]] = {
    "sum": _number,
    "extreme": _ordered,
    "count": _present,
    "distinct": _distinct,
}


def accumulator(function: str) -> Accumulator:
    if function in ("COUNT",):
        return Count()
    if function == "COUNT_DISTINCT":
        return Distinct()
    if function in ("MIN", "MAX"):
        return Extreme(function == "MIN")
    return Sum(function)
