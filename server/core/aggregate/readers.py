"""What one record contributes to a group (docs/protocol.md, Aggregated views): the readers of a
projection's values, one per input of the group table (groups.py).

An aggregate's argument is a filter-language expression, and the evaluator is what defines its
value. But the common arguments are a bare field (``SUM(/qty)``) or a field and a number
(``SUM(/qty * /px)``, ``SUM(/qty * 2)``), read on every change of every record by every
aggregation over the topic: those take a short way when the values are plain numbers, and the
evaluator otherwise, so the short way only ever answers what the evaluator would
(tests/core/aggregate/test_readers.py checks it against the evaluator).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ..filters import Filter, ast
from ..filters.functions import EvalContext
from ..records.paths import MISSING, get_path
from .functions import PREPARE
from .parse import Field

Reader = Callable[[Any], Any]

# The operators whose result of two plain numbers is the evaluator's (values.arithmetic) with
# nothing but a finiteness check: not / and % (division by zero, integer division rules).
_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {"+": operator.add, "-": operator.sub, "*": operator.mul}
_LARGEST_CONSTANT = 1 << 63  # a larger integer literal may not mix with a double: the evaluator's
_INTERNED = 1 << 16  # grouping strings shared, at most
_ELSEWHERE: Any = object()  # the short way does not apply: ask the evaluator


def plain_reader(f: Field, ctx: EvalContext) -> Reader:
    """A plain field's value: a bare path copied as it is (a missing field stays missing), an
    expression evaluated."""
    steps, argument = f.path, f.argument
    if steps is not None:
        if len(steps) == 1 and isinstance(steps[0], str):
            name = steps[0]
            if f.group_index is not None:
                return _grouping_reader(name)
            return lambda data: data.get(name, MISSING) if type(data) is dict else MISSING
        return lambda data: get_path(data, steps)
    if argument is None:
        return lambda data: None
    evaluate = argument.evaluate
    return lambda data: evaluate(data, ctx)


def _grouping_reader(name: str) -> Reader:
    """A top-level grouping field's value, a string as one object for all the records that hold
    it: a group's records keep one string, not one each (a decoded record's strings are its own)."""
    interned: dict[str, str] = {}

    def read_grouping(data: Any) -> Any:
        value = data.get(name, MISSING) if type(data) is dict else MISSING
        if type(value) is str:
            found = interned.get(value)
            if found is None:
                if len(interned) >= _INTERNED:
                    interned.clear()
                found = interned[value] = value
            return found
        return value

    return read_grouping


def _top_field(node: ast.Node) -> str | None:
    """The field name when ``node`` is a bare top-level field (``/qty``): read directly."""
    if isinstance(node, ast.Field) and len(node.steps) == 1 and isinstance(node.steps[0], str):
        return node.steps[0]
    return None


def _operand(node: ast.Node) -> tuple[str | None, Any] | None:
    """A top-level field (its name) or a plain number (None and the number), or None: neither."""
    name = _top_field(node)
    if name is not None:
        return name, None
    if isinstance(node, ast.Literal):
        value, kind = node.value, type(node.value)
        if kind is float or (kind is int and -_LARGEST_CONSTANT <= value <= _LARGEST_CONSTANT):
            return None, value
    return None


def _arithmetic(tree: ast.Node) -> Reader | None:
    """``/a op /b`` or ``/a op 2`` (either side) as a function of the record: the number, None
    when it is not finite (the evaluator's NULL), or ``_ELSEWHERE`` when an operand is not a
    plain number (a string, a boolean, NULL, missing: the evaluator's conversions decide)."""
    if not isinstance(tree, ast.Arith) or tree.op not in _OPERATORS:
        return None
    left, right = _operand(tree.left), _operand(tree.right)
    if left is None or right is None:
        return None
    operate = _OPERATORS[tree.op]
    (left_name, left_value), (right_name, right_value) = left, right

    def value(data: Any) -> Any:
        if type(data) is not dict:
            return _ELSEWHERE
        x = left_value if left_name is None else data.get(left_name)
        y = right_value if right_name is None else data.get(right_name)
        kind_x, kind_y = type(x), type(y)
        if (kind_x is int or kind_x is float) and (kind_y is int or kind_y is float):
            try:
                result = operate(x, y)
            except OverflowError:
                return _ELSEWHERE
            if type(result) is float and result - result != 0.0:
                return None  # past the largest double (or from an infinity): NULL
            return result
        return _ELSEWHERE

    return value


def aggregate_reader(family: str, argument: Filter, ctx: EvalContext) -> Reader:
    """What one record contributes to an accumulator of ``family``: its argument's value, prepared
    (None: ignored). A bare field is read as the filter would read it (``""`` is NULL), without
    the evaluator; numbers take the short way."""
    prepared = PREPARE[family]
    # A finite number is prepared as itself for SUM, AVG, the deviations, MIN and MAX.
    as_itself = family in {"sum", "extreme"}
    name = _top_field(argument.tree)
    if name is None:
        evaluate = argument.evaluate
        arithmetic = _arithmetic(argument.tree)
        if arithmetic is None:
            return lambda data: prepared(evaluate(data, ctx))

        def read_arithmetic(data: Any) -> Any:
            value = arithmetic(data)
            if value is _ELSEWHERE:
                return prepared(evaluate(data, ctx))
            return value if as_itself or value is None else prepared(value)

        return read_arithmetic

    if as_itself:

        def read_number(data: Any) -> Any:
            value: Any = data.get(name) if type(data) is dict else None
            kind = type(value)
            if kind is int or (kind is float and value - value == 0.0):
                return value
            return prepared(None if value == "" else value)

        return read_number
    if family == "count":

        def read_present(data: Any) -> Any:
            value = data.get(name) if type(data) is dict else None
            return None if value is None or value == "" else True

        return read_present

    def read(data: Any) -> Any:
        value = data.get(name) if type(data) is dict else None
        return prepared(None if value == "" else value)

    return read
