"""Turns the AST into nested closures once per distinct filter text.

Every closure takes ``(record, ctx)`` and returns a value (``None`` is NULL); boolean nodes
return ``True``, ``False`` or ``None``. A ``Filter`` matches a record only when its closure
returns ``True``. Evaluation never raises: every operator is total over JSON values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..paths import MISSING
from . import ast
from .functions import FUNCTIONS, EvalContext
from .parser import parse
from .regex import compile_regex
from .values import Truth, any_pair, arithmetic, make_comparison, to_number, to_text, to_truth

Evaluator = Callable[[Any, EvalContext], Any]

NO_CONTEXT = EvalContext()


@dataclass(frozen=True, slots=True)
class Filter:
    text: str
    tree: ast.Node
    evaluate: Evaluator

    def matches(self, record: Any, ctx: EvalContext = NO_CONTEXT) -> bool:
        try:
            return to_truth(self.evaluate(record, ctx)) is True
        except Exception:  # pragma: no cover - a defect, but one record must never stop a fan-out
            return False


@lru_cache(maxsize=4096)
def compile_filter(text: str) -> Filter:
    """Compile a filter (cached per text); raises ``FilterError`` with the column of the first error."""
    tree = parse(text)
    return Filter(text, tree, _compile(tree))


def _compile(node: ast.Node) -> Evaluator:
    compiler = _COMPILERS[type(node)]
    return compiler(node)


def _literal(node: ast.Literal) -> Evaluator:
    value = None if node.value == "" else node.value
    return lambda record, ctx: value


def _field(node: ast.Field) -> Evaluator:
    steps = node.steps
    if len(steps) == 1 and isinstance(steps[0], str):
        name = steps[0]

        def read_one(record: Any, ctx: EvalContext) -> Any:
            if type(record) is not dict:
                return None
            value = record.get(name)
            return None if value == "" else value

        return read_one

    def read(record: Any, ctx: EvalContext) -> Any:
        value = _walk(record, steps)
        return None if value is MISSING or value == "" else value

    return read


def _walk(value: Any, steps: tuple[str | int, ...]) -> Any:
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
            # /orders/qty over an array of objects reads every element's qty.
            rest = steps[index:]
            found = [_walk(item, rest) for item in value]
            flat: list[Any] = []
            for item in found:
                if item is MISSING:
                    continue
                flat.extend(item if type(item) is list else (item,))
            return flat or MISSING
        else:
            return MISSING
    return value


def _not(node: ast.Not) -> Evaluator:
    operand = _compile(node.operand)

    def negate(record: Any, ctx: EvalContext) -> Truth:
        truth = to_truth(operand(record, ctx))
        return None if truth is None else not truth

    return negate


def _logical(node: ast.Logical) -> Evaluator:
    items = tuple(_compile(item) for item in node.items)
    stop = node.op == "OR"  # OR stops at the first TRUE, AND at the first FALSE

    def combine(record: Any, ctx: EvalContext) -> Truth:
        unknown = False
        for item in items:
            truth = to_truth(item(record, ctx))
            if truth is None:
                unknown = True
            elif truth is stop:
                return stop
        return None if unknown else not stop

    return combine


def _compare(node: ast.Compare) -> Evaluator:
    left, right = _compile(node.left), _compile(node.right)
    test = make_comparison(node.op)
    if isinstance(node.right, ast.Literal) and not isinstance(node.right.value, list):
        constant = node.right.value

        def compare_constant(record: Any, ctx: EvalContext) -> Truth:
            value = left(record, ctx)
            if type(value) is list:
                return any_pair(value, constant, test)
            return test(value, constant)

        return compare_constant
    return lambda record, ctx: any_pair(left(record, ctx), right(record, ctx), test)


def _between(node: ast.Between) -> Evaluator:
    operand, low, high = _compile(node.operand), _compile(node.low), _compile(node.high)
    at_least, at_most = make_comparison(">="), make_comparison("<=")

    def between(record: Any, ctx: EvalContext) -> Truth:
        value, lo, hi = operand(record, ctx), low(record, ctx), high(record, ctx)

        def inside(x: Any, _: Any) -> Truth:
            above, below = at_least(x, lo), at_most(x, hi)
            if above is False or below is False:
                return False
            return None if above is None or below is None else True

        return any_pair(value, None, inside)

    return between


def _in(node: ast.In) -> Evaluator:
    operand = _compile(node.operand)
    items = tuple(_compile(item) for item in node.items)
    equal = make_comparison("=")

    def member(record: Any, ctx: EvalContext) -> Truth:
        value = operand(record, ctx)
        if value is None:
            return None
        return any(any_pair(value, item(record, ctx), equal) for item in items)

    return member


def _like(node: ast.Like) -> Evaluator:
    operand = _compile(node.operand)
    regex = compile_regex(node.pattern, node.column)

    def like(x: Any, _: Any) -> Truth:
        text = to_text(x)
        return None if text is None else regex.search(text) is not None

    return lambda record, ctx: any_pair(operand(record, ctx), None, like)


def _affix(node: ast.Affix) -> Evaluator:
    operand = _compile(node.operand)
    items = tuple(_compile(item) for item in node.items)
    ends = node.ends

    def affix(record: Any, ctx: EvalContext) -> Truth:
        affixes = tuple(text for item in items if (text := to_text(item(record, ctx))) is not None)

        def test(x: Any, _: Any) -> Truth:
            text = to_text(x)
            if text is None:
                return None
            return text.endswith(affixes) if ends else text.startswith(affixes)

        return any_pair(operand(record, ctx), None, test)

    return affix


def _is_null(node: ast.IsNull) -> Evaluator:
    operand = _compile(node.operand)
    return lambda record, ctx: operand(record, ctx) is None


def _arith(node: ast.Arith) -> Evaluator:
    left, right, op = _compile(node.left), _compile(node.right), node.op
    return lambda record, ctx: arithmetic(op, left(record, ctx), right(record, ctx))


def _negate(node: ast.Negate) -> Evaluator:
    operand = _compile(node.operand)

    def negate(record: Any, ctx: EvalContext) -> Any:
        number = to_number(operand(record, ctx))
        return None if number is None else -number

    return negate


def _call(node: ast.Call) -> Evaluator:
    impl = FUNCTIONS[node.name].impl
    args = tuple(_compile(arg) for arg in node.args)
    return lambda record, ctx: impl([arg(record, ctx) for arg in args], ctx)


_COMPILERS: dict[type[ast.Node], Callable[[Any], Evaluator]] = {
    ast.Literal: _literal,
    ast.Field: _field,
    ast.Not: _not,
    ast.Logical: _logical,
    ast.Compare: _compare,
    ast.Between: _between,
    ast.In: _in,
    ast.Like: _like,
    ast.Affix: _affix,
    ast.IsNull: _is_null,
    ast.Arith: _arith,
    ast.Negate: _negate,
    ast.Call: _call,
}
