"""Turns the AST into nested closures once per distinct filter text.

Every closure takes ``(record, ctx)`` and returns a value (``None`` is NULL); boolean nodes
return ``True``, ``False`` or ``None``. A ``Filter`` matches a record only when its closure
returns ``True``. Evaluation never raises: every operator is total over JSON values, and an
evaluation that would pass its work budget (budget.py) stops and does not match.

Compiled filters are kept in the shared byte-bounded cache (``..cache``), each counted at an
estimate of what its tree and closures hold, plus its regular expressions (cost.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..records.paths import MISSING
from . import ast, fastpaths
from .analysis import IndexTerm, index_term
from .budget import EVALUATION_BUDGET, METER, OverBudget, spend
from .cache import COMPILED
from .cost import estimate, held_bytes, literal_pattern
from .fields import read_field
from .functions import FUNCTIONS, EvalContext, regexp_replace_with
from .parser import parse
from .regex import Regex, compile_regex
from .values import Truth, any_pair, arithmetic, make_comparison, to_number, to_text, to_truth

Evaluator = Callable[[Any, EvalContext], Any]

NO_CONTEXT = EvalContext()


@dataclass(frozen=True, slots=True)
class Filter:
    text: str
    tree: ast.Node
    run: Evaluator  # the compiled closure; it raises OverBudget past the budget (use the methods)
    index_term: IndexTerm | None  # what a record must have to match, for indexing (may be None)
    cost: int  # the work of one evaluation, estimated (cost.py): what a socket's budget counts
    reads_caller: bool = False  # whether it calls USER() or CLIENT_NAME(): its meaning is per caller
    reads_clock: bool = False  # whether it calls UNIX_TIMESTAMP(): its meaning changes with the time

    def matches(self, record: Any, ctx: EvalContext = NO_CONTEXT) -> bool:
        METER.left = EVALUATION_BUDGET  # a fresh budget for each evaluation (inline: hot path)
        try:
            outcome = self.run(record, ctx)
            return outcome is True or (outcome is not False and to_truth(outcome) is True)
        except Exception:  # OverBudget, or a defect: one record must never stop a fan-out
            return False

    def evaluate(self, record: Any, ctx: EvalContext = NO_CONTEXT) -> Any:
        """The filter's value for ``record``: TRUE, FALSE, NULL (None) or any value; NULL when
        the evaluation would pass its work budget."""
        METER.left = EVALUATION_BUDGET
        try:
            return self.run(record, ctx)
        except OverBudget:
            return None


def compile_filter(text: str) -> Filter:
    """Compile a filter (cached per text); raises ``FilterError`` with the column of the first error."""
    key = ("filter", text)
    found: Filter | None = COMPILED.get(key)
    if found is None:
        found = _build(text)
        COMPILED.put(key, found, held_bytes(text, found.tree))
    return found


def _build(text: str) -> Filter:
    tree = parse(text)
    caller, clock = _calls(tree, CALLER_FUNCTIONS), _calls(tree, CLOCK_FUNCTIONS)
    return Filter(text, tree, _compile(tree), index_term(tree), estimate(tree), caller, clock)


CALLER_FUNCTIONS = frozenset({"USER", "CLIENT_NAME"})
CLOCK_FUNCTIONS = frozenset({"UNIX_TIMESTAMP"})


def _calls(node: object, names: frozenset[str]) -> bool:
    """Whether the tree calls one of the functions ``names`` (upper case)."""
    if isinstance(node, ast.Call) and node.name.upper() in names:
        return True
    if isinstance(node, tuple):
        return any(_calls(item, names) for item in node)
    if isinstance(node, ast.Node):
        return any(_calls(getattr(node, name), names) for name in node.__dataclass_fields__)
    return False


_specialise = True


def general_filter(text: str) -> Filter:
    """The same filter compiled without the specialised evaluators of ``fastpaths``: the
    reference semantics that the specialised ones are tested against."""
    global _specialise
    _specialise = False
    try:
        return _build(text)
    finally:
        _specialise = True


def _compile(node: ast.Node) -> Evaluator:
    compiler = _COMPILERS[type(node)]
    return compiler(node)


def _top_level_name(node: ast.Node) -> str | None:
    """The field name when ``node`` is a top-level field (``/name``) and fast paths are on."""
    if (
        _specialise
        and isinstance(node, ast.Field)
        and len(node.steps) == 1
        and isinstance(node.steps[0], str)
    ):
        return node.steps[0]
    return None


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
        value = read_field(record, steps, spend)
        return None if value is MISSING or value == "" else value

    return read


def _not(node: ast.Not) -> Evaluator:
    operand = _condition(node.operand)

    def negate(record: Any, ctx: EvalContext) -> Truth:
        truth = operand(record, ctx)
        return None if truth is None else not truth

    return negate


_TRUTH_NODES = (ast.Not, ast.Logical, ast.Compare, ast.Between, ast.In, ast.Like, ast.Affix, ast.IsNull)


def _condition(node: ast.Node) -> Evaluator:
    """``node`` compiled to return TRUE, FALSE or NULL, whatever kind of value it has."""
    evaluate = _compile(node)
    if isinstance(node, _TRUTH_NODES):
        return evaluate
    return lambda record, ctx: to_truth(evaluate(record, ctx))


def _logical(node: ast.Logical) -> Evaluator:
    items = tuple(_condition(item) for item in node.items)
    stop = node.op == "OR"  # OR stops at the first TRUE, AND at the first FALSE

    def combine(record: Any, ctx: EvalContext) -> Truth:
        unknown = False
        for item in items:
            truth: Truth = item(record, ctx)
            if truth is stop:
                return stop
            if truth is None:
                unknown = True
        return None if unknown else not stop

    return combine


def _compare(node: ast.Compare) -> Evaluator:
    left, right = _compile(node.left), _compile(node.right)
    test = make_comparison(node.op)
    if isinstance(node.right, ast.Literal) and not isinstance(node.right.value, list):
        constant = None if node.right.value == "" else node.right.value

        def general(value: Any) -> Truth:
            if type(value) is list:
                return any_pair(value, constant, test)
            return test(value, constant)

        name = _top_level_name(node.left)
        fast = fastpaths.compare_constant(name, node.op, constant, general) if name else None
        return fast or (lambda record, ctx: general(left(record, ctx)))
    return lambda record, ctx: any_pair(left(record, ctx), right(record, ctx), test)


def _between(node: ast.Between) -> Evaluator:
    operand, low, high = _compile(node.operand), _compile(node.low), _compile(node.high)
    at_least, at_most = make_comparison(">="), make_comparison("<=")

    def within(value: Any, lo: Any, hi: Any) -> Truth:
        def inside(x: Any, _: Any) -> Truth:
            above, below = at_least(x, lo), at_most(x, hi)
            if above is False or below is False:
                return False
            return None if above is None or below is None else True

        return any_pair(value, None, inside)

    name = _top_level_name(node.operand)
    if name and isinstance(node.low, ast.Literal) and isinstance(node.high, ast.Literal):
        lo, hi = node.low.value, node.high.value
        fast = fastpaths.between_numbers(name, lo, hi, lambda value: within(value, lo, hi))
        if fast is not None:
            return fast
    return lambda record, ctx: within(operand(record, ctx), low(record, ctx), high(record, ctx))


def _in(node: ast.In) -> Evaluator:
    operand = _compile(node.operand)
    items = tuple(_compile(item) for item in node.items)
    equal = make_comparison("=")

    def member_of(value: Any, record: Any, ctx: EvalContext) -> Truth:
        if value is None:
            return None
        return any(any_pair(value, item(record, ctx), equal) for item in items)

    name = _top_level_name(node.operand)
    if name and all(isinstance(item, ast.Literal) for item in node.items):
        literals = [item.value for item in node.items if isinstance(item, ast.Literal)]
        return fastpaths.member_of_literals(name, literals, lambda value: member_of(value, None, NO_CONTEXT))
    return lambda record, ctx: member_of(operand(record, ctx), record, ctx)


def _like(node: ast.Like) -> Evaluator:
    operand = _compile(node.operand)
    name = _top_level_name(node.operand)
    fast = fastpaths.like_literal(name, node.pattern) if name else None
    if fast is not None:
        return fast
    # Plain text is matched with string methods on every path, so that the general evaluator
    # agrees with the specialised one whatever the text's size (no regex, nothing to charge).
    test = fastpaths.literal_test(node.pattern) or compile_regex(node.pattern, node.column).search

    def like(x: Any, _: Any) -> Truth:
        text = to_text(x)
        return None if text is None else test(text)

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
    pattern = literal_pattern(node)
    if pattern is not None:
        # A literal pattern is checked now: an invalid or too complex one is a bad filter.
        regex: Regex = compile_regex(pattern.value, pattern.column, captures=True)
        impl = regexp_replace_with(regex)
    args = tuple(_compile(arg) for arg in node.args)

    def call(record: Any, ctx: EvalContext) -> Any:
        result = impl([arg(record, ctx) for arg in args], ctx)
        return None if result == "" else result  # an empty string is NULL wherever it comes from

    return call


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
