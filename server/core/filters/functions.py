"""Functions of the filter language, with AMPS's argument rules: positions are 1-based,
negative positions count from the end, and anything out of range gives NULL."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .regex import compile_regex
from .values import compare_scalars, first, to_number, to_text, to_truth


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


def _text_fn(op: Callable[[str], Any]) -> Callable[[list[Any], EvalContext], Any]:
    def impl(args: list[Any], ctx: EvalContext) -> Any:
        text = to_text(first(args[0]))
        return None if text is None else op(text)

    return impl


def _substr(args: list[Any], ctx: EvalContext) -> Any:
    text = to_text(first(args[0]))
    start = to_number(args[1])
    if text is None or start is None:
        return None
    start = int(start)
    if start < 0:
        start = len(text) + start + 1
    if start < 1 or start > len(text):
        return None
    if len(args) == 2:
        return text[start - 1 :]
    length = to_number(args[2])
    if length is None or length < 0:
        return None
    return text[start - 1 : start - 1 + int(length)]


def _left_right(from_right: bool) -> Callable[[list[Any], EvalContext], Any]:
    def impl(args: list[Any], ctx: EvalContext) -> Any:
        text = to_text(first(args[0]))
        count = to_number(args[1])
        if text is None or count is None or count < 0:
            return None
        count = int(count)
        return (text[len(text) - count :] if count else "") if from_right else text[:count]

    return impl


def _instr(case_insensitive: bool) -> Callable[[list[Any], EvalContext], Any]:
    def impl(args: list[Any], ctx: EvalContext) -> Any:
        text, part = to_text(first(args[0])), to_text(first(args[1]))
        if text is None or part is None:
            return None
        if case_insensitive:
            text, part = text.lower(), part.lower()
        return text.find(part) + 1

    return impl


def _strequal_i(args: list[Any], ctx: EvalContext) -> Any:
    a, b = to_text(first(args[0])), to_text(first(args[1]))
    return None if a is None or b is None else a.lower() == b.lower()


def _concat(args: list[Any], ctx: EvalContext) -> Any:
    parts = [to_text(first(arg)) for arg in args]
    return "".join(part for part in parts if part is not None) or None


def _replace(args: list[Any], ctx: EvalContext) -> Any:
    text, old, new = (to_text(first(arg)) for arg in args)
    if text is None or old is None:
        return None
    return text.replace(old, new or "")


def _regexp_replace(args: list[Any], ctx: EvalContext) -> Any:
    text, pattern, new = (to_text(first(arg)) for arg in args)
    if text is None or pattern is None:
        return None
    try:
        regex = compile_regex(pattern, 1)
    except Exception:
        return None
    return regex.sub(new or "", text)


def _number_fn(op: Callable[[Any], Any]) -> Callable[[list[Any], EvalContext], Any]:
    def impl(args: list[Any], ctx: EvalContext) -> Any:
        number = to_number(args[0])
        return None if number is None else op(number)

    return impl


def _round(args: list[Any], ctx: EvalContext) -> Any:
    number = to_number(args[0])
    digits = to_number(args[1]) if len(args) > 1 else 0
    if number is None or digits is None:
        return None
    scale = 10 ** int(digits)
    rounded = math.floor(abs(number) * scale + 0.5) / scale  # half away from zero, like SQL
    rounded = math.copysign(rounded, number)
    return int(rounded) if isinstance(number, int) or digits <= 0 else rounded


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
    "LENGTH": Function(_text_fn(len), 1, 1),
    "TRIM": Function(_text_fn(str.strip), 1, 1),
    "LTRIM": Function(_text_fn(str.lstrip), 1, 1),
    "RTRIM": Function(_text_fn(str.rstrip), 1, 1),
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
