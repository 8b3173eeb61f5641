"""Specialised evaluators for the shapes filters usually have, each with the exact semantics of
the general path in ``values`` (a differential property test holds them to it).

They apply to a top-level field (``/name``), which they read inline: one call less per predicate.
Each returns ``None`` when its shape does not apply; the compiler then uses the general path,
which also handles every value the fast test does not (arrays, NULL, mixed types).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import Any

from .values import Truth, any_pair, parse_number

Evaluator = Callable[[Any, Any], Any]
General = Callable[[Any], Truth]

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _read(record: Any, name: str) -> Any:
    """A top-level field as the general path sees it: missing, null and "" are NULL."""
    value = record.get(name) if type(record) is dict else None
    return None if value == "" else value


def compare_constant(name: str, op: str, constant: Any, general: General) -> Evaluator | None:
    """``/name OP constant`` where the constant is a number or a non-empty string."""
    kind = type(constant)
    apply = _OPERATORS[op]
    if kind is int or kind is float:

        def compare_number(record: Any, ctx: Any) -> Truth:
            value = record.get(name) if type(record) is dict else None
            value_kind = type(value)
            if value_kind is int or value_kind is float:
                return apply(value, constant)
            return general(None if value == "" else value)

        return compare_number
    if kind is str and constant:

        def compare_text(record: Any, ctx: Any) -> Truth:
            value = record.get(name) if type(record) is dict else None
            if type(value) is str and value:
                return apply(value, constant)
            return general(None if value == "" else value)

        return compare_text
    return None


def between_numbers(name: str, low: Any, high: Any, general: General) -> Evaluator | None:
    numbers = (int, float)
    if type(low) not in numbers or type(high) not in numbers:
        return None

    def between(record: Any, ctx: Any) -> Truth:
        value = record.get(name) if type(record) is dict else None
        kind = type(value)
        if kind is int or kind is float:
            return bool(low <= value <= high)
        return general(None if value == "" else value)

    return between


def member_of_literals(name: str, items: list[Any], general: General) -> Evaluator:
    """``/name IN (literals)``: exact hits and certain misses without comparing item by item."""
    texts = frozenset(item for item in items if type(item) is str and item)
    numbers = frozenset(item for item in items if type(item) in (int, float, bool)) | frozenset(
        n for item in items if type(item) is str and (n := parse_number(item)) is not None
    )

    def member(record: Any, ctx: Any) -> Truth:
        value = _read(record, name)
        kind = type(value)
        if kind is str:
            if value in texts:
                return True
            number = parse_number(value)
            if number is None or number not in numbers:
                # Not one of the texts, and no number it could be converted to equals it.
                return False
            return general(value)
        if (kind is int or kind is float or kind is bool) and value in numbers:
            return True
        return general(value)

    return member


_LITERAL_PATTERN = re.compile(r"(\^?)((?:[^\\.^$*+?()\[\]{}|]|\\[\\.^$*+?()\[\]{}|/])*)(\$?)")


def literal_test(pattern: str) -> Callable[[str], bool] | None:
    """The test of a ``LIKE`` pattern that is plain text, optionally anchored, as a string
    method (no regex); None for any other pattern."""
    match = _LITERAL_PATTERN.fullmatch(pattern)
    if match is None:
        return None
    anchored_start, body, anchored_end = match.group(1), match.group(2), match.group(3)
    text = re.sub(r"\\(.)", r"\1", body)
    if anchored_start and anchored_end:
        return text.__eq__
    if anchored_start:
        return operator.methodcaller("startswith", text)
    if anchored_end:
        return operator.methodcaller("endswith", text)

    def contains(value: str) -> bool:
        return text in value

    return contains


def like_literal(name: str, pattern: str) -> Evaluator | None:
    """``LIKE`` with a pattern that is plain text, optionally anchored: string methods, no regex."""
    found = literal_test(pattern)
    if found is None:
        return None
    test = found

    def like_scalar(x: Any, _: Any) -> Truth:
        kind = type(x)
        if kind is str:
            return test(x) if x else None
        if kind is bool:
            return test("true" if x else "false")
        if kind is int or kind is float:
            return test(repr(x))
        return None

    def like(record: Any, ctx: Any) -> Truth:
        value = record.get(name) if type(record) is dict else None
        if type(value) is str and value:
            return test(value)
        return any_pair(None if value == "" else value, None, like_scalar)

    return like
