"""Value semantics of the filter language (docs/protocol.md, Filters), in three-valued logic.

``None`` is NULL: a missing field, JSON null and the empty string all read as it. A comparison
with NULL is NULL (not true), ``NOT NULL`` is NULL, and a filter matches only when it is TRUE.
Booleans compare as 1 and 0. A string compared with a number is converted when it parses as one;
when it does not, strings sort after all numbers. Arrays: a comparison is true if any element
(or, for two arrays, any pair) satisfies it; arithmetic and functions use the first element.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from .budget import PAIR_UNITS, spend

Truth = bool | None

_NUMERIC = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*")
_INTEGER = re.compile(r"\s*[+-]?\d+\s*")


def parse_number(text: str) -> int | float | None:
    r"""``text`` as a number, or None when it is not one. The patterns' ``\s`` takes characters
    Python's conversions do not strip (U+001C to U+001F): a text they refuse is not a number."""
    try:
        if _INTEGER.fullmatch(text):
            try:
                return int(text)
            except ValueError:  # past Python's 4,300 digits for int(): still a number, as a float
                return float(text)
        if _NUMERIC.fullmatch(text):
            return float(text)
    except ValueError:
        return None
    return None


def to_number(value: Any) -> int | float | None:
    """A scalar as a number for arithmetic, or None; arrays give their first element."""
    if type(value) is list:
        value = value[0] if value else None
    kind = type(value)
    if kind is int or kind is float:
        return value  # type: ignore[no-any-return]
    if kind is bool:
        return int(value)
    if kind is str:
        return parse_number(value)
    return None


def to_text(value: Any) -> str | None:
    """A scalar as text for string functions and LIKE, or None."""
    kind = type(value)
    if kind is str:
        return value or None
    if kind is bool:
        return "true" if value else "false"
    if kind is int or kind is float:
        try:
            return repr(value)
        except ValueError:  # an integer past Python's 4,300 digits (a product of two literals)
            return None
    return None


def first(value: Any) -> Any:
    if type(value) is list:
        return value[0] if value else None
    return None if value == "" else value


def to_truth(value: Any) -> Truth:
    kind = type(value)
    if kind is bool or value is None:
        return value  # type: ignore[no-any-return]
    if kind is int or kind is float:
        return bool(value != 0)
    if kind is list:
        return to_truth(value[0]) if value else None
    if kind is str:
        lowered = value.lower()
        if lowered in ("true", "false"):
            return bool(lowered == "true")
        number = parse_number(value)
        return None if number is None else bool(number != 0)
    return None


def compare_scalars(a: Any, b: Any) -> int | None:
    """-1, 0 or 1, or None when either side is NULL or not comparable."""
    if a is None or b is None:
        return None
    ta, tb = type(a), type(b)
    if ta is bool:
        a, ta = int(a), int
    if tb is bool:
        b, tb = int(b), int
    a_number = ta is int or ta is float
    b_number = tb is int or tb is float
    if a_number and b_number:
        return int(a > b) - int(a < b)
    if ta is str and tb is str:
        if not a or not b:
            return None
        return int(a > b) - int(a < b)
    if a_number and tb is str:
        if not b:
            return None
        converted = parse_number(b)
        return -1 if converted is None else int(a > converted) - int(a < converted)
    if ta is str and b_number:
        if not a:
            return None
        converted = parse_number(a)
        return 1 if converted is None else int(converted > b) - int(converted < b)
    return None


def any_pair(a: Any, b: Any, test: Callable[[Any, Any], Truth]) -> Truth:
    """Apply a scalar test to ``a`` and ``b``, over every element where either is an array
    (every pair tested is charged to the evaluation budget: two long arrays make many)."""
    left = a if type(a) is list else (a,)
    right = b if type(b) is list else (b,)
    if len(left) > 1 or len(right) > 1:
        spend(PAIR_UNITS * len(left) * len(right))
    seen_false = False
    for x in left:
        for y in right:
            outcome = test(x, y)
            if outcome:
                return True
            if outcome is False:
                seen_false = True
    return False if seen_false else None


def make_comparison(op: str) -> Callable[[Any, Any], Truth]:
    accept: Callable[[int], bool] = {
        "=": lambda c: c == 0,
        "!=": lambda c: c != 0,
        "<": lambda c: c < 0,
        "<=": lambda c: c <= 0,
        ">": lambda c: c > 0,
        ">=": lambda c: c >= 0,
    }[op]

    def test(a: Any, b: Any) -> Truth:
        outcome = compare_scalars(a, b)
        return None if outcome is None else accept(outcome)

    return test


def arithmetic(op: str, a: Any, b: Any) -> int | float | None:
    """``a op b``; NULL when either is not a number, and when the result is no finite number:
    past the largest double, or a whole number too large to mix with a double (which raised)."""
    x, y = to_number(a), to_number(b)
    if x is None or y is None:
        return None
    try:
        result = _operate(op, x, y)
    except (OverflowError, ValueError):  # int-to-float overflow; fmod of an infinity
        return None
    if type(result) is float and not math.isfinite(result):
        return None
    return result


def _operate(op: str, x: int | float, y: int | float) -> int | float | None:
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if y == 0:
        return None
    if type(x) is int and type(y) is int:
        quotient = abs(x) // abs(y)
        if op == "/":
            return quotient if (x < 0) == (y < 0) else -quotient
        remainder = abs(x) % abs(y)
        return -remainder if x < 0 else remainder
    if op == "/":
        return x / y
    return math.fmod(x, y)
