"""Functions of the filter language, with AMPS's argument rules: positions are 1-based,
negative positions count from the end, and anything out of range gives NULL.

Their work is bounded twice over (docs/protocol.md, Limits):
- a function that can make text longer than its inputs (CONCAT, REPLACE, REGEXP_REPLACE, UPPER,
  LOWER) gives NULL when its result would be longer than ``max(longest input, MAX_GROWN_TEXT)``
  characters, and knows that before building it: nesting them can never blow up, every
  intermediate text is at most as long as the longest field or 64 KiB;
- every character a function scans or copies is charged to the evaluation budget (budget.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import FilterError
from .budget import spend, text_units
from .cache import COMPILED
from .regex import Regex, compile_regex
from .values import compare_scalars, first, to_number, to_text, to_truth

MAX_GROWN_TEXT = 64 * 1024  # characters a text function may grow its result to, past its inputs
MAX_ROUND_DIGITS = 400  # ROUND's digits are clamped to this: 10 ** 10**9 would take minutes
COMPILE_UNITS = 2_000  # budget units per pattern character, for a pattern compiled while evaluating
TRIM_SET_UNITS = 16  # budget units per character trimmed against a set of characters
TRIM_SET_SCAN = 8  # and one more unit per this many characters of the set


def _no_clock() -> float:
    return 0.0


@dataclass(frozen=True, slots=True)
class EvalContext:
    """What a filter may read besides the record: the time (a clock, read when evaluated) and
    who is asking."""

    clock: Callable[[], float] = _no_clock
    user: str | None = None
    client_name: str | None = None


@dataclass(frozen=True, slots=True)
class Function:
    impl: Callable[[list[Any], EvalContext], Any]
    min_args: int
    max_args: int

    @property
    def arity_text(self) -> str:
        if self.min_args == self.max_args:
            return str(self.min_args)
        if self.max_args > 99:
            return f"at least {self.min_args}"
        return f"{self.min_args} to {self.max_args}"


def _within(result: str, longest: int) -> str | None:
    """``result``, or NULL when it is longer than a function may grow text."""
    return result if len(result) <= max(longest, MAX_GROWN_TEXT) else None


def _text_fn(op: Callable[[str], Any], scans: bool = True) -> Callable[[list[Any], EvalContext], Any]:
    def impl(args: list[Any], ctx: EvalContext) -> Any:
        text = to_text(first(args[0]))
        if text is None:
            return None
        if scans:
            spend(text_units(text))
        result = op(text)
        # UPPER and LOWER can grow text (up to 3 characters for 1): the same cap as any function.
        return _within(result, len(text)) if type(result) is str else result

    return impl


def _trim(strip: Callable[[str, str | None], str]) -> Callable[[list[Any], EvalContext], Any]:
    """TRIM, LTRIM and RTRIM(text[, characters]): whitespace, or any character of the set
    ``characters``, stripped from the ends; a NULL set gives NULL."""

    def impl(args: list[Any], ctx: EvalContext) -> Any:
        text = to_text(first(args[0]))
        if text is None:
            return None
        if len(args) == 1:
            spend(text_units(text))
            return strip(text, None)
        chars = to_text(first(args[1]))
        if chars is None:
            return None
        # str.strip tests each character against the whole set: 4-14 ns a character, plus about
        # 1 ns per 10 characters of the set (measured), so a long set is charged for its length.
        spend(text_units(chars) + len(text) * (TRIM_SET_UNITS + len(chars) // TRIM_SET_SCAN))
        return strip(text, chars)

    return impl


def _finite(value: Any) -> int | float | None:
    """``value`` as a number, NULL when it is none or not finite (a string such as ``'1e400'``
    reads as infinity): no function computes with infinity or NaN."""
    number = to_number(value)
    if type(number) is float and not math.isfinite(number):
        return None
    return number


def _whole(value: Any) -> int | None:
    """A position or a count: a finite number truncated toward zero (``2.9`` is 2), else NULL."""
    number = _finite(value)
    return None if number is None else int(number)


def _substr(args: list[Any], ctx: EvalContext) -> Any:
    """SUBSTR(text, start[, length]): a negative start counts from the end, and one before the
    beginning clamps to it (AMPS: ``SUBSTR("fandango", -99)`` is "fandango"); 0 or a start past
    the end is NULL; a length past the end takes the rest (counted from the clamped start), a
    negative one is NULL."""
    text = to_text(first(args[0]))
    start = _whole(args[1])
    if text is None or start is None:
        return None
    if start < 0:
        start = max(1, start + len(text) + 1)  # -1 is the last character
    if not 1 <= start <= len(text):
        return None
    end = len(text)
    if len(args) == 3:
        length = _whole(args[2])
        if length is None or length < 0:
            return None
        end = min(end, start - 1 + length)
    result = text[start - 1 : end]
    spend(len(result))
    return result


def _left_right(from_right: bool) -> Callable[[list[Any], EvalContext], Any]:
    """LEFT and RIGHT(text, count): a count past the length takes the whole text, a negative
    one is NULL (slicing with ``-count`` made ``RIGHT('abc', 5)`` 'bc')."""

    def impl(args: list[Any], ctx: EvalContext) -> Any:
        text = to_text(first(args[0]))
        count = _whole(args[1])
        if text is None or count is None or count < 0:
            return None
        count = min(count, len(text))
        spend(count)
        return text[len(text) - count :] if from_right else text[:count]

    return impl


def _instr(case_insensitive: bool) -> Callable[[list[Any], EvalContext], Any]:
    def impl(args: list[Any], ctx: EvalContext) -> Any:
        text, part = to_text(first(args[0])), to_text(first(args[1]))
        if text is None or part is None:
            return None
        spend(text_units(text) * (2 if case_insensitive else 1))
        if case_insensitive:
            text, part = text.lower(), part.lower()
        return text.find(part) + 1

    return impl


def _strequal_i(args: list[Any], ctx: EvalContext) -> Any:
    a, b = to_text(first(args[0])), to_text(first(args[1]))
    if a is None or b is None:
        return None
    spend(text_units(a) + text_units(b))
    return a.lower() == b.lower()


def _concat(args: list[Any], ctx: EvalContext) -> Any:
    parts = [part for arg in args if (part := to_text(first(arg))) is not None]
    lengths = [len(part) for part in parts]
    total = sum(lengths)
    if not total or total > max(*lengths, MAX_GROWN_TEXT):
        return None
    spend(total)
    return "".join(parts)


def _replace(args: list[Any], ctx: EvalContext) -> Any:
    text, old, new = (to_text(first(arg)) for arg in args)
    if text is None or old is None:
        return None
    new = new or ""
    spend(text_units(text))
    size = len(text) + text.count(old) * (len(new) - len(old))
    if size > max(len(text), len(old), len(new), MAX_GROWN_TEXT):
        return None
    spend(size)
    return text.replace(old, new)


def _regexp_replace(args: list[Any], ctx: EvalContext) -> Any:
    text, pattern, new = (to_text(first(arg)) for arg in args)
    if text is None or pattern is None:
        return None
    regex = _pattern_of_record(pattern)
    return None if regex is None else _replace_all(regex, text, new or "")


def regexp_replace_with(regex: Regex) -> Callable[[list[Any], EvalContext], Any]:
    """REGEXP_REPLACE whose pattern is a literal of the filter, compiled with it."""

    def impl(args: list[Any], ctx: EvalContext) -> Any:
        text, new = to_text(first(args[0])), to_text(first(args[2]))
        return None if text is None else _replace_all(regex, text, new or "")

    return impl


def _replace_all(regex: Regex, text: str, new: str) -> str | None:
    return regex.replace(text, new, max(len(text), len(new), MAX_GROWN_TEXT))


def _pattern_of_record(pattern: str) -> Regex | None:
    """A pattern that came from a record: compiled now (its cost charged unless it is cached),
    NULL when it is not a valid pattern within the limits."""
    if ("regex", pattern, True) not in COMPILED:
        spend(COMPILE_UNITS * len(pattern))
    try:
        return compile_regex(pattern, 1, captures=True)
    except FilterError:
        return None


def _number_fn(op: Callable[[Any], Any]) -> Callable[[list[Any], EvalContext], Any]:
    def impl(args: list[Any], ctx: EvalContext) -> Any:
        number = _finite(args[0])
        return None if number is None else op(number)

    return impl


def _round(args: list[Any], ctx: EvalContext) -> Any:
    """ROUND(number[, digits]), half away from zero, like SQL; digits are taken within
    -MAX_ROUND_DIGITS to MAX_ROUND_DIGITS."""
    number = _finite(args[0])
    digits = _whole(args[1]) if len(args) > 1 else 0
    if number is None or digits is None:
        return None
    digits = max(-MAX_ROUND_DIGITS, min(MAX_ROUND_DIGITS, digits))
    if type(number) is int:
        return _round_integer(number, digits)
    try:
        scale = 10.0**digits
        rounded = math.copysign(math.floor(abs(number) * scale + 0.5) / scale, number)
    except (OverflowError, ZeroDivisionError):
        # Past what a double holds: so many digits change nothing, so few leave nothing.
        return number if digits > 0 else 0
    if not math.isfinite(rounded):
        return None  # rounded up past the largest double
    return int(rounded) if digits <= 0 else rounded


def _round_integer(number: int, digits: int) -> int:
    """An integer rounded exactly: through a double, 10**400 rounded to the hundreds was 0."""
    if digits >= 0:
        return number
    scale: int = 10**-digits
    whole, rest = divmod(abs(number), scale)
    rounded = (whole + (2 * rest >= scale)) * scale
    return rounded if number >= 0 else -rounded


def _extreme(sign: int) -> Callable[[list[Any], EvalContext], Any]:
    def impl(args: list[Any], ctx: EvalContext) -> Any:
        best: Any = None
        for arg in args:
            value = first(arg)
            if value is None:
                continue
            if best is None or compare_scalars(value, best) == sign:
                best = value
        return best

    return impl


def _coalesce(args: list[Any], ctx: EvalContext) -> Any:
    for arg in args:
        if arg is not None and arg != "":
            return arg
    return None


def _if(args: list[Any], ctx: EvalContext) -> Any:
    return args[1] if to_truth(args[0]) else args[2]


MANY = 1 << 16

FUNCTIONS: dict[str, Function] = {
    "UPPER": Function(_text_fn(str.upper), 1, 1),
    "LOWER": Function(_text_fn(str.lower), 1, 1),
    "LENGTH": Function(_text_fn(len, scans=False), 1, 1),
    "TRIM": Function(_trim(str.strip), 1, 2),
    "LTRIM": Function(_trim(str.lstrip), 1, 2),
    "RTRIM": Function(_trim(str.rstrip), 1, 2),
    "REVERSE": Function(_text_fn(lambda text: text[::-1]), 1, 1),
    "CONCAT": Function(_concat, 1, MANY),
    "INSTR": Function(_instr(False), 2, 2),
    "INSTR_I": Function(_instr(True), 2, 2),
    "STREQUAL_I": Function(_strequal_i, 2, 2),
    "SUBSTR": Function(_substr, 2, 3),
    "LEFT": Function(_left_right(False), 2, 2),
    "RIGHT": Function(_left_right(True), 2, 2),
    "REPLACE": Function(_replace, 3, 3),
    "REGEXP_REPLACE": Function(_regexp_replace, 3, 3),
    "ABS": Function(_number_fn(abs), 1, 1),
    "FLOOR": Function(_number_fn(math.floor), 1, 1),
    "CEILING": Function(_number_fn(math.ceil), 1, 1),
    "ROUND": Function(_round, 1, 2),
    "GREATEST": Function(_extreme(1), 1, MANY),
    "LEAST": Function(_extreme(-1), 1, MANY),
    "COALESCE": Function(_coalesce, 1, MANY),
    "IF": Function(_if, 3, 3),
    "UNIX_TIMESTAMP": Function(lambda args, ctx: ctx.clock(), 0, 0),
    "USER": Function(lambda args, ctx: ctx.user, 0, 0),
    "CLIENT_NAME": Function(lambda args, ctx: ctx.client_name, 0, 0),
}
